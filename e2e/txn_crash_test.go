package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// Crash tests of transactions (issue 26, durability and recovery): a Java
// consume-transform-produce loop (TxnCheck ctp-loop) runs while the gateway
// binary, or the loop itself, is killed with SIGKILL again and again; a
// read_committed checker reads the output all along. Afterwards the output
// read read_committed holds every input record exactly once, and the
// group's committed offsets are the input's end.

// crashKills is how many times a crash test kills its victim.
const crashKills = 10

// txnView is what a read_committed reader of the ctp-loop's output saw,
// checked as it reads: the records of one transaction on a partition
// (tagged by TxnCheck with the transaction and how many records it wrote
// there) are seen all or none, and every input once.
type txnView struct {
	mu    sync.Mutex
	parts map[int32]*partView
	input map[string]string // input value -> the tag it was seen under
	tags  map[string]bool   // every transaction seen
	errs  []string
	// where the first failure was seen, for dumpPartition
	failPart int32
	failAt   int64
}

// partView is one output partition as the reader saw it: the transaction
// it is reading now.
type partView struct {
	tag        string
	seen, want int
	last       int64 // offset of the last record seen
	done       map[string]bool
}

func newTxnView() *txnView {
	return &txnView{parts: map[int32]*partView{}, input: map[string]string{}, tags: map[string]bool{}}
}

func (v *txnView) failf(p int32, at int64, format string, args ...any) {
	if len(v.errs) == 0 {
		v.failPart, v.failAt = p, at
	}
	if len(v.errs) < 20 {
		v.errs = append(v.errs, fmt.Sprintf(format, args...))
	}
}

// add checks the records of one fetched partition, then the partition's
// last stable offset as that fetch answered it: a transaction still partly
// seen must lie wholly at or past it (its records are consecutive, written
// by one producer).
func (v *txnView) add(fp kgo.FetchPartition) {
	if len(fp.Records) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	pv := v.parts[fp.Partition]
	if pv == nil {
		pv = &partView{done: map[string]bool{}}
		v.parts[fp.Partition] = pv
	}
	for _, r := range fp.Records {
		in, tag, n, ok := parseCTPValue(string(r.Value))
		if !ok {
			v.failf(r.Partition, r.Offset, "partition %d offset %d: value %q not from TxnCheck ctp-loop", r.Partition, r.Offset, r.Value)
			continue
		}
		if tag != pv.tag {
			if pv.tag != "" && pv.seen < pv.want {
				v.failf(r.Partition, r.Offset, "partition %d: transaction %s seen partly (%d of %d records, the last at offset %d), then %s at offset %d",
					r.Partition, pv.tag, pv.seen, pv.want, pv.last, tag, r.Offset)
			}
			if pv.done[tag] {
				v.failf(r.Partition, r.Offset, "partition %d: transaction %s again at offset %d", r.Partition, tag, r.Offset)
			}
			pv.done[pv.tag] = true
			pv.tag, pv.seen, pv.want = tag, 0, n
		}
		pv.seen++
		pv.last = r.Offset
		if pv.seen > pv.want {
			v.failf(r.Partition, r.Offset, "partition %d: transaction %s has more than its %d records (offset %d)", r.Partition, tag, pv.want, r.Offset)
		}
		if prev, dup := v.input[in]; dup {
			v.failf(r.Partition, r.Offset, "input %s read twice: in %s and in %s (partition %d offset %d)", in, prev, tag, r.Partition, r.Offset)
		}
		v.input[in] = tag
		v.tags[tag] = true
	}
	if left := int64(pv.want - pv.seen); left > 0 && fp.LastStableOffset <= pv.last+left {
		v.failf(fp.Partition, pv.last, "partition %d: last stable offset %d inside transaction %s (%d of %d records seen, the last at %d)",
			fp.Partition, fp.LastStableOffset, pv.tag, pv.seen, pv.want, pv.last)
	}
}

