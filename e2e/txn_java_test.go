package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// txnJava runs TxnCheck.java with args and returns its stdout, failing t
// when it does not exit 0 within 3 minutes.
func txnJava(t *testing.T, args ...string) string {
	t.Helper()
	src := javaSource(t, "java/src/TxnCheck.java")
	out, errOut, err := javaRun(t, 3*time.Minute, "", src, args...)
	if err != nil {
		t.Fatalf("TxnCheck %v: %v\nstdout: %s\nstderr: %s", args, err, out, tail(errOut, 60))
	}
	return out
}

// TestTransactionsJava: the Java 4.x producer commits, aborts and commits
// across 4 partitions of 2 topics; a read_committed consumer sees exactly
// the 40 committed records, a read_uncommitted one all 60; a second
// instance with the same transactional id fences the first. At
// transaction.version 1 (the Java client's pre-KIP-890 protocol) and 2.
func TestTransactionsJava(t *testing.T) {
	t.Parallel()
	needJava(t)
	for _, v := range []int16{1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, withTransactions(v))
			a, b := fmt.Sprintf("jtx-a-%d", v), fmt.Sprintf("jtx-b-%d", v)
			admin := newClient(t, gw.Addr)
			createTopic(t, admin, a, 2)
			createTopic(t, admin, b, 2)
			out := txnJava(t, "commit-abort", gw.Addr, "jtx-"+a, a, b)
			if !strings.Contains(out, "COMMITTED 40 aborted-seen 0") || !strings.Contains(out, "UNCOMMITTED 60") {
				t.Fatalf("TxnCheck commit-abort:\n%s", out)
			}
			fenceTopic := fmt.Sprintf("jtx-fence-%d", v)
			createTopic(t, admin, fenceTopic, 1)
			out = txnJava(t, "fence", gw.Addr, "jtx-fence", fenceTopic)
			if !strings.Contains(out, "FENCED\n") || !strings.Contains(out, "SECOND-COMMITTED") || !strings.Contains(out, "READ winner\n") {
				t.Fatalf("TxnCheck fence:\n%s", out)
			}
		})
	}
}

// TestTransactionsJavaConsumeTransformProduce: a Java consume-transform-
// produce loop with sendOffsetsToTransaction: the output topic read
// read_committed holds every input record exactly once, and the group's
// committed offsets are the input's end.
func TestTransactionsJavaConsumeTransformProduce(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t, withTransactions(2))
	in, out := "ctp-in", "ctp-out"
	cl := newClient(t, gw.Addr)
	createTopic(t, cl, in, 2)
	createTopic(t, cl, out, 2)
	const n = 300
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want []string
	for i := range n {
		v := fmt.Sprintf("rec-%03d", i)
		want = append(want, "out-"+v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: in, Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	res := txnJava(t, "ctp", gw.Addr, "ctp-txn", "ctp-group", in, out, fmt.Sprint(n))
	if !strings.Contains(res, "CTP-DONE") {
		t.Fatalf("TxnCheck ctp:\n%s", res)
	}
	got := readAll(t, gw.Addr, kgo.ReadCommitted(), n, out)
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("output read_committed: %d records, want %d exactly once", len(got), n)
	}
	adm := kadm.NewClient(cl)
	offs, err := adm.FetchOffsets(ctx, "ctp-group")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Fatalf("group committed %d in total, want %d", total, n)
	}
}

// committedLatest reads topic from the start read_committed until a
// second passes with nothing new, and returns the latest value per key.
func committedLatest(t *testing.T, addr, topic string) map[string]string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond))
	defer cl.Close()
	got := map[string]string{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = string(r.Value); n++ })
		if n == 0 {
			return got
		}
	}
}

// TestStreamsWordCountExactlyOnce: the Kafka Streams word count with
// processing.guarantee=exactly_once_v2 (transactions, a RocksDB store with
// a changelog) is killed with kill -9 while it counts and restarted with
// an empty state dir: it restores from the changelog read_committed, and
// the final counts equal the input exactly (no double counting). With the
// classic group protocol and with KIP-1071's streams group (where the
// restarted instance is a new member: the killed one keeps its tasks until
// its session ends, then they move).
func TestStreamsWordCountExactlyOnce(t *testing.T) {
	t.Parallel()
	needJar(t, "kafka-streams-*.jar")
	for _, protocol := range []string{"classic", "streams"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			streamsWordCountExactlyOnce(t, protocol)
		})
	}
}

func streamsWordCountExactlyOnce(t *testing.T, protocol string) {
	gw := startGateway(t, withTransactions(2))
	cl := newClient(t, gw.Addr)
	const app, in, out = "wc-eos", "wc-eos-lines", "wc-eos-counts"
	createTopic(t, cl, in, 2)
	createTopic(t, cl, out, 2)
	src := javaSource(t, "java/src/WordCount.java")
	want := map[string]int{}
	produceLines := func(from, to int) { produceWordLines(t, cl, in, from, to, want) }
	countsMatch := func() error {
		return countsEqual(committedLatest(t, gw.Addr, out), want)
	}
	produceLines(0, 200)
	wc := javaStart(t, "WordCount EOS", src, gw.Addr, app, in, out, t.TempDir(), "exactly_once_v2", "group.protocol="+protocol)
	wc.waitOutput(t, "RUNNING", 3*time.Minute)
	if err := await.Poll(2*time.Minute, time.Second, countsMatch); err != nil {
		t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
	}
	// More lines, and a kill -9 as soon as their counting shows in the
	// output (a commit of them happened; more are on the way).
	before := committedLatest(t, gw.Addr, out)
	produceLines(200, 1200)
	await.True(t, time.Minute, "the word count moved on", func() bool {
		got := committedLatest(t, gw.Addr, out)
		for w, n := range got {
			if n != before[w] {
				return true
			}
		}
		return false
	})
	wc.kill()
	wc = javaStart(t, "WordCount EOS (restarted)", src, gw.Addr, app, in, out, t.TempDir(), "exactly_once_v2", "group.protocol="+protocol)
	wc.waitOutput(t, "RUNNING", 3*time.Minute)
	if err := await.Poll(3*time.Minute, time.Second, countsMatch); err != nil {
		t.Fatalf("still not so after %v: %v", 3*time.Minute, err)
	}
	wc.stop(t, time.Minute)
}
