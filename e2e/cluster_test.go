package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	all     []incarnation // every gateway process started, killed ones too
}

// incarnation is one gateway process: its id and which start of it.
type incarnation struct {
	name string // "gw2#1": gateway 2, its second start
	p    *process
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
	starts := 0
	for _, in := range cg.all {
		if strings.HasPrefix(in.name, fmt.Sprintf("gw%d#", id)) {
			starts++
		}
	}
	cg.procs[id] = p
	cg.all = append(cg.all, incarnation{name: fmt.Sprintf("gw%d#%d", id, starts), p: p})
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

// clusterAppend is one append a gateway logged ("cluster: appended", at
// debug level, handlers.noteClusterWrite).
type clusterAppend struct {
	writer          string // incarnation name
	epoch           int64
	offset, records int64
}

var appendedLine = regexp.MustCompile(`msg="cluster: appended".* topic=(\S+) partition=(\d+) epoch=(\d+) offset=(\d+) records=(\d+)`)

// appendsOf counts the appends to topic that p logged.
func appendsOf(p *process, topic string) int {
	n := 0
	for _, m := range appendedLine.FindAllStringSubmatch(p.Log(), -1) {
		if m[1] == topic {
			n++
		}
	}
	return n
}

// oneWriterAtATime fails t unless, in every partition of topic, the
// appends every gateway logged, in offset order, never go back to an
// earlier leader epoch, and one epoch has one writer: had two gateways
// written a partition at once (an old leader still writing after the new
// one began), their appends would interleave and the epochs of the
// offsets would go down and up again. recs (the log read back) must be
// covered by the logged appends, so the check is not vacuous; it returns
// how many times a partition changed writer.
func (cg *clusterGateways) oneWriterAtATime(t *testing.T, topic string, recs []*kgo.Record) int {
	t.Helper()
	byPart := map[int32][]clusterAppend{}
	for _, in := range cg.all {
		for _, m := range appendedLine.FindAllStringSubmatch(in.p.Log(), -1) {
			if m[1] != topic {
				continue
			}
			part, _ := strconv.Atoi(m[2])
			a := clusterAppend{writer: in.name}
			a.epoch, _ = strconv.ParseInt(m[3], 10, 64)
			a.offset, _ = strconv.ParseInt(m[4], 10, 64)
			a.records, _ = strconv.ParseInt(m[5], 10, 64)
			byPart[int32(part)] = append(byPart[int32(part)], a)
		}
	}
	faults, handovers := writerFaults(byPart)
	for _, f := range faults {
		t.Error(f)
	}
	// A gateway killed with SIGKILL may die between an append and its log
	// line: a few records may be uncovered, not many.
	covered := map[int32]map[int64]bool{}
	for part, as := range byPart {
		covered[part] = map[int64]bool{}
		for _, a := range as {
			for o := a.offset; o < a.offset+a.records; o++ {
				covered[part][o] = true
			}
		}
	}
	uncovered := 0
	for _, r := range recs {
		if !covered[r.Partition][r.Offset] {
			uncovered++
		}
	}
	if uncovered > len(recs)/20 {
		t.Errorf("%d of %d records in the log have no logged append: the writer check saw too little", uncovered, len(recs))
	}
	t.Logf("writers: %d partitions, %d handovers between gateways, %d of %d records without a logged append",
		len(byPart), handovers, uncovered, len(recs))
	return handovers
}

// writerFaults is oneWriterAtATime's rule over each partition's appends
// (sorted here by offset): what breaks it, and how often a partition
// changed writer.
func writerFaults(byPart map[int32][]clusterAppend) (faults []string, handovers int) {
	for part, as := range byPart {
		slices.SortFunc(as, func(a, b clusterAppend) int { return cmp.Compare(a.offset, b.offset) })
		for i := 1; i < len(as); i++ {
			a, prev := as[i], as[i-1]
			switch {
			case a.offset < prev.offset+prev.records:
				faults = append(faults, fmt.Sprintf("partition %d: %s appended at %d under epoch %d, inside %s's append at %d (%d records)",
					part, a.writer, a.offset, a.epoch, prev.writer, prev.offset, prev.records))
			case a.epoch < prev.epoch:
				faults = append(faults, fmt.Sprintf("partition %d: %s appended at %d under epoch %d after %s appended at %d under epoch %d: two writers at once",
					part, a.writer, a.offset, a.epoch, prev.writer, prev.offset, prev.epoch))
			case a.epoch == prev.epoch && a.writer != prev.writer:
				faults = append(faults, fmt.Sprintf("partition %d: %s and %s both appended under epoch %d (offsets %d, %d)",
					part, prev.writer, a.writer, a.epoch, prev.offset, a.offset))
			case a.writer != prev.writer:
				handovers++
			}
		}
	}
	return faults, handovers
}

// The writer check itself: a clean handover passes; an old leader still
// appending after the new one began, or two writers under one epoch, fail.
func TestClusterWriterCheck(t *testing.T) {
	a := func(w string, epoch, offset, n int64) clusterAppend {
		return clusterAppend{writer: w, epoch: epoch, offset: offset, records: n}
	}
	for _, c := range []struct {
		name      string
		appends   []clusterAppend
		faults    int
		handovers int
	}{
		{"handover", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw1#0", 4, 3, 2), a("gw2#0", 7, 5, 1), a("gw2#0", 9, 6, 1)}, 0, 1},
		{"old leader after new", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw2#0", 7, 3, 2), a("gw1#0", 4, 5, 1)}, 1, 1},
		{"one epoch, two writers", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw2#0", 4, 3, 2)}, 1, 0},
		{"overlapping appends", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw2#0", 7, 2, 2)}, 1, 0},
	} {
		faults, handovers := writerFaults(map[int32][]clusterAppend{0: slices.Clone(c.appends)})
		if len(faults) != c.faults || handovers != c.handovers {
			t.Errorf("%s: %d faults %v, %d handovers; want %d, %d", c.name, len(faults), faults, handovers, c.faults, c.handovers)
		}
	}
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

// ackedRecord is one record a producer had acknowledged, and where.
type ackedRecord struct {
	value     string
	partition int32
	offset    int64
}

// javaAcks parses AckedProducer's ACK lines, failing t on a FAIL line (a
// record the producer gave up on: with retries past any failover, only a
// fatal error does that) or when it did not finish with DONE.
func javaAcks(t *testing.T, p *javaProc) []ackedRecord {
	t.Helper()
	out := p.out.String()
	if !strings.Contains(out, "\nDONE ") {
		t.Fatalf("the Java producer did not finish cleanly:\n%s\nstderr: %s", tail(out, 20), tail(p.err.String(), 60))
	}
	var acks []ackedRecord
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			t.Fatalf("the Java producer gave up on a record: %s", line)
		}
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "ACK" {
			continue
		}
		part, err1 := strconv.Atoi(f[1])
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad line from the Java producer: %q", line)
		}
		acks = append(acks, ackedRecord{value: f[3], partition: int32(part), offset: off})
	}
	return acks
}

// Three gateways in front of one Iggy: Metadata lists all three and
// spreads the partitions' leaders over them. Two idempotent acks=all
// producers (franz-go and the Java client, AckedProducer.java) and two
// groups (three franz-go members; two Java members on the classic
// protocol, GroupMember.java) run on the same 12 partitions while one
// gateway is killed with SIGKILL, restarted, and a fourth is added. Then:
// every record either producer had acknowledged is in the log exactly
// once, at the partition and offset acknowledged, in produce order per
// partition and producer (Kafka's exactly-once in the log for idempotent
// producers); each group consumed every acknowledged record at least
// once (a rebalance may hand on records consumed but not yet committed:
// duplicates are counted and logged, as Kafka allows them); and the
// appends the gateways logged show one writer per partition at a time.
func TestClusterThreeGatewaysFailover(t *testing.T) {
	needJava(t)
	producerSrc, err := filepath.Abs("java/src/AckedProducer.java")
	if err != nil {
		t.Fatal(err)
	}
	memberSrc, err := filepath.Abs("java/src/GroupMember.java")
	if err != nil {
		t.Fatal(err)
	}
	cg := newClusterGateways(t)
	for id := 1; id <= 3; id++ {
		cg.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
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

	// The Java clients start first: their JVMs compile and join while the
	// rest starts. Their bootstrap is the three first gateways; they learn
	// of the fourth from Metadata.
	bootstrap := strings.Join(cg.seeds(), ",")
	javaProd := javaStart(t, "java-producer", producerSrc, bootstrap, topic, "12", "j")
	var javaGroup []*javaMember
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("java-member-%d", i)
		javaGroup = append(javaGroup, &javaMember{name: name, p: javaStart(t, name, memberSrc, bootstrap, "cluster-java", topic, "-",
			"group.protocol=classic", "client.id="+name, "session.timeout.ms=10000", "heartbeat.interval.ms=1000",
			"metadata.max.age.ms=5000", "reconnect.backoff.max.ms=1000")})
	}

	// The franz-go group: three members, consuming throughout.
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

	// The franz-go producer: idempotent (kgo's default), acks=all.
	prod := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordRetries(1000),
		kgo.RetryTimeout(time.Minute))
	var acked []ackedRecord
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
						acked = append(acked, ackedRecord{value: v, partition: r.Partition, offset: r.Offset})
						ackMu.Unlock()
					}
				})
			}
			batch.Wait()
		}
	}

	// The Java producer has records acknowledged and both Java members hold
	// partitions before anything fails.
	javaProd.waitOutput(t, "ACK ", 2*time.Minute)
	checkFor(t, 2*time.Minute, 200*time.Millisecond, func() error {
		held := 0
		for _, m := range javaGroup {
			if len(m.owned()) == 0 {
				return fmt.Errorf("%s holds no partition yet", m.name)
			}
			held += len(m.owned())
		}
		if held != 12 {
			return fmt.Errorf("the Java members hold %d partitions, want 12", held)
		}
		return nil
	})

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
	javaProd.stop(t, time.Minute)
	jacked := javaAcks(t, javaProd)
	// franz-go's producer sends in waves of 50 and waits for each: a wave
	// caught in a move waits for the client's next metadata refresh (at
	// most every 5 s by default), and three moves can take most of the
	// 14 s (800 records in one run on two busy cores).
	if len(acked) < 200 || len(jacked) < 1000 {
		t.Fatalf("only %d (franz-go) and %d (Java) records acknowledged", len(acked), len(jacked))
	}
	all := append(slices.Clip(acked), jacked...)

	// The log: every acknowledged record exactly once, where it was
	// acknowledged, in produce order per partition and producer (each
	// producer's values grow; "r" and "j" tell them apart).
	recs := cg.readLog(ctx, t, topic, len(all))
	last := map[string]string{}
	at := map[string]*kgo.Record{}
	for _, r := range recs {
		v := string(r.Value)
		k := fmt.Sprintf("%d/%c", r.Partition, v[0])
		if v <= last[k] {
			t.Errorf("partition %d: %s after %s", r.Partition, v, last[k])
		}
		last[k] = v
		at[v] = r
	}
	values := make([]string, len(all))
	for i, a := range all {
		values[i] = a.value
	}
	onceInLog(t, recs, values)
	for _, a := range all {
		if r := at[a.value]; r.Partition != a.partition || r.Offset != a.offset {
			t.Fatalf("%s was acknowledged at %d/%d but is at %d/%d", a.value, a.partition, a.offset, r.Partition, r.Offset)
		}
	}

	// Each group consumed every acknowledged record, at least once.
	checkFor(t, time.Minute, 500*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range all {
			if consumed[a.value] == 0 {
				return fmt.Errorf("the franz-go group has not consumed %s (of %d acked)", a.value, len(all))
			}
		}
		return nil
	})
	stopGroup()
	wg.Wait()
	javaConsumed := map[string]int{}
	checkFor(t, time.Minute, 500*time.Millisecond, func() error {
		clear(javaConsumed)
		for _, m := range javaGroup {
			for _, v := range m.records() {
				javaConsumed[v]++
			}
		}
		for _, a := range all {
			if javaConsumed[a.value] == 0 {
				return fmt.Errorf("the Java group has not consumed %s (of %d acked)", a.value, len(all))
			}
		}
		return nil
	})
	for _, m := range javaGroup {
		m.p.stop(t, 30*time.Second)
	}
	again := func(c map[string]int) (n int) {
		for _, k := range c {
			if k > 1 {
				n++
			}
		}
		return n
	}
	t.Logf("%d records acknowledged (%d by the Java producer), each once in the log; consumed more than once (rebalances): %d by the franz-go group, %d by the Java group",
		len(all), len(jacked), again(consumed), again(javaConsumed))

	// One writer per partition at a time, and the partitions did move.
	if cg.oneWriterAtATime(t, topic, recs) == 0 {
		t.Error("no partition changed writer: the failover moved nothing")
	}

	// The fourth gateway joined: Metadata lists four brokers.
	bs, err := cg.brokers(ctx, admin)
	if err != nil || len(bs) != 4 {
		t.Fatalf("brokers after adding a fourth: %v %v", bs, err)
	}
}

