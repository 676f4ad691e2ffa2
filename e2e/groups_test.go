package e2e

// Consumer groups (the classic protocol) with real clients: franz-go group
// consumers (range and cooperative-sticky) committing and resuming, also
// across a restart of the gateway binary; two `kcat -G` consumers splitting
// partitions; the Java console consumer committing and resuming; and
// Kafka's kafka-consumer-groups tool (docs/CONSUMER_GROUPS.md).

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceParts writes n records to each of parts partitions of topic,
// values "p<partition>-<i>".
func produceParts(t testing.TB, addr, topic string, parts int32, n int) {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
}

// groupConsume runs a franz-go group member of group on topic until it has
// seen want records (or the timeout), then commits the offsets in commit
// (partition -> next offset) if any, and leaves. It returns the first
// offset it saw per partition and the number of records.
func groupConsume(t *testing.T, addr, group, topic string, balancer kgo.GroupBalancer, want int, commit map[int32]int64) (map[int32]int64, int) {
	t.Helper()
	cl := newClient(t, addr,
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.Balancers(balancer),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	first := map[int32]int64{}
	n := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s: %d of %d records before the timeout", group, n, want)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
			n++
		})
	}
	if len(commit) > 0 {
		offs := map[string]map[int32]kgo.EpochOffset{topic: {}}
		for p, o := range commit {
			offs[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		var cerr error
		cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							cerr = fmt.Errorf("partition %d: code %d", rp.Partition, rp.ErrorCode)
						}
					}
				}
			}
		})
		if cerr != nil {
			t.Fatalf("commit: %v", cerr)
		}
	}
	cl.Close() // leaves the group
	return first, n
}

func TestGroupsFranzGoCommitResume(t *testing.T) {
	gw := startGateway(t)
	for _, bal := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
		t.Run(bal.name, func(t *testing.T) {
			topic, group := "g-kgo-"+bal.name, "grp-kgo-"+bal.name
			cl := newClient(t, gw.Addr)
			createTopic(t, cl, topic, 3)
			produceParts(t, gw.Addr, topic, 3, 10)
			first, n := groupConsume(t, gw.Addr, group, topic, bal.b, 30, map[int32]int64{0: 4, 1: 5, 2: 6})
			if n != 30 || first[0] != 0 || first[1] != 0 || first[2] != 0 {
				t.Fatalf("first run: %d records, first offsets %v", n, first)
			}
			first, n = groupConsume(t, gw.Addr, group, topic, bal.b, 30-15, nil)
			if first[0] != 4 || first[1] != 5 || first[2] != 6 {
				t.Fatalf("resumed at %v, want 4/5/6 (%d records)", first, n)
			}
		})
	}
}

// Two franz-go members of one group split the partitions between them.
func TestGroupsFranzGoSplit(t *testing.T) {
	gw := startGateway(t)
	const topic, group = "g-split", "grp-split"
	createTopic(t, newClient(t, gw.Addr), topic, 4)
	var mu sync.Mutex
	assigned := map[string][]int32{}
	member := func(name string) *kgo.Client {
		return newClient(t, gw.Addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.RangeBalancer()), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				assigned[name] = append([]int32(nil), m[topic]...)
				mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				assigned[name] = nil
				mu.Unlock()
			}))
	}
	poll := func(ctx context.Context, cl *kgo.Client) {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := member("a"), member("b")
	go poll(ctx, a)
	go poll(ctx, b)
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(assigned["a"]) != 2 || len(assigned["b"]) != 2 {
			return fmt.Errorf("assignments %v", assigned)
		}
		all := append(append([]int32(nil), assigned["a"]...), assigned["b"]...)
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		if fmt.Sprint(all) != "[0 1 2 3]" {
			return fmt.Errorf("assignments %v", assigned)
		}
		return nil
	})
}

// Committed offsets survive a restart of the gateway binary; membership
// does not, and the member rejoins.
func TestGroupsFranzGoAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	p := spawnGateway(t, dir, "--auto-create-topics=true")
	const topic, group = "g-restart", "grp-restart"
	createTopic(t, newClient(t, p.Addr), topic, 2)
	produceParts(t, p.Addr, topic, 2, 10)
	groupConsume(t, p.Addr, group, topic, kgo.CooperativeStickyBalancer(), 20, map[int32]int64{0: 3, 1: 7})
	p.Stop()
	p = spawnGateway(t, dir, "--auto-create-topics=true")
	first, _ := groupConsume(t, p.Addr, group, topic, kgo.CooperativeStickyBalancer(), 10, nil)
	if first[0] != 3 || first[1] != 7 {
		t.Fatalf("after restart resumed at %v, want 3/7", first)
	}
}