// complete reports transactions still seen partly.
func (v *txnView) complete() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for p, pv := range v.parts {
		if pv.seen < pv.want {
			v.failf(p, pv.last, "partition %d: transaction %s seen partly at the end (%d of %d records)", p, pv.tag, pv.seen, pv.want)
		}
	}
}

func (v *txnView) inputs() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.input)
}

func (v *txnView) errors() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.errs...)
}

// parseCTPValue splits a ctp-loop output value "out-VALUE|TAG|N".
func parseCTPValue(s string) (in, tag string, n int, ok bool) {
	f := strings.Split(s, "|")
	if len(f) != 3 || !strings.HasPrefix(f[0], "out-") {
		return "", "", 0, false
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n <= 0 {
		return "", "", 0, false
	}
	return strings.TrimPrefix(f[0], "out-"), f[1], n, true
}

// readCommitted reads topic read_committed from the start into v until
// ctx ends or stop says so.
func readCommitted(ctx context.Context, t testing.TB, addr, topic string, parts int32, v *txnView, stop func() bool) {
	offs := map[int32]kgo.Offset{}
	for p := range parts {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	for ctx.Err() == nil && !stop() {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachPartition(func(p kgo.FetchTopicPartition) { v.add(p.FetchPartition) })
	}
}

// ctpRun is one crash test's topics, input and clients.
type ctpRun struct {
	t                        *testing.T
	addr                     string // where clients connect (a proxy when the gateway restarts)
	in, out, group, txnID    string
	src                      string // TxnCheck.java
	feed                     *kgo.Client
	fed                      int
	view                     *txnView
	stopView                 context.CancelFunc
	viewDone                 chan struct{}
	lines                    map[string]int // ABORTING/FATAL/RESTART lines by exception, over every instance
	procs                    []*javaProc
	commitKills, randomKills int
}

// The input and output topics' partitions: a transaction writes markers
// to every output partition.
const ctpInParts, ctpOutParts = 2, 3

func newCTPRun(t *testing.T, addr, name string, create func(topic string, parts int32)) *ctpRun {
	r := &ctpRun{t: t, addr: addr, in: name + "-in", out: name + "-out", group: name + "-group", txnID: name + "-txn",
		src: javaSource(t, "java/src/TxnCheck.java"), view: newTxnView(), lines: map[string]int{}}
	create(r.in, ctpInParts)
	create(r.out, ctpOutParts)
	r.feed = newClient(t, addr, kgo.RecordRetries(100), kgo.RecordDeliveryTimeout(90*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	r.stopView, r.viewDone = cancel, make(chan struct{})
	go func() {
		defer close(r.viewDone)
		readCommitted(ctx, t, addr, r.out, ctpOutParts, r.view, func() bool { return false })
	}()
	t.Cleanup(func() { r.stopView(); <-r.viewDone })
	return r
}

// feedInput produces n more input records.
func (r *ctpRun) feedInput(n int) {
	r.t.Helper()
	recs := make([]*kgo.Record, 0, n)
	for range n {
		v := fmt.Sprintf("in-%05d", r.fed)
		r.fed++
		recs = append(recs, &kgo.Record{Topic: r.in, Key: []byte(v), Value: []byte(v)})
	}
	produceAll(r.t, r.feed, recs)
}

// start runs a ctp-loop instance.
func (r *ctpRun) start(instance string, extra ...string) *javaProc {
	args := append([]string{"ctp-loop", r.addr, r.txnID, r.group, r.in, r.out, instance}, extra...)
	p := javaStart(r.t, "TxnCheck ctp-loop "+instance, r.src, args...)
	r.procs = append(r.procs, p)
	return p
}

// linesOf counts p's output lines starting with word.
func linesOf(p *javaProc, word string) int {
	n := 0
	for _, l := range strings.Split(p.out.String(), "\n") {
		if strings.HasPrefix(l, word+" ") {
			n++
		}
	}
	return n
}

// awaitLines waits until p printed more than n lines starting with word,
// polling often: a kill timed by a COMMITTING line should land during the
// commit.
func (r *ctpRun) awaitLines(p *javaProc, word string, n int, timeout time.Duration) {
	r.t.Helper()
	if err := await.Poll(timeout, time.Millisecond, func() error {
		if linesOf(p, word) > n {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s: exited", word)
		default:
		}
		return fmt.Errorf("no new %s line", word)
	}); err != nil {
		f, _ := os.CreateTemp("", "ctp-loop-stderr-")
		if f != nil {
			_, _ = f.WriteString(p.err.String())
			_ = f.Close()
		}
		r.t.Fatalf("ctp-loop: %v within %v\nstdout: %s\nstderr (all in %v): %s\ngateway: %s\nthreads: %s", err, timeout,
			tail(p.out.String(), 30), f.Name(), tail(p.err.String(), 60), r.describe(), javaThreads(r.t, p))
	}
}

// describe is what the gateway says of the run's transaction, group and
// topics, for a failure's message.
func (r *ctpRun) describe() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(r.feed)
	var b strings.Builder
	txns, err := adm.DescribeTransactions(ctx, r.txnID)
	fmt.Fprintf(&b, "transactions: %+v %v\n", txns, err)
	groups, err := adm.DescribeGroups(ctx, r.group)
	fmt.Fprintf(&b, "group: %+v %v\n", groups, err)
	for _, g := range groups {
		for _, m := range g.Members {
			a, _ := m.Assigned.AsConsumer()
			fmt.Fprintf(&b, "member %s assigned %+v\n", m.MemberID, a)
		}
	}
	offs, err := adm.FetchOffsets(ctx, r.group)
	fmt.Fprintf(&b, "committed: %+v %v\n", offs, err)
	for _, topic := range []string{r.in, r.out} {
		ends, err := adm.ListEndOffsets(ctx, topic)
		fmt.Fprintf(&b, "%s ends: %+v %v\n", topic, ends, err)
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		fmt.Fprintf(&b, "%s last stable: %+v %v\n", topic, stable, err)
		ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}, 2: {}}})
		fmt.Fprintf(&b, "%s producers: %+v %v\n", topic, ps, err)
	}
	for p, o := range offs[r.in] {
		fmt.Fprintf(&b, "%s/%d from %d:\n%s", r.in, p, o.At, dumpPartition(r.t, r.addr, r.in, p, o.At, o.At+3))
	}
	return b.String()
}