// A gateway frozen with SIGSTOP past its session TTL loses its partitions
// to the others; after SIGCONT it notices the lost session by its own
// clock and does not write until it has registered again and the new
// membership settled. An idempotent producer running throughout has every
// acknowledged record in the log exactly once, and the gateways' logged
// appends show one writer per partition at a time.
// steadyProducer is a franz-go producer (idempotent, acks=all) writing
// "<prefix>NNNNNN" to a topic through every gateway, one record every
// 2 ms until finish, keeping what was acknowledged, when, and what failed.
type steadyProducer struct {
	cl       *kgo.Client
	mu       sync.Mutex
	acked    []ackedRecord
	ackTimes []time.Time
	failed   []error
	stop     chan struct{}
	done     chan struct{}
}

func (cg *clusterGateways) startProducer(ctx context.Context, t *testing.T, topic, prefix string) *steadyProducer {
	p := &steadyProducer{
		cl: newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordRetries(1000),
			kgo.RetryTimeout(time.Minute), kgo.ProduceRequestTimeout(5*time.Second)),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			v := fmt.Sprintf("%s%06d", prefix, i)
			p.cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.failed = append(p.failed, err)
					return
				}
				p.acked = append(p.acked, ackedRecord{value: v, partition: r.Partition, offset: r.Offset})
				p.ackTimes = append(p.ackTimes, time.Now())
			})
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return p
}

