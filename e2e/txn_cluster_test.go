package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterTransactionsCoordinatorKill: three gateways with
// --transactions enabled; a franz-go transactional producer (transaction
// version 1, as cluster mode finalizes it) writes transactions of 12
// records over the 6 partitions of a topic led by all three gateways,
// committing three in four and aborting the fourth. The gateway that
// coordinates its transactional id is killed with SIGKILL three times:
// once with a transaction open (records written, EndTxn not sent), twice
// while a commit is on its way; each is started again. The producer carries on by
// its client's rules, and afterwards a read_committed reader sees every
// record of every transaction whose commit was acknowledged, exactly
// once, no record of an aborted one, and no transaction in part; a
// read_uncommitted reader sees every record written.
func TestClusterTransactionsCoordinatorKill(t *testing.T) {
	// Serial: three gateways against 3 s session leases.
	const (
		topic  = "txn-cluster"
		txid   = "txn-cluster-producer"
		parts  = 6
		txns   = 24
		perTxn = 12
	)
	cg, ctx, admin := newTxnCluster(t, 6*time.Minute)
	createTopic(t, admin, topic, parts)

	// kgo's default record retries (no limit) and a short metadata
	// age: a gateway started again listens on a new port, and the
	// client learns it from its next metadata refresh.
	producer := func() *kgo.Client {
		return cg.client(kgo.TransactionalID(txid), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(time.Minute),
			kgo.RetryTimeout(2*time.Minute), kgo.MetadataMinAge(200*time.Millisecond), kgo.RequestRetries(100))
	}
	p := producer()
	committed, aborted, unknown := map[int]bool{}, map[int]bool{}, map[int]bool{}
	coordinator := func() int { return cg.coordinatorOfType(ctx, t, admin, txid, 1) }
	for i := range txns {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("transaction %d: begin: %v", i, err)
		}
		commit := i%4 != 3
		tag := "a"
		if commit {
			tag = "c"
		}
		for j := range perTxn {
			r := &kgo.Record{Value: fmt.Appendf(nil, "%s-%d-%d", tag, i, j)}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("transaction %d: produce: %v", i, err)
			}
		}
		killed := 0
		var killing chan struct{}
		switch i {
		case 6:
			killed = coordinator()
			cg.procs[killed].Kill()
			t.Logf("killed gateway %d, the coordinator of %s, with transaction %d open", killed, txid, i)
		case 14, 18:
			// 2 ms: about when the prepared state is stored; 20 ms:
			// the markers are being written (each through etcd).
			delay := 2 * time.Millisecond
			if i == 18 {
				delay = 20 * time.Millisecond
			}
			killed = coordinator()
			killing = make(chan struct{})
			go func(p *process) {
				defer close(killing)
				time.Sleep(delay)
				p.Kill()
			}(cg.procs[killed])
			t.Logf("killing gateway %d, the coordinator of %s, %v into the commit of transaction %d", killed, txid, delay, i)
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		err := p.EndTransaction(ctx, end)
		if killing != nil {
			<-killing
		}
		switch {
		case err != nil:
			// franz-go gives an EndTxn up while FindCoordinator still
			// names the killed gateway (until its session expires), and
			// cannot tell how a commit it sent ended. The application
			// starts a new producer with the same transactional id: its
			// InitProducerId fences the old one and finds the
			// transaction ended, one way or the other, by the
			// coordinator.
			t.Logf("transaction %d: end (commit %v): %v; its outcome is left to the coordinator, the producer made again", i, commit, err)
			unknown[i] = true
			p.Close()
			p = producer()
		case commit:
			committed[i] = true
		default:
			aborted[i] = true
		}
		if killed != 0 {
			cg.start(killed)
		}
	}

	readers := func(iso kgo.IsolationLevel, want int) []string {
		cl := cg.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
		var got []string
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		defer rcancel()
		for len(got) < want && rctx.Err() == nil {
			cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		// Then until a poll finds nothing more for 2 s (records of the
		// unacknowledged transactions, or any beyond what is wanted,
		// which would be a bug too).
		for more := true; more; {
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			before := len(got)
			cl.PollFetches(sctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			scancel()
			more = len(got) > before
		}
		return got
	}
	// The transactions whose end was not acknowledged may add records.
	got := readers(kgo.ReadCommitted(), len(committed)*perTxn)
	seen := map[string]int{}
	perTxnSeen := map[int]int{}
	for _, v := range got {
		seen[v]++
		var i, j int
		tag := strings.SplitN(v, "-", 2)[0]
		if _, err := fmt.Sscanf(v[len(tag)+1:], "%d-%d", &i, &j); err != nil {
			t.Fatalf("read_committed returned %q", v)
		}
		if !committed[i] && !unknown[i] {
			t.Fatalf("read_committed returned %q of transaction %d, which was not committed", v, i)
		}
		perTxnSeen[i]++
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("read_committed returned %q %d times", v, n)
		}
	}
	for i := range committed {
		if perTxnSeen[i] != perTxn {
			t.Errorf("transaction %d: read_committed returned %d of its %d records", i, perTxnSeen[i], perTxn)
		}
	}
	for i := range unknown {
		if n := perTxnSeen[i]; n != 0 && n != perTxn {
			t.Errorf("transaction %d (its end not acknowledged): read_committed returned %d of its %d records, a part", i, n, perTxn)
		}
	}
	if len(committed) < txns/2 {
		t.Errorf("only %d of %d transactions had their commit acknowledged", len(committed), txns)
	}
	all := readers(kgo.ReadUncommitted(), txns*perTxn)
	if len(all) < txns*perTxn {
		t.Errorf("read_uncommitted returned %d records, want at least %d (every record written)", len(all), txns*perTxn)
	}
	t.Logf("%d transactions committed, %d aborted, %d ended unacknowledged; read_committed %d records, read_uncommitted %d",
		len(committed), len(aborted), len(unknown), len(got), len(all))
}