// dumpPartition lists the batches of a partition between two offsets,
// control batches included, read read_uncommitted.
func dumpPartition(t testing.TB, addr, topic string, p int32, from, to int64) string {
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(max(from, 0))}}),
		kgo.KeepControlRecords(), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for last := from; last < to && ctx.Err() == nil; {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			fmt.Fprintf(&b, "  %d pid %d epoch %d txn %v control %v %q\n", r.Offset, r.ProducerID, r.ProducerEpoch,
				r.Attrs.IsTransactional(), r.Attrs.IsControl(), r.Value)
			last = r.Offset
		})
	}
	return b.String()
}

// javaThreads is a thread dump of p (jstack), to see where a stuck client
// waits.
func javaThreads(t testing.TB, p *javaProc) string {
	out, errOut, err := runCmd(t, 30*time.Second, "", "jstack", strconv.Itoa(p.cmd.Process.Pid))
	if err != nil {
		return fmt.Sprintf("jstack: %v %s", err, errOut)
	}
	return out
}

// crash picks the moment of the i-th kill while p runs, then calls kill:
// on even i right as p starts a commit (within 10 ms of its COMMITTING
// line), on odd i at a random moment up to 700 ms after p committed
// something.
func (r *ctpRun) crash(p *javaProc, i int, kill func()) {
	r.t.Helper()
	r.awaitLines(p, "COMMITTED", linesOf(p, "COMMITTED"), 90*time.Second)
	if i%2 == 0 {
		r.awaitLines(p, "COMMITTING", linesOf(p, "COMMITTING"), 60*time.Second)
		time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
		r.commitKills++
	} else {
		time.Sleep(time.Duration(rand.IntN(700)) * time.Millisecond)
		r.randomKills++
	}
	kill()
}

