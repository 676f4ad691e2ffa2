package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
)

// The KIP-848 consumer protocol (group.protocol=consumer) with real
// clients: the Java 4.1 consumer (e2e/java/src/GroupMember.java) and
// franz-go's next-gen group consumer.

// withConsumerHeartbeat shortens the heartbeat interval the coordinator
// hands out, so reconciliation steps (one heartbeat each) take
// milliseconds rather than Kafka's 5 s.
func withConsumerHeartbeat(d time.Duration) gwOption {
	return func(h *handlers.Config, _ *loop.Config) { h.Groups.ConsumerHeartbeatInterval = d }
}

// withConsumerSession sets the consumer protocol's session timeout.
func withConsumerSession(d time.Duration) gwOption {
	return func(h *handlers.Config, _ *loop.Config) { h.Groups.ConsumerSessionTimeout = d }
}

// produceTagged writes n records to every partition of topic, valued
// "<tag>-p<partition>-<i>", so records of different batches differ.
func produceTagged(t testing.TB, addr, topic, tag string, parts int32, n int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var recs []*kgo.Record
	var vals []string
	for p := range parts {
		for i := range n {
			v := fmt.Sprintf("%s-p%d-%d", tag, p, i)
			vals = append(vals, v)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return vals
}

// javaMember is one GroupMember process.
type javaMember struct {
	name string
	p    *javaProc
}

// owned is the member's latest OWNED line, or nil before it printed one.
func (m *javaMember) owned() []int {
	out := m.p.out.String()
	i := strings.LastIndex(out, "OWNED ")
	if i < 0 {
		return nil
	}
	line := out[i+len("OWNED "):]
	line = line[:strings.IndexByte(line, '\n')+1]
	var ps []int
	for _, f := range strings.Split(strings.TrimSpace(line), ",") {
		if f == "" {
			continue
		}
		n, _ := strconv.Atoi(f)
		ps = append(ps, n)
	}
	return ps
}

// ownedHistory is every OWNED set the member printed, in order.
func (m *javaMember) ownedHistory() [][]int {
	var out [][]int
	for _, line := range strings.Split(m.p.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "OWNED "); ok {
			var ps []int
			for _, f := range strings.Split(rest, ",") {
				if n, err := strconv.Atoi(f); err == nil {
					ps = append(ps, n)
				}
			}
			out = append(out, ps)
		}
	}
	return out
}

// records is every value the member printed a REC line for.
func (m *javaMember) records() []string {
	var out []string
	for _, line := range strings.Split(m.p.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "REC "); ok {
			if f := strings.Fields(rest); len(f) == 3 {
				out = append(out, f[2])
			}
		}
	}
	return out
}

