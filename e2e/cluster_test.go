package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/cluster/clustertest"
)

// clusterGateways spawns gateway binaries 1..n in one cluster over one
// Iggy (the real server under the iggy-server backend, else the
// imitation over an embedded store) and an in-process etcd.
type clusterGateways struct {
	t       *testing.T
	dataDir string
	etcd    *clustertest.Etcd
	id      string // --cluster-id
	procs   map[int]*process
}

func newClusterGateways(t *testing.T) *clusterGateways {
	if os.Getenv(backendEnv) == "iggy" {
		// The default pass runs it on the same imitation server.
		t.Skip("cluster mode runs on the default and iggy-server passes")
	}
	return &clusterGateways{t: t, dataDir: t.TempDir(), etcd: clustertest.StartEtcd(t),
		id: fmt.Sprintf("e2e-%d", time.Now().UnixNano()), procs: map[int]*process{}}
}

// start spawns gateway id (again, after a kill).
func (cg *clusterGateways) start(id int) *process {
	cg.t.Helper()
	args := append(iggyArgs(cg.t, cg.dataDir),
		"--cluster-etcd-endpoints="+cg.etcd.Endpoint, "--cluster-id="+cg.id,
		"--instance-id="+strconv.Itoa(id), "--cluster-session-ttl-secs=3",
		"--default-partitions=12")
	p := spawnGateway(cg.t, cg.dataDir, args...)
	cg.procs[id] = p
	return p
}

func (cg *clusterGateways) seeds() []string {
	var out []string
	for _, p := range cg.procs {
		if !p.exited() {
			out = append(out, p.Addr)
		}
	}
	return out
}