// finish waits until the group committed the whole input, stops the
// running instance, and checks the outcome.
func (r *ctpRun) finish(p *javaProc) {
	t := r.t
	t.Helper()
	adm := kadm.NewClient(r.feed)
	var lastErr error
	if err := await.Poll(2*time.Minute, 200*time.Millisecond, func() error {
		lastErr = r.committedAtEnd(adm)
		return lastErr
	}); err != nil {
		t.Fatalf("the group did not commit the input's end: %v\nctp-loop stdout: %s\nstderr: %s", lastErr, tail(p.out.String(), 40), tail(p.err.String(), 60))
	}
	p.stop(t, time.Minute)
	// The concurrent reader catches up, then a fresh one reads it all.
	if err := await.Poll(time.Minute, 100*time.Millisecond, func() error {
		if n := r.view.inputs(); n < r.fed {
			return fmt.Errorf("read_committed reader saw %d of %d inputs", n, r.fed)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	r.stopView()
	<-r.viewDone
	r.view.complete()
	final := newTxnView()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	settled := time.Time{}
	readCommitted(ctx, t, r.addr, r.out, ctpOutParts, final, func() bool {
		if final.inputs() < r.fed {
			return false
		}
		if settled.IsZero() {
			settled = time.Now() // one more second: anything more is a duplicate
		}
		return time.Since(settled) > time.Second
	})
	final.complete()
	for _, e := range r.view.errors() {
		t.Errorf("concurrent read_committed reader: %s", e)
	}
	if len(r.view.errors()) > 0 {
		t.Logf("output partition %d around offset %d:\n%s", r.view.failPart, r.view.failAt, dumpPartition(t, r.addr, r.out, r.view.failPart, r.view.failAt-40, r.view.failAt+20))
	}
	for _, e := range final.errors() {
		t.Errorf("final read_committed read: %s", e)
	}
	if n := final.inputs(); n != r.fed {
		t.Errorf("output read_committed holds %d distinct inputs, want %d", n, r.fed)
	}
	r.view.mu.Lock()
	for tag := range r.view.tags {
		if !final.tags[tag] {
			t.Errorf("transaction %s was seen read_committed during the run but is not in the output", tag)
		}
	}
	r.view.mu.Unlock()
	// The errors the client recovered from, by kind, each with its first
	// message.
	first := map[string]string{}
	for _, p := range r.procs {
		for _, l := range strings.Split(p.out.String(), "\n") {
			f := strings.Fields(l)
			k := ""
			switch {
			case len(f) >= 3 && (f[0] == "ABORTING" || f[0] == "FATAL"):
				k = f[0] + " " + strings.TrimSuffix(f[2], ":")
			case len(f) >= 2 && f[0] == "RESTART":
				k = "RESTART " + strings.TrimSuffix(f[1], ":")
			default:
				continue
			}
			if r.lines[k]++; first[k] == "" {
				first[k] = l
			}
		}
	}
	keys := make([]string, 0, len(r.lines))
	for k := range r.lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %4d %s\n       first: %s", r.lines[k], k, first[k])
	}
	commits := 0
	for _, p := range r.procs {
		commits += linesOf(p, "COMMITTED")
	}
	t.Logf("%d inputs, %d transactions committed, %d kills at a commit, %d at random; the client's recoveries:%s",
		r.fed, commits, r.commitKills, r.randomKills, b.String())
}

// committedAtEnd is nil once the group's committed offsets are the input
// topic's end offsets.
func (r *ctpRun) committedAtEnd(adm *kadm.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, r.in)
	if err != nil {
		return err
	}
	offs, err := adm.FetchOffsets(ctx, r.group)
	if err != nil {
		return err
	}
	var bad []string
	ends.Each(func(e kadm.ListedOffset) {
		o, _ := offs.Lookup(e.Topic, e.Partition)
		if o.At != e.Offset {
			bad = append(bad, fmt.Sprintf("%s/%d committed %d, end %d", e.Topic, e.Partition, o.At, e.Offset))
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// TestTransactionsGatewayKilledCTP: the gateway binary with --transactions
// enabled is killed (SIGKILL) 10 times under a Java consume-transform-
// produce loop and restarted on the same data (directory or Iggy server),
// half the kills timed to land on a commit; the client recovers by its own
// rules. No transaction is ever seen partly by a read_committed reader,
// the output holds every input exactly once, and the group's offsets are
// the input's end.
func TestTransactionsGatewayKilledCTP(t *testing.T) {
	t.Parallel()
	gatewayKilledCTP(t, "gwkill")
}

// TestTransactionsGatewayKilledCTPFsyncNever is the same with
// --fsync=never on the embedded store: the coordinator's state and the
// group's offsets are then written unsynced, and the journal alone keeps
// what was answered past each kill (docs/STORAGE.md, "Coordinator state
// journal").
func TestTransactionsGatewayKilledCTPFsyncNever(t *testing.T) {
	t.Parallel()
	if iggyBackend() {
		t.Skipf("the journal is the embedded store's; this pass is %s=%s", backendEnv, os.Getenv(backendEnv))
	}
	runs := gatewayKilledCTP(t, "gwkillnever", "--fsync=never")
	reads, replayed := 0, 0
	for _, run := range runs {
		for _, l := range strings.Split(run.Log(), "\n") {
			if !strings.Contains(l, "coordinator state journal read") {
				continue
			}
			reads++
			var n int
			if i := strings.Index(l, "replayed="); i >= 0 {
				_, _ = fmt.Sscanf(l[i:], "replayed=%d", &n)
			}
			replayed += n
		}
	}
	// Each restart after a kill finds the journal; it replays the writes
	// pebble had not written out yet, often none.
	t.Logf("restarts that read the journal: %d of %d; writes it gave back: %d", reads, len(runs)-1, replayed)
	if reads == 0 {
		t.Error("no restart found the coordinator state journal: the test did not exercise it")
	}
}

// gatewayKilledCTP runs the gateway-kill loop and returns every gateway
// run it made, the last one included.
func gatewayKilledCTP(t *testing.T, name string, args ...string) []*process {
	needJava(t)
	g := newProxiedGateway(t, 1<<62, t.TempDir(), append([]string{"--transactions=enabled"}, args...)...)
	r := newCTPRun(t, g.proxy.Addr(), name, g.createTopic)
	p := r.start("a")
	var runs []*process
	for i := range crashKills {
		r.feedInput(100)
		r.crash(p, i, func() {
			runs = append(runs, g.cur)
			g.killAndRestart()
		})
	}
	r.feedInput(100)
	r.finish(p)
	runs = append(runs, g.cur)
	prepared := 0
	for _, run := range runs {
		prepared += strings.Count(run.Log(), "finishing a transaction the last run left prepared")
	}
	t.Logf("restarts that found a transaction prepared and finished it: %d", prepared)
	return runs
}

// TestTransactionsClientKilledCTP: the Java consume-transform-produce loop
// is killed (SIGKILL) 10 times, half the kills timed to land on a commit,
// and a new instance with the same transactional id (and the same static
// group member) takes over each time: its initTransactions fences the dead
// one and ends its open transaction. The same outcome as above.
func TestTransactionsClientKilledCTP(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := spawnGateway(t, t.TempDir(), "--transactions=enabled")
	admin := newClient(t, gw.Addr)
	r := newCTPRun(t, gw.Addr, "clkill", func(topic string, parts int32) { createTopic(t, admin, topic, parts) })
	member := "group.instance.id=ctp-member"
	for i := range crashKills {
		r.feedInput(100)
		p := r.start(fmt.Sprintf("i%d", i), member)
		r.crash(p, i, p.kill)
	}
	r.feedInput(100)
	r.finish(r.start("last", member))
}