// ackedNow is how many records have been acknowledged so far.
func (p *steadyProducer) ackedNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// finish stops producing and waits for every record's outcome; the
// fields are then the producer's final account.
func (p *steadyProducer) finish(ctx context.Context, t *testing.T) {
	close(p.stop)
	<-p.done
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// values are the acknowledged records' values, in acknowledgement order.
func (p *steadyProducer) values() []string {
	out := make([]string, 0, len(p.acked))
	for _, a := range p.acked {
		out = append(out, a.value)
	}
	return out
}

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
	checkFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		if bs, err := cg.brokers(ctx, admin); err != nil || len(bs) != 2 {
			return fmt.Errorf("brokers %v (%v), want 2", bs, err)
		}
		return nil
	})
	prod := cg.startProducer(ctx, t, topic, "f")
	// Gateway 2 writes its partitions before it is frozen (else the
	// freeze would fence nothing).
	frozen := cg.procs[2]
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := appendsOf(frozen, topic); n < 20 {
			return fmt.Errorf("gateway 2 appended %d batches", n)
		}
		return nil
	})
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
	// And it takes its partitions back: the producer's records reach it
	// again.
	before := appendsOf(frozen, topic)
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := appendsOf(frozen, topic); n < before+20 {
			return fmt.Errorf("gateway 2 appended %d batches since it registered again", n-before)
		}
		return nil
	})
	prod.finish(ctx, t)
	acked := prod.values()
	if len(acked) < 500 {
		t.Fatalf("only %d records acknowledged", len(acked))
	}
	recs := cg.readLog(ctx, t, topic, len(acked))
	onceInLog(t, recs, acked)
	// The frozen gateway's partitions went to gateway 1 and came back; the
	// requests it had read before the freeze must not have been written by
	// it, under its old epoch, after gateway 1 took over. (How many
	// partitions changed writer depends on where the producer's requests
	// were when the freeze came, so it is logged, not asserted.)
	cg.oneWriterAtATime(t, topic, recs)
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