// Java 4.1 consumers with group.protocol=consumer on 12 partitions: three
// members share them 4/4/4; one stops (its partitions go to the others)
// and comes back; a fourth joins (3 each); a static member restarted
// within its session gets exactly its partitions back; every record is
// consumed exactly once over all of it (each member commits after every
// poll, and the coordinator hands a partition on only after its owner
// released it). kafka-consumer-groups describes the group.
func TestConsumerProtocolJava(t *testing.T) {
	needJava(t)
	src, err := filepath.Abs("java/src/GroupMember.java")
	if err != nil {
		t.Fatal(err)
	}
	// A 25 s session: the static member's restart fits in it, and its
	// place is freed soon after the last stop below.
	gw := startGateway(t, withConsumerHeartbeat(300*time.Millisecond), withConsumerSession(25*time.Second))
	const topic, group = "kip848-java", "kip848-java-grp"
	createTopic(t, newClient(t, gw.Addr), topic, 12)
	var want []string
	want = append(want, produceTagged(t, gw.Addr, topic, "a", 12, 20)...)

	var all []*javaMember // every process started, for the record count
	start := func(name, instance string) *javaMember {
		m := &javaMember{name: name, p: javaStart(t, name, src, gw.Addr, group, topic, instance, "client.id="+name)}
		all = append(all, m)
		return m
	}
	// spread waits until the members own disjoint sets of the given sizes
	// covering all 12 partitions.
	spread := func(sizes []int, ms ...*javaMember) {
		t.Helper()
		checkFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
			seen := map[int]string{}
			var got []int
			for _, m := range ms {
				o := m.owned()
				got = append(got, len(o))
				for _, p := range o {
					if who, dup := seen[p]; dup {
						return fmt.Errorf("partition %d owned by %s and %s", p, who, m.name)
					}
					seen[p] = m.name
				}
			}
			if !slices.Equal(got, sizes) || len(seen) != 12 {
				return fmt.Errorf("owned counts %v, want %v", got, sizes)
			}
			return nil
		})
	}
	consumed := func() {
		t.Helper()
		checkFor(t, 2*time.Minute, 300*time.Millisecond, func() error {
			n := map[string]int{}
			for _, m := range all {
				for _, v := range m.records() {
					n[v]++
				}
			}
			for _, v := range want {
				if n[v] == 0 {
					return fmt.Errorf("record %s not consumed (%d of %d)", v, len(n), len(want))
				}
			}
			return nil
		})
	}

	m1, m2, m3 := start("m1", "-"), start("m2", "-"), start("m3", "inst-3")
	spread([]int{4, 4, 4}, m1, m2, m3)
	consumed()

	tool := func(args ...string) string {
		out, errOut, err := javaRun(t, 2*time.Minute, "", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			append([]string{"--bootstrap-server", gw.Addr}, args...)...)
		if err != nil {
			t.Fatalf("kafka-consumer-groups %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
		}
		return out
	}
	// The committed offsets of a live consumer group, with lag 0.
	checkFor(t, time.Minute, time.Second, func() error {
		out := tool("--describe", "--group", group)
		for p := range 12 {
			if !describeRow(out, topic, strconv.Itoa(p), "20", "20", "0") {
				return fmt.Errorf("--describe lacks partition %d at 20/20:\n%s", p, out)
			}
		}
		return nil
	})
	if out := tool("--describe", "--group", group, "--members"); !strings.Contains(out, "m1") || !strings.Contains(out, "m3") {
		t.Fatalf("--describe --members:\n%s", out)
	}
	if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Stable") {
		t.Fatalf("--describe --state:\n%s", out)
	}
	if out := tool("--list", "--type", "consumer"); !strings.Contains(out, group) {
		t.Fatalf("--list --type consumer:\n%s", out)
	}

	// m2 stops: m1 and m3 take its partitions.
	m2.p.stop(t, time.Minute)
	spread([]int{6, 6}, m1, m3)
	want = append(want, produceTagged(t, gw.Addr, topic, "b", 12, 10)...)
	consumed()

	// m2 comes back, then a fourth member joins.
	m2 = start("m2-again", "-")
	spread([]int{4, 4, 4}, m1, m2, m3)
	m4 := start("m4", "-")
	spread([]int{3, 3, 3, 3}, m1, m2, m3, m4)
	want = append(want, produceTagged(t, gw.Addr, topic, "c", 12, 10)...)
	consumed()

	// The static member restarts within its session: its partitions wait
	// for it and come back to it, nobody else owns them in between.
	mine := m3.owned()
	seenBefore := map[*javaMember]int{m1: len(m1.ownedHistory()), m2: len(m2.ownedHistory()), m4: len(m4.ownedHistory())}
	m3.p.stop(t, time.Minute)
	want = append(want, produceTagged(t, gw.Addr, topic, "d", 12, 10)...)
	m3 = start("m3-again", "inst-3")
	checkFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
		if got := m3.owned(); !slices.Equal(got, mine) {
			return fmt.Errorf("restarted static member owns %v, had %v", got, mine)
		}
		return nil
	})
	for m, n := range seenBefore {
		for _, o := range m.ownedHistory()[n:] {
			for _, p := range o {
				if slices.Contains(mine, p) {
					t.Fatalf("%s took partition %d of the absent static member", m.name, p)
				}
			}
		}
	}
	consumed()

	for _, m := range []*javaMember{m1, m2, m3, m4} {
		m.p.stop(t, time.Minute)
	}
	n := map[string]int{}
	for _, m := range all {
		if strings.Contains(m.p.out.String(), "COMMIT-FAILED") || strings.Contains(m.p.out.String(), "LOST") {
			t.Errorf("%s:\n%s", m.name, tail(m.p.out.String(), 20))
		}
		for _, v := range m.records() {
			n[v]++
		}
	}
	for _, v := range want {
		if n[v] != 1 {
			t.Errorf("record %s consumed %d times", v, n[v])
		}
	}
	if len(n) != len(want) {
		t.Errorf("%d distinct records consumed, %d produced", len(n), len(want))
	}

	// The static member's place is kept until its session ends (as on
	// Kafka); then the group is Empty: offsets reset, group deleted.
	checkFor(t, time.Minute, time.Second, func() error {
		if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Empty") {
			return fmt.Errorf("--describe --state after every member stopped:\n%s", out)
		}
		return nil
	})
	if out := tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"); !strings.Contains(out, topic) {
		t.Fatalf("--reset-offsets:\n%s", out)
	}
	if out := tool("--describe", "--group", group); !describeRow(out, topic, "0", "0", "50", "50") {
		t.Fatalf("--describe after the reset:\n%s", out)
	}
	if out := tool("--delete", "--group", group); !strings.Contains(out, "deleted") && !strings.Contains(out, "Deletion") {
		t.Fatalf("--delete:\n%s", out)
	}
	if out := tool("--list"); strings.Contains(out, group) {
		t.Fatalf("--list after --delete:\n%s", out)
	}
}