// TestClusterTransactionsCTPCoordinatorKill: the Java consume-transform-
// produce loop of TestTransactionsGatewayKilledCTP (TxnCheck ctp-loop,
// client 4.4.0, sendOffsetsToTransaction) against three gateways, where
// its transactional id is coordinated by gateway 3 and its group by
// gateway 2, so every TxnOffsetCommit is relayed from the group's
// coordinator to the transaction's. Gateway 3 (the transaction
// coordinator, and the leader of some partitions) is killed with SIGKILL
// four times, half the kills timed to land on a commit, and started
// again. The same outcome as on one gateway: no transaction seen in part
// by a read_committed reader, the output holds every input exactly once,
// and the group's committed offsets are the input's end.
func TestClusterTransactionsCTPCoordinatorKill(t *testing.T) {
	// Serial: three gateways against 3 s session leases.
	needJava(t)
	const kills = 4
	cg, ctx, admin := newTxnCluster(t, 8*time.Minute)
	name := ""
	for i := 0; name == ""; i++ {
		n := fmt.Sprintf("cctp%d", i)
		if cg.coordinatorOfType(ctx, t, admin, n+"-txn", 1) == 3 && cg.coordinatorOf(ctx, t, admin, n+"-group") == 2 {
			name = n
		}
	}
	r := newCTPRun(t, cg.procs[1].Addr, name, func(topic string, parts int32) { createTopic(t, admin, topic, parts) })
	p := r.start("a")
	for i := range kills {
		r.feedInput(100)
		r.crash(p, i, func() {
			cg.procs[3].Kill()
			cg.start(3)
		})
	}
	r.feedInput(100)
	r.finish(p)
	prepared := 0
	for _, in := range cg.all {
		prepared += strings.Count(in.p.Log(), "finishing a transaction its last coordinator left prepared")
	}
	t.Logf("coordinators that found a transaction prepared and finished it: %d", prepared)
}

// newTxnCluster is gateways 1-3 of a new cluster with --transactions
// enabled, each listing all three, a context ending after timeout (or with
// the test), and a client of the cluster.
func newTxnCluster(t *testing.T, timeout time.Duration) (*clusterGateways, context.Context, *kgo.Client) {
	t.Helper()
	cg := newClusterGateways(t)
	cg.extra = []string{"--transactions=enabled"}
	for id := 1; id <= 3; id++ {
		cg.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	admin := cg.client()
	cg.waitBrokers(ctx, admin, 3)
	cg.waitViews(ctx, admin, 3)
	return cg, ctx, admin
}