// kcatMember is a `kcat -G` consumer printing "<partition> <offset>" lines.
type kcatMember struct {
	cmd *exec.Cmd
	out *syncBuffer
	err *syncBuffer
}

func startKcatMember(t *testing.T, kcat, addr, group, topic string) *kcatMember {
	t.Helper()
	m := &kcatMember{out: &syncBuffer{}, err: &syncBuffer{}}
	m.cmd = exec.Command(kcat, "-b", addr, "-G", group, "-q", "-u", "-f", "%p %o\n",
		"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000",
		"-X", "heartbeat.interval.ms=500", "-X", "topic.metadata.refresh.interval.ms=2000", topic)
	m.cmd.Env = childEnv()
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.err
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("kcat stderr:\n%s", tail(m.err.String(), 50))
		}
	})
	return m
}

// stop ends kcat as Ctrl-C does: it leaves the group.
func (m *kcatMember) stop() {
	if m.cmd.ProcessState != nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-done
	}
}

// partitionsSince returns the partitions of the lines printed after the
// first skip lines, and the number of lines.
func (m *kcatMember) partitionsSince(skip int) (map[int32]bool, int) {
	lines := strings.Split(strings.TrimSuffix(m.out.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	ps := map[int32]bool{}
	for i := skip; i < len(lines); i++ {
		f := strings.Fields(lines[i])
		if len(f) != 2 {
			continue
		}
		p, _ := strconv.Atoi(f[0])
		ps[int32(p)] = true
	}
	return ps, len(lines)
}

func TestGroupsKcatSplit(t *testing.T) {
	kcat := needKcat(t)
	gw := startGateway(t)
	const topic, group, parts = "g-kcat", "grp-kcat", 4
	createTopic(t, newClient(t, gw.Addr), topic, parts)
	produceParts(t, gw.Addr, topic, parts, 5)

	a := startKcatMember(t, kcat, gw.Addr, group, topic)
	b := startKcatMember(t, kcat, gw.Addr, group, topic)
	split := func(skipA, skipB int) error {
		pa, _ := a.partitionsSince(skipA)
		pb, _ := b.partitionsSince(skipB)
		if len(pa) == 0 || len(pb) == 0 || len(pa)+len(pb) != parts {
			return fmt.Errorf("a read %v, b read %v", pa, pb)
		}
		for p := range pa {
			if pb[p] {
				return fmt.Errorf("both read partition %d: a %v b %v", p, pa, pb)
			}
		}
		return nil
	}
	checkFor(t, 60*time.Second, 200*time.Millisecond, func() error { return split(0, 0) })

	// b stops: a takes every partition.
	b.stop()
	_, skipA := a.partitionsSince(0)
	produceParts(t, gw.Addr, topic, parts, 3)
	checkFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		pa, _ := a.partitionsSince(skipA)
		if len(pa) != parts {
			return fmt.Errorf("a alone read %v", pa)
		}
		return nil
	})

	// b comes back: they split again.
	b = startKcatMember(t, kcat, gw.Addr, group, topic)
	checkFor(t, 60*time.Second, 500*time.Millisecond, func() error {
		// Wait until the group is Stable with two members before the
		// next round of records.
		d, err := gw.describeMembers(group)
		if err != nil || d != 2 {
			return fmt.Errorf("members %d, %v", d, err)
		}
		return nil
	})
	_, skipA = a.partitionsSince(0)
	_, skipB := b.partitionsSince(0)
	produceParts(t, gw.Addr, topic, parts, 3)
	checkFor(t, 60*time.Second, 200*time.Millisecond, func() error { return split(skipA, skipB) })
}

// describeMembers counts the members of a Stable group, straight from the
// coordinator (0 when not Stable).
func (gw *gateway) describeMembers(group string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].State != "Stable" {
		return 0, nil
	}
	return len(resp.Groups[0].Members), nil
}