// kgoMember is a franz-go group member that records what it consumed.
type kgoMember struct {
	cl     *kgo.Client
	mu     sync.Mutex
	got    map[string]int
	cancel context.CancelFunc
	done   chan struct{}
}

func startKgoMember(t *testing.T, addr string, opts ...kgo.Opt) *kgoMember {
	t.Helper()
	m := &kgoMember{got: map[string]int{}, done: make(chan struct{})}
	m.cl = newClient(t, addr, append([]kgo.Opt{kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			m.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { m.got[string(r.Value)]++ })
			m.mu.Unlock()
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *kgoMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close() // commits and leaves
}

// franz-go's KIP-848 consumer (kgo.ServerSideBalancer, franz-go v1.22.3,
// ConsumerGroupHeartbeat v1): three members share 12 partitions 4/4/4 as
// ConsumerGroupDescribe shows; one leaves and the others take its share;
// CreatePartitions reaches the assignment without a rejoin; every record
// is consumed (at least once: franz-go autocommits). A regex
// subscription (SubscribedTopicRegex) picks up a matching topic created
// while the member runs, without a rejoin.
func TestConsumerProtocolFranzGo(t *testing.T) {
	gw := startGateway(t, withConsumerHeartbeat(300*time.Millisecond))
	const topic, group = "kip848-kgo", "kip848-kgo-grp"
	admin := newClient(t, gw.Addr)
	createTopic(t, admin, topic, 12)
	want := produceTagged(t, gw.Addr, topic, "a", 12, 20)
	opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic)}
	ms := []*kgoMember{startKgoMember(t, gw.Addr, opts...), startKgoMember(t, gw.Addr, opts...), startKgoMember(t, gw.Addr, opts...)}
	consumedAll := func(ms []*kgoMember, want []string) func() error {
		return func() error {
			n := map[string]int{}
			for _, m := range ms {
				m.mu.Lock()
				for v, c := range m.got {
					n[v] += c
				}
				m.mu.Unlock()
			}
			for _, v := range want {
				if n[v] == 0 {
					return fmt.Errorf("record %s not consumed", v)
				}
			}
			return nil
		}
	}
	describe := func() (*kmsg.ConsumerGroupDescribeResponseGroup, error) {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			return nil, err
		}
		return &resp.Groups[0], nil
	}
	spread := func(sizes []int) func() error {
		return func() error {
			g, err := describe()
			if err != nil {
				return err
			}
			var got []int
			for _, m := range g.Members {
				n := 0
				for _, tp := range m.Assignment.TopicPartitions {
					n += len(tp.Partitions)
				}
				got = append(got, n)
			}
			slices.Sort(got)
			if g.State != "Stable" || !slices.Equal(got, sizes) {
				return fmt.Errorf("group %s, member partitions %v, want %v", g.State, got, sizes)
			}
			return nil
		}
	}
	checkFor(t, time.Minute, 200*time.Millisecond, spread([]int{4, 4, 4}))
	checkFor(t, time.Minute, 200*time.Millisecond, consumedAll(ms, want))

	ms[1].stop()
	checkFor(t, time.Minute, 200*time.Millisecond, spread([]int{6, 6}))
	more := produceTagged(t, gw.Addr, topic, "b", 12, 10)
	checkFor(t, time.Minute, 200*time.Millisecond, consumedAll([]*kgoMember{ms[0], ms[2]}, more))

	// CreatePartitions reaches the assignment without a rejoin: 16
	// partitions, 8 each, and records on the new ones are consumed.
	if rs, err := kadm.NewClient(admin).CreatePartitions(adminCtx(t), 4, topic); err != nil || rs[topic].Err != nil {
		t.Fatalf("CreatePartitions: %v %+v", err, rs)
	}
	checkFor(t, time.Minute, 200*time.Millisecond, spread([]int{8, 8}))
	grown := produceTagged(t, gw.Addr, topic, "c", 16, 5)
	checkFor(t, time.Minute, 200*time.Millisecond, consumedAll([]*kgoMember{ms[0], ms[2]}, grown))

	// Regex: a topic created later that matches is assigned without a rejoin.
	createTopic(t, admin, "kip848-rx-1", 2)
	rx := startKgoMember(t, gw.Addr, kgo.ConsumerGroup("kip848-rx-grp"), kgo.ConsumeRegex(), kgo.ConsumeTopics("^kip848-rx-.*"),
		kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	first := produceTagged(t, gw.Addr, "kip848-rx-1", "rx1", 2, 5)
	checkFor(t, time.Minute, 200*time.Millisecond, consumedAll([]*kgoMember{rx}, first))
	createTopic(t, admin, "kip848-rx-2", 3)
	second := produceTagged(t, gw.Addr, "kip848-rx-2", "rx2", 3, 5)
	checkFor(t, time.Minute, 200*time.Millisecond, consumedAll([]*kgoMember{rx}, second))
}