// probeWrites sends one non-idempotent record to each of the 12
// partitions of topic through each live gateway (raw Produce v9, acks=-1)
// and returns, per gateway id, the error code of each partition. Records
// a gateway accepted are in the log; their values are returned too.
func (cg *clusterGateways) probeWrites(t *testing.T, topic string, n *int) (map[int][]int16, []string) {
	t.Helper()
	codes := map[int][]int16{}
	var stored []string
	for id, p := range cg.procs {
		if p.exited() {
			continue
		}
		w := dialWire(t, p.Addr)
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		var vals []string
		for part := int32(0); part < 12; part++ {
			*n++
			v := fmt.Sprintf("p%06d", *n)
			vals = append(vals, v)
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = part
			rp.Records = recordBatch(-1, 0, v)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := w.roundTrip(req, 9, int32(*n)).(*kmsg.ProduceResponse)
		w.c.Close()
		cs := make([]int16, 12)
		for _, rp := range resp.Topics[0].Partitions {
			cs[rp.Partition] = rp.ErrorCode
			if rp.ErrorCode == 0 {
				stored = append(stored, vals[rp.Partition])
			}
		}
		codes[id] = cs
	}
	return codes, stored
}

// etcd itself stopped under load and kept down past the session TTL,
// then restarted on the same data directory and port. Two gateways and an
// idempotent franz-go producer: while etcd is down every gateway stops
// accepting writes once its session is no longer known live (raw probes
// to every partition through every gateway get only retriable
// NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT), and nobody takes over, so
// no partition is written twice; once etcd is back each partition is
// accepted by exactly one gateway and the producer carries on. In the end
// every acknowledged record is in the log exactly once, where it was
// acknowledged, in order per partition, with no record failed.
func TestClusterEtcdRestartUnderLoad(t *testing.T) {
	cg := newClusterGateways(t)
	for id := 1; id <= 2; id++ {
		cg.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := newClient(t, cg.procs[1].Addr)
	const topic = "cluster-etcd-restart"
	createTopic(t, admin, topic, 12)
	checkFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		bs, err := cg.brokers(ctx, admin)
		if err != nil || len(bs) != 2 {
			return fmt.Errorf("brokers %v (%v), want 2", bs, err)
		}
		return nil
	})
	// acceptedOnce: each partition accepted by exactly one gateway, the
	// other answering NOT_LEADER_OR_FOLLOWER.
	probes := 0
	var probed []string
	acceptedOnce := func() error {
		codes, stored := cg.probeWrites(t, topic, &probes)
		probed = append(probed, stored...)
		for part := 0; part < 12; part++ {
			ok := 0
			for id, cs := range codes {
				switch cs[part] {
				case 0:
					ok++
				case 6: // NOT_LEADER_OR_FOLLOWER
				default:
					return fmt.Errorf("gateway %d answered partition %d with error %d", id, part, cs[part])
				}
			}
			if ok != 1 {
				return fmt.Errorf("partition %d accepted by %d gateways: %v", part, ok, codes)
			}
		}
		return nil
	}
	checkFor(t, 20*time.Second, 200*time.Millisecond, acceptedOnce)

	prod := cg.startProducer(ctx, t, topic, "e")
	ackedNow := prod.ackedNow
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := ackedNow(); n < 300 {
			return fmt.Errorf("%d acknowledged before the outage", n)
		}
		return nil
	})

	// etcd goes away: within the TTL every gateway refuses every write.
	const ttl = 3 * time.Second // --cluster-session-ttl-secs of clusterGateways
	// Stop takes seconds (etcd shuts down gracefully, still expiring the
	// leases nobody can renew): probe meanwhile. It answers no client
	// from the start.
	stopped := time.Now()
	stopDone := make(chan struct{})
	go func() {
		defer close(stopDone)
		cg.etcd.Stop()
	}()
	refuseAll := func() error {
		codes, stored := cg.probeWrites(t, topic, &probes)
		probed = append(probed, stored...)
		for id, cs := range codes {
			for part, c := range cs {
				switch c {
				case 6, 7: // NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT: retriable
				case 0:
					return fmt.Errorf("gateway %d still accepts partition %d", id, part)
				default:
					t.Fatalf("gateway %d answered partition %d with error %d while etcd is down", id, part, c)
				}
			}
		}
		return nil
	}
	checkFor(t, 2*ttl, 50*time.Millisecond, refuseAll)
	refusedAfter := time.Since(stopped)
	ackedAtRefusal := ackedNow()

	// Down for at least twice the TTL: the leases expire, but nobody can
	// take over either; the gateways keep refusing.
	<-stopDone
	time.Sleep(time.Until(stopped.Add(2 * ttl)))
	if err := refuseAll(); err != nil {
		t.Fatalf("with etcd down for %v: %v", time.Since(stopped), err)
	}
	for _, p := range cg.procs {
		if !strings.Contains(p.Log(), "etcd unreachable past the session") {
			t.Errorf("a gateway did not warn that etcd is unreachable")
		}
	}
	cg.etcd.Restart(t)
	restarted := time.Now()
	checkFor(t, time.Minute, 100*time.Millisecond, acceptedOnce)
	resumedAfter := time.Since(restarted)
	// The producer's own records flow again.
	checkFor(t, time.Minute, 100*time.Millisecond, func() error {
		if n := ackedNow(); n < ackedAtRefusal+300 {
			return fmt.Errorf("%d acknowledged, %d at the outage", n, ackedAtRefusal)
		}
		return nil
	})
	prod.finish(ctx, t)
	acked, ackTimes, failed := prod.acked, prod.ackTimes, prod.failed
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	// The clients' view of the outage: the longest wait between two acks.
	var gap time.Duration
	for i := 1; i < len(ackTimes); i++ {
		gap = max(gap, ackTimes[i].Sub(ackTimes[i-1]))
	}

	recs := cg.readLog(ctx, t, topic, len(acked)+len(probed))
	last := map[int32]string{}
	at := map[string]*kgo.Record{}
	for _, r := range recs {
		v := string(r.Value)
		at[v] = r
		if v[0] != 'e' {
			continue
		}
		if v <= last[r.Partition] {
			t.Errorf("partition %d: %s after %s", r.Partition, v, last[r.Partition])
		}
		last[r.Partition] = v
	}
	onceInLog(t, recs, append(prod.values(), probed...))
	for _, a := range acked {
		if r := at[a.value]; r.Partition != a.partition || r.Offset != a.offset {
			t.Fatalf("%s was acknowledged at %d/%d but is at %d/%d", a.value, a.partition, a.offset, r.Partition, r.Offset)
		}
	}
	cg.oneWriterAtATime(t, topic, recs)
	t.Logf("etcd down %v: writes refused %v after it stopped, accepted again %v after it restarted; longest wait between two acks %v; %d acknowledged, each once in the log",
		restarted.Sub(stopped).Round(10*time.Millisecond), refusedAfter.Round(10*time.Millisecond),
		resumedAfter.Round(10*time.Millisecond), gap.Round(10*time.Millisecond), len(acked))
}
