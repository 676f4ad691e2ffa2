package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestJavaToolsTransactions: Kafka's kafka-transactions
// (TransactionsCommand) against a gateway with transactions: list and
// describe show a committed transaction and one left open by a stuck
// producer, describe-producers the open transaction's start offset,
// find-hanging finds none (the coordinator holds the open one), and an
// operator's abort of the open transaction by its start offset
// (describe-producers, then WriteTxnMarkers) ends it on the partition: a
// read_committed consumer reads past it. The stuck producer's commit after
// that leaves the aborted records aborted.
func TestJavaToolsTransactions(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t, withTransactions(2))
	const topic = "ktx"
	createTopic(t, newClient(t, gw.Addr), topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tool := func(args ...string) string {
		t.Helper()
		out, _ := kafkaTool(t, gw.Addr, "org.apache.kafka.tools.TransactionsCommand", args...)
		t.Logf("kafka-transactions %s:\n%s", strings.Join(args, " "), out)
		return out
	}
	must := func(what, out, re string) {
		t.Helper()
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("kafka-transactions %s: no line matching %s in:\n%s", what, re, out)
		}
	}

	// ktx-done: a committed transaction of 2 records (offsets 0-1, its
	// marker at 2).
	done := newClient(t, gw.Addr, kgo.TransactionalID("ktx-done"))
	if err := done.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := done.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "done-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := done.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	donePid, _, err := done.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// ktx-stuck: 3 records at 3-5, never ended; a plain record at 6 after
	// it is not readable read_committed while it is open.
	stuck := newClient(t, gw.Addr, kgo.TransactionalID("ktx-stuck"), kgo.TransactionTimeout(5*time.Minute))
	if err := stuck.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := stuck.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "stuck-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	stuckPid, stuckEpoch, err := stuck.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := newClient(t, gw.Addr).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, gw.Addr, kgo.ReadCommitted(), 2, topic); strings.Join(got, ",") != "done-0,done-1" {
		t.Fatalf("read_committed with ktx-stuck open: %v", got)
	}

	out := tool("list")
	must("list", out, `^TransactionalId\s*\tCoordinator\tProducerId\s*\tTransactionState\s*\t\n`)
	must("list", out, fmt.Sprintf(`(?m)^ktx-done\s*\t1\s*\t%d\s*\tCompleteCommit\s*\t$`, donePid))
	must("list", out, fmt.Sprintf(`(?m)^ktx-stuck\s*\t1\s*\t%d\s*\tOngoing\s*\t$`, stuckPid))

	out = tool("describe", "--transactional-id", "ktx-stuck")
	must("describe", out, `^CoordinatorId\tTransactionalId\tProducerId\s*\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\tCurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions\t\n`)
	must("describe", out, fmt.Sprintf(`(?m)^1\s*\tktx-stuck\s*\t%d\s*\t%d\s*\tOngoing\s*\t300000\s*\t\d{13}\s*\t\d+\s*\tktx-0\s*\t$`, stuckPid, stuckEpoch))

	out = tool("describe-producers", "--topic", topic, "--partition", "0")
	must("describe-producers", out, `^ProducerId\s*\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\s*\tCurrentTransactionStartOffset\t\n`)
	must("describe-producers", out, fmt.Sprintf(`(?m)^%d\s*\t%d\s*\t-1\s*\t2\s*\t\d{13}\s*\t3\s*\t$`, stuckPid, stuckEpoch))
	// LatestCoordinatorEpoch is the coordinator epoch of the producer's
	// last marker here (0: this gateway's first start), as Kafka keeps it;
	// -1 for a producer that never had one, as ktx-stuck, whose
	// transaction is open. The commit (transaction.version 2) wrote its marker
	// at the bumped epoch, which starts the producer's state there over:
	// last sequence -1, as Kafka's producer state has it.
	must("describe-producers", out, fmt.Sprintf(`(?m)^%d\s*\t\d+\s*\t0\s*\t-1\s*\t\d{13}\s*\tNone\s*\t$`, donePid))

	// Open for more than 0 minutes, but its coordinator holds ktx-0: not
	// hanging.
	out = tool("find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0")
	if want := "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t\n"; out != want {
		t.Fatalf("find-hanging: got\n%q\nwant only the header\n%q", out, want)
	}

	// The operator aborts it by its start offset.
	tool("abort", "--topic", topic, "--partition", "0", "--start-offset", "3")
	out = tool("describe-producers", "--topic", topic, "--partition", "0")
	must("describe-producers after abort", out, fmt.Sprintf(`(?m)^%d\s*\t%d\s*\t0\s*\t2\s*\t\d{13}\s*\tNone\s*\t$`, stuckPid, stuckEpoch))
	if got := readAll(t, gw.Addr, kgo.ReadCommitted(), 3, topic); strings.Join(got, ",") != "done-0,done-1,after" {
		t.Fatalf("read_committed after the abort: %v", got)
	}
	if o := endOffset(t, newClient(t, gw.Addr), topic); o != 8 {
		t.Fatalf("end offset after the abort marker: %d, want 8", o)
	}

	// The stuck producer commits: its coordinator writes a commit marker
	// to ktx-0, where its transaction is over; the aborted records stay
	// aborted.
	if err := stuck.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the operator's abort: %v", err)
	}
	if got := readAll(t, gw.Addr, kgo.ReadCommitted(), 3, topic); strings.Join(got, ",") != "done-0,done-1,after" {
		t.Fatalf("read_committed after the stuck producer's commit: %v", got)
	}
	out = tool("list")
	must("list after", out, fmt.Sprintf(`(?m)^ktx-stuck\s*\t1\s*\t%d\s*\tCompleteCommit\s*\t$`, stuckPid))
}

// TestJavaToolsCoordinatorEpochAfterRestart: the coordinator epoch moves
// on with each start of the gateway, as a Kafka coordinator's does with its
// state partition's leader epoch. kafka-transactions describe-producers
// shows the epoch of the producer's last marker: 0 from the first start,
// 1 after a kill -9 and a restart on the same data.
func TestJavaToolsCoordinatorEpochAfterRestart(t *testing.T) {
	t.Parallel()
	needJava(t)
	g := newProxiedGateway(t, 1<<62, t.TempDir(), "--transactions=enabled")
	const topic = "kce"
	g.createTopic(topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	commitOne := func(v string) int64 {
		t.Helper()
		cl := newClient(t, g.proxy.Addr(), kgo.TransactionalID("kce"))
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		pid, _, err := cl.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	latestCoordinatorEpoch := func(pid int64) string {
		t.Helper()
		out, errOut := kafkaTool(t, g.proxy.Addr(), "org.apache.kafka.tools.TransactionsCommand",
			"describe-producers", "--topic", topic, "--partition", "0")
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s*\t\d+\s*\t(-?\d+)\s*\t`, pid)).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("describe-producers lists no producer %d:\n%s\nstderr: %s", pid, out, errOut)
		}
		return m[1]
	}
	pid := commitOne("first")
	if e := latestCoordinatorEpoch(pid); e != "0" {
		t.Fatalf("after the first start's commit: LatestCoordinatorEpoch %s, want 0", e)
	}
	g.killAndRestart()
	if again := commitOne("second"); again != pid {
		t.Fatalf("producer id %d after the restart, want %d (kept per transactional id)", again, pid)
	}
	if e := latestCoordinatorEpoch(pid); e != "1" {
		t.Fatalf("after the restarted gateway's commit: LatestCoordinatorEpoch %s, want 1", e)
	}
}