// Online migration (Kafka 4's BIDIRECTIONAL policy): a classic group of
// two Java consumers is restarted one member at a time with
// group.protocol=consumer. The first consumer-protocol member upgrades the
// live group (the remaining classic member keeps consuming as a classic
// member of a consumer group), the second replaces the last classic one;
// then one classic member comes back and the consumer-protocol members
// stop, which downgrades the group to classic again. Committed offsets carry
// over every step, partitions never have two owners, and every record is
// consumed exactly once (members commit after each poll).
func TestConsumerProtocolJavaOnlineMigration(t *testing.T) {
	needJava(t)
	src, err := filepath.Abs("java/src/GroupMember.java")
	if err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, withConsumerHeartbeat(300*time.Millisecond))
	const topic, group = "kip848-migrate", "kip848-migrate-grp"
	createTopic(t, newClient(t, gw.Addr), topic, 6)
	var all []*javaMember
	start := func(name string, extra ...string) *javaMember {
		args := append([]string{gw.Addr, group, topic, "-", "client.id=" + name}, extra...)
		m := &javaMember{name: name, p: javaStart(t, name, src, args...)}
		all = append(all, m)
		return m
	}
	var want []string
	consumed := func() {
		t.Helper()
		checkFor(t, 2*time.Minute, 300*time.Millisecond, func() error {
			n := map[string]int{}
			for _, m := range all {
				for _, v := range m.records() {
					n[v]++
				}
			}
			for _, v := range want {
				if n[v] == 0 {
					return fmt.Errorf("record %s not consumed", v)
				}
			}
			return nil
		})
	}
	// covered waits until the members own the 6 partitions between them,
	// each some, none twice.
	covered := func(ms ...*javaMember) {
		t.Helper()
		checkFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
			seen := map[int]string{}
			for _, m := range ms {
				o := m.owned()
				if len(o) == 0 {
					return fmt.Errorf("%s owns nothing", m.name)
				}
				for _, p := range o {
					if who, dup := seen[p]; dup {
						return fmt.Errorf("partition %d owned by %s and %s", p, who, m.name)
					}
					seen[p] = m.name
				}
			}
			if len(seen) != 6 {
				return fmt.Errorf("%d of 6 partitions owned", len(seen))
			}
			return nil
		})
	}
	classic := "group.protocol=classic"
	admin := newClient(t, gw.Addr)
	// groupType is the group's GroupType in ListGroups v5 and, for a
	// consumer group, its member types (0 classic, 1 consumer).
	groupType := func() (string, []int8) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		lr, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		gt := ""
		for _, g := range lr.Groups {
			if g.Group == group {
				gt = g.GroupType
			}
		}
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		dr, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		var types []int8
		for _, m := range dr.Groups[0].Members {
			types = append(types, m.MemberType)
		}
		slices.Sort(types)
		return gt, types
	}

	want = append(want, produceTagged(t, gw.Addr, topic, "a", 6, 10)...)
	c1, c2 := start("c1", classic), start("c2", classic)
	covered(c1, c2)
	consumed()

	// c1 comes back speaking the consumer protocol: the live group is
	// upgraded, c2 stays a classic member of it.
	c1.p.stop(t, time.Minute)
	n1 := start("n1")
	covered(n1, c2)
	if gt, types := groupType(); gt != "consumer" || !slices.Equal(types, []int8{0, 1}) {
		t.Fatalf("after the upgrade: group type %q, member types %v", gt, types)
	}
	want = append(want, produceTagged(t, gw.Addr, topic, "b", 6, 10)...)
	consumed()

	// c2 too: only consumer-protocol members left.
	c2.p.stop(t, time.Minute)
	n2 := start("n2")
	covered(n1, n2)
	want = append(want, produceTagged(t, gw.Addr, topic, "c", 6, 10)...)
	consumed()

	// And back: a classic member joins the consumer group, then the
	// consumer-protocol members stop, which makes the group classic again.
	c3 := start("c3", classic)
	covered(n1, n2, c3)
	n1.p.stop(t, time.Minute)
	n2.p.stop(t, time.Minute)
	covered(c3)
	if gt, _ := groupType(); gt != "classic" {
		t.Fatalf("after the consumer-protocol members left: group type %q", gt)
	}
	want = append(want, produceTagged(t, gw.Addr, topic, "d", 6, 10)...)
	consumed()
	c3.p.stop(t, time.Minute)

	n := map[string]int{}
	for _, m := range all {
		for _, v := range m.records() {
			n[v]++
		}
	}
	for _, v := range want {
		if n[v] != 1 {
			t.Errorf("record %s consumed %d times", v, n[v])
		}
	}
}
