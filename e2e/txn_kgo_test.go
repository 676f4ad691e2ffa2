package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/loop"
)

// withTransactions turns transactions on (--transactions enabled) at
// transaction.version v.
func withTransactions(v int16) gwOption {
	return func(h *handlers.Config, _ *loop.Config) {
		h.Transactions = handlers.TxnConfig{Enabled: true, Version: v, MaxTimeout: 15 * time.Minute, CheckInterval: 100 * time.Millisecond}
	}
}

// readAll reads every record of topics from the start with isolation
// level iso until the partitions' ends (as the client sees them) are
// reached, and returns their values.
func readAll(t *testing.T, addr string, iso kgo.IsolationLevel, want int, topics ...string) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(got) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Anything beyond want would be a bug too: one more short poll.
	sctx, scancel := context.WithTimeout(context.Background(), time.Second)
	defer scancel()
	cl.PollFetches(sctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	return got
}

// TestTransactionsFranzGo: a franz-go transactional producer commits one
// transaction and aborts the next across 4 partitions of 2 topics; a
// read_committed consumer sees exactly the committed records, a
// read_uncommitted one every record, at both transaction versions.
func TestTransactionsFranzGo(t *testing.T) {
	t.Parallel()
	for _, v := range []int16{1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			t.Parallel()
			gw := startGateway(t, withTransactions(v))
			a, b := fmt.Sprintf("txa-%d", v), fmt.Sprintf("txb-%d", v)
			admin := newClient(t, gw.Addr)
			createTopic(t, admin, a, 2)
			createTopic(t, admin, b, 2)
			p := newClient(t, gw.Addr, kgo.TransactionalID("tx-"+a), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			send := func(tag string) {
				if err := p.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for i := range 20 {
					topic := a
					if i%2 == 1 {
						topic = b
					}
					r := &kgo.Record{Topic: topic, Partition: int32(i/2) % 2, Value: fmt.Appendf(nil, "%s-%d", tag, i)}
					if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
						t.Fatalf("produce %s: %v", tag, err)
					}
				}
			}
			send("committed")
			if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("commit: %v", err)
			}
			send("aborted")
			if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
				t.Fatalf("abort: %v", err)
			}
			send("last")
			if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("commit: %v", err)
			}
			committed := readAll(t, gw.Addr, kgo.ReadCommitted(), 40, a, b)
			if len(committed) != 40 {
				t.Fatalf("read_committed got %d records, want 40: %v", len(committed), committed)
			}
			for _, v := range committed {
				if len(v) >= 7 && v[:7] == "aborted" {
					t.Fatalf("read_committed returned aborted record %q", v)
				}
			}
			all := readAll(t, gw.Addr, kgo.ReadUncommitted(), 60, a, b)
			if len(all) != 60 {
				t.Fatalf("read_uncommitted got %d records, want 60", len(all))
			}
		})
	}
}

// TestTransactionsTimeoutAndFence: a transaction left open past its
// timeout is aborted and the last stable offset moves on (a
// read_committed consumer sees the records produced after it); a second
// producer with the same transactional id fences the first.
func TestTransactionsTimeoutAndFence(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withTransactions(2))
	topic := "tx-timeout"
	admin := newClient(t, gw.Addr)
	createTopic(t, admin, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	stuck := newClient(t, gw.Addr, kgo.TransactionalID("tx-stuck"), kgo.TransactionTimeout(time.Second))
	if err := stuck.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := stuck.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plain := newClient(t, gw.Addr)
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Until the timeout aborts it, read_committed sees nothing.
	await.True(t, 20*time.Second, "the timed-out transaction aborted and the LSO past it", func() bool {
		got := readAll(t, gw.Addr, kgo.ReadCommitted(), 1, topic)
		return len(got) == 1 && got[0] == "after"
	})
	in, ok := gw.G.Txn.Describe("tx-stuck")
	if !ok || in.State.String() != "CompleteAbort" {
		t.Fatalf("timed-out transaction: %+v", in)
	}

	// Fencing: a second instance with the same id.
	first := newClient(t, gw.Addr, kgo.TransactionalID("tx-fence"))
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := first.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	second := newClient(t, gw.Addr, kgo.TransactionalID("tx-fence"))
	if err := second.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := second.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("winner")}).FirstErr(); err != nil {
		t.Fatalf("second instance: %v", err)
	}
	if err := first.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced instance committed")
	}
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("second instance commit: %v", err)
	}
	got := readAll(t, gw.Addr, kgo.ReadCommitted(), 2, topic)
	if len(got) != 2 || got[1] != "winner" {
		t.Fatalf("read_committed after fencing: %v", got)
	}
}