// brokers is what a Metadata request to cl's seed answers now (kadm's
// metadata calls may be served from the client's cache).
func (cg *clusterGateways) brokers(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// readLog reads topic from its start through the live gateways until n
// records arrived (or a minute passed) and returns them in fetch order.
func (cg *clusterGateways) readLog(ctx context.Context, t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	reader := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n && ctx.Err() == nil {
		recs = append(recs, reader.PollFetches(ctx).Records()...)
	}
	return recs
}

// onceInLog fails t unless every acknowledged value is in recs exactly
// once; it returns how often each value is there.
func onceInLog(t *testing.T, recs []*kgo.Record, acked []string) map[string]int {
	t.Helper()
	inLog := make(map[string]int, len(recs))
	for _, r := range recs {
		inLog[string(r.Value)]++
	}
	for _, v := range acked {
		if inLog[v] != 1 {
			t.Fatalf("acknowledged %s is in the log %d times (%d acked, %d read)", v, inLog[v], len(acked), len(recs))
		}
	}
	return inLog
}

// Three gateways in front of one Iggy: Metadata lists all three and
// spreads the partitions' leaders over them; an idempotent producer and a
// three-member group carry on while one gateway is killed with SIGKILL,
// restarted, and a fourth is added; in the end every acknowledged record
// is in the log exactly once and in order per partition, and the group
// consumed each at least once. Then the Java console producer and a Java
// console consumer group work against the four.
func TestClusterThreeGatewaysFailover(t *testing.T) {
	needJava(t)
	cg := newClusterGateways(t)
	for id := 1; id <= 3; id++ {
		cg.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := newClient(t, cg.procs[1].Addr)
	const topic = "cluster-orders"
	createTopic(t, admin, topic, 12)

	checkFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		bs, err := cg.brokers(ctx, admin)
		if err != nil {
			return err
		}
		if len(bs) != 3 {
			return fmt.Errorf("brokers %v, want 3", bs)
		}
		return nil
	})
	leaders := map[int32]int{}
	td, err := kadm.NewClient(admin).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range td[topic].Partitions {
		leaders[p.Leader]++
	}
	if len(leaders) < 2 {
		t.Fatalf("12 partitions led by %v: not spread", leaders)
	}

	// The group: three members, consuming throughout.
	var mu sync.Mutex
	consumed := map[string]int{}
	groupCtx, stopGroup := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		cl := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.ConsumerGroup("cluster-group"),
			kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for groupCtx.Err() == nil {
				fs := cl.PollFetches(groupCtx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					consumed[string(r.Value)]++
					mu.Unlock()
				})
			}
		}()
	}

	// The producer: idempotent (kgo's default), acks=all.
	prod := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordRetries(1000),
		kgo.RetryTimeout(time.Minute))
	var acked []string
	var ackMu sync.Mutex
	seq := 0
	produceFor := func(d time.Duration) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			var batch sync.WaitGroup
			for j := 0; j < 50; j++ {
				v := fmt.Sprintf("r%06d", seq)
				seq++
				batch.Add(1)
				prod.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
					defer batch.Done()
					if err == nil {
						ackMu.Lock()
						acked = append(acked, v)
						ackMu.Unlock()
					}
				})
			}
			batch.Wait()
		}
	}

	produceFor(2 * time.Second)
	cg.procs[2].Kill() // SIGKILL: its lease expires after the TTL
	produceFor(6 * time.Second)
	cg.start(2)
	produceFor(3 * time.Second)
	cg.start(4)
	produceFor(3 * time.Second)
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(acked) < 1000 {
		t.Fatalf("only %d records acknowledged", len(acked))
	}

	// The log: every acknowledged record exactly once, in produce order
	// per partition (values grow within a partition).
	recs := cg.readLog(ctx, t, topic, len(acked))
	last := map[int32]string{}
	for _, r := range recs {
		if v := string(r.Value); v <= last[r.Partition] {
			t.Errorf("partition %d: %s after %s", r.Partition, v, last[r.Partition])
		}
		last[r.Partition] = string(r.Value)
	}
	inLog := onceInLog(t, recs, acked)

	// The group saw every acknowledged record.
	checkFor(t, time.Minute, 500*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range acked {
			if consumed[v] == 0 {
				return fmt.Errorf("the group has not consumed %s (of %d acked)", v, len(acked))
			}
		}
		return nil
	})
	stopGroup()
	wg.Wait()
	again := 0
	for _, n := range consumed {
		if n > 1 {
			again++
		}
	}
	t.Logf("%d records acknowledged, each once in the log; the group consumed %d of them more than once (rebalances)", len(acked), again)

	// The fourth gateway joined: Metadata lists four brokers.
	bs, err := cg.brokers(ctx, admin)
	if err != nil || len(bs) != 4 {
		t.Fatalf("brokers after adding a fourth: %v %v", bs, err)
	}

	// The Java client finds the leaders and the coordinator among the four
	// too: its console producer adds records and its console consumer, a
	// group member, reads every record of the topic once.
	var in strings.Builder
	for i := 0; i < 200; i++ {
		v := fmt.Sprintf("j%06d", i)
		fmt.Fprintln(&in, v)
		inLog[v] = 1
	}
	bootstrap := strings.Join(cg.seeds(), ",")
	if _, errOut, err := javaRun(t, 90*time.Second, in.String(), "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", bootstrap, "--topic", topic, "--producer-property", "acks=all"); err != nil || strings.Contains(errOut, "ERROR") {
		t.Fatalf("ConsoleProducer: %v\nstderr: %s", err, errOut)
	}
	want := len(acked) + 200
	out, errOut, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", bootstrap, "--topic", topic, "--group", "cluster-java",
		"--from-beginning", "--max-messages", strconv.Itoa(want), "--timeout-ms", "60000")
	if err != nil {
		t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, tail(errOut, 40))
	}
	seen := map[string]bool{}
	for _, v := range strings.Fields(out) {
		if seen[v] || inLog[v] != 1 {
			t.Fatalf("the Java consumer read %q twice or a record not produced", v)
		}
		seen[v] = true
	}
	if len(seen) != want {
		t.Fatalf("the Java consumer read %d records, want %d", len(seen), want)
	}
}