// The Java console consumer (classic protocol, auto commit) commits what it
// consumed and the next run of the group resumes there.
func TestGroupsJavaConsumerCommitResume(t *testing.T) {
	needJava(t)
	gw := startGateway(t)
	const topic, group = "g-java", "grp-java"
	createTopic(t, newClient(t, gw.Addr), topic, 1)
	produceParts(t, gw.Addr, topic, 1, 30)
	run := func(n int, extra ...string) []string {
		args := append([]string{"--bootstrap-server", gw.Addr, "--topic", topic, "--group", group,
			"--max-messages", strconv.Itoa(n), "--timeout-ms", "30000",
			// One record per poll: the position (what is committed on
			// close) is then exactly what was printed.
			"--consumer-property", "max.poll.records=1"}, extra...)
		out, errOut, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", args...)
		if err != nil {
			t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, errOut)
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	got := run(10, "--from-beginning")
	if len(got) != 10 || got[0] != "p0-0" || got[9] != "p0-9" {
		t.Fatalf("first run: %q", got)
	}
	got = run(20)
	if len(got) != 20 || got[0] != "p0-10" || got[19] != "p0-29" {
		t.Fatalf("resumed run: %q", got)
	}

	// kafka-consumer-groups on the same group.
	tool := func(args ...string) string {
		out, errOut, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			append([]string{"--bootstrap-server", gw.Addr}, args...)...)
		if err != nil {
			t.Fatalf("kafka-consumer-groups %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
		}
		return out
	}
	if out := tool("--list"); !strings.Contains(out, group) {
		t.Fatalf("--list:\n%s", out)
	}
	// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
	out := tool("--describe", "--group", group)
	if !describeRow(out, topic, "0", "30", "30", "0") {
		t.Fatalf("--describe:\n%s", out)
	}
	if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Empty") {
		t.Fatalf("--state:\n%s", out)
	}
	out = tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	if !strings.Contains(out, topic) {
		t.Fatalf("--reset-offsets:\n%s", out)
	}
	// Reset to 0 reads back as 0 on every backend (on Iggy from the group
	// log, as the native offset cannot hold it).
	out = tool("--describe", "--group", group)
	if !describeRow(out, topic, "0", "0", "30", "30") {
		t.Fatalf("--describe after reset (lag 30):\n%s", out)
	}

	// A live member seen by --describe --members.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := newClient(t, gw.Addr, kgo.ConsumerGroup("grp-live"), kgo.ConsumeTopics(topic), kgo.ClientID("live-client"))
	go func() {
		for ctx.Err() == nil {
			live.PollFetches(ctx)
		}
	}()
	checkFor(t, 60*time.Second, time.Second, func() error {
		out := tool("--describe", "--group", "grp-live", "--members")
		// The HOST column is the member's peer address, as on Kafka.
		if !strings.Contains(out, "live-client") || !strings.Contains(out, "/127.0.0.1") {
			return fmt.Errorf("--members:\n%s", out)
		}
		return nil
	})
	// The first rebalance of a group waits out the initial delay (3s).
	checkFor(t, 60*time.Second, time.Second, func() error {
		if out := tool("--describe", "--group", "grp-live", "--state"); !strings.Contains(out, "Stable") {
			return fmt.Errorf("--state of a live group:\n%s", out)
		}
		return nil
	})

	out = tool("--delete", "--group", group)
	if !strings.Contains(out, "deleted") && !strings.Contains(out, "Deletion") {
		t.Fatalf("--delete:\n%s", out)
	}
	if out := tool("--list"); strings.Contains(out, group+"\n") || strings.HasSuffix(out, group) {
		t.Fatalf("--list after delete:\n%s", out)
	}
}

// committedOffset reads group's committed offset of topic/partition with a
// raw OffsetFetch.
func committedOffset(t *testing.T, addr, group, topic string, partition int32) int64 {
	t.Helper()
	cl := newClient(t, addr)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	if resp.ErrorCode != 0 || len(resp.Groups) == 0 && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		t.Fatalf("OffsetFetch: %+v", resp)
	}
	if len(resp.Groups) > 0 {
		g := resp.Groups[0]
		if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetFetch: %+v", g)
		}
		return g.Topics[0].Partitions[0].Offset
	}
	return resp.Topics[0].Partitions[0].Offset
}

// describeRow finds a --describe row for topic/partition with the given
// current offset, log end offset and lag.
func describeRow(out, topic, partition, current, end, lag string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+4 < len(f); i++ {
			if f[i] == topic && f[i+1] == partition && f[i+2] == current && f[i+3] == end && f[i+4] == lag {
				return true
			}
		}
	}
	return false
}