// A gateway frozen with SIGSTOP past its session TTL loses its partitions
// to the others; after SIGCONT it notices the lost session by its own
// clock and does not write until it has registered again and the new
// membership settled. An idempotent producer running throughout has every
// acknowledged record in the log exactly once.
func TestClusterFrozenGatewayIsFenced(t *testing.T) {
	cg := newClusterGateways(t)
	for id := 1; id <= 2; id++ {
		cg.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := newClient(t, cg.procs[1].Addr)
	const topic = "cluster-frozen"
	createTopic(t, admin, topic, 12)
	prod := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordRetries(1000),
		kgo.RetryTimeout(time.Minute), kgo.ProduceRequestTimeout(5*time.Second))
	var mu sync.Mutex
	var acked []string
	stopProducing := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				return
			default:
			}
			v := fmt.Sprintf("f%06d", i)
			prod.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked = append(acked, v)
					mu.Unlock()
				}
			})
			time.Sleep(2 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second)
	frozen := cg.procs[2]
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Twice the TTL: etcd expires its lease and gateway 1 takes over.
	time.Sleep(6 * time.Second)
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(frozen.Log(), "the session lease expired") {
			return fmt.Errorf("gateway 2 did not notice its lost session")
		}
		if !strings.Contains(frozen.Log(), "registered again") {
			return fmt.Errorf("gateway 2 did not register again")
		}
		return nil
	})
	time.Sleep(2 * time.Second)
	close(stopProducing)
	<-produced
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 500 {
		t.Fatalf("only %d records acknowledged", len(acked))
	}
	onceInLog(t, cg.readLog(ctx, t, topic, len(acked)), acked)
	t.Logf("%d acknowledged across the freeze, each once in the log", len(acked))
}

// The coordinator of a group is killed while the group rebalances (a
// third member is joining): the members find the new coordinator, the
// group settles with every partition assigned once, and records produced
// afterwards are all consumed.
func TestClusterCoordinatorMovesDuringRebalance(t *testing.T) {
	cg := newClusterGateways(t)
	for id := 1; id <= 3; id++ {
		cg.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...))
	const topic, groupID = "cluster-rebalance", "cluster-moving-group"
	createTopic(t, admin, topic, 12)

	var mu sync.Mutex
	consumed := map[string]bool{}
	owned := map[int]map[int32]bool{} // member -> partitions assigned now
	member := func(i int) {
		cl := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.ConsumerGroup(groupID),
			kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(300*time.Millisecond), kgo.SessionTimeout(6*time.Second),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				if owned[i] == nil {
					owned[i] = map[int32]bool{}
				}
				for _, p := range a[topic] {
					owned[i][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r[topic] {
					delete(owned[i], p)
				}
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r[topic] {
					delete(owned[i], p)
				}
			}))
		go func() {
			for ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					consumed[string(r.Value)] = true
					mu.Unlock()
				})
			}
		}()
	}
	assignedOnce := func(members int) error {
		mu.Lock()
		defer mu.Unlock()
		count := map[int32]int{}
		with := 0
		for _, ps := range owned {
			if len(ps) > 0 {
				with++
			}
			for p := range ps {
				count[p]++
			}
		}
		if with != members {
			return fmt.Errorf("%d members hold partitions, want %d: %v", with, members, owned)
		}
		for p := int32(0); p < 12; p++ {
			if count[p] != 1 {
				return fmt.Errorf("partition %d held by %d members: %v", p, count[p], owned)
			}
		}
		return nil
	}
	member(0)
	member(1)
	checkFor(t, time.Minute, 200*time.Millisecond, func() error { return assignedOnce(2) })

	// Who coordinates the group now: kill it as a third member joins.
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = groupID
	fc, err := req.RequestWith(ctx, admin)
	if err != nil || fc.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %v", err, fc)
	}
	member(2)
	time.Sleep(100 * time.Millisecond)
	cg.procs[int(fc.NodeID)].Kill()

	// The survivors do not refuse the group: within the TTL it moves.
	checkFor(t, time.Minute, 200*time.Millisecond, func() error { return assignedOnce(3) })
	var recs []*kgo.Record
	for i := 0; i < 600; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("m%04d", i))})
	}
	prod := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if fc.NodeID == 1 {
		prod = newClient(t, cg.procs[2].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	}
	produceAll(t, prod, recs)
	checkFor(t, time.Minute, 200*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if !consumed[string(r.Value)] {
				return fmt.Errorf("%s not consumed", r.Value)
			}
		}
		return nil
	})
}
