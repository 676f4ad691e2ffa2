package iggy

import (
	"context"
	"fmt"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// txnGenerations lists the transaction-state generations in the state
// stream.
func txnGenerations(t *testing.T, s *Store) []int {
	t.Helper()
	topics, err := s.Topics(context.Background(), s.c.opts.StateStream)
	if err != nil {
		t.Fatal(err)
	}
	var gens []int
	for _, ti := range topics {
		if g, ok := txnGeneration(ti.Name); ok {
			gens = append(gens, g)
		}
	}
	return gens
}

// foldOf is what TxnStates answers.
func foldOf(t *testing.T, s *Store) map[string]string {
	t.Helper()
	got := map[string]string{}
	if err := s.TxnStates(context.Background(), func(k string, v []byte) { got[k] = string(v) }); err != nil {
		t.Fatal(err)
	}
	return got
}

// The transaction state survives a reopen, is compacted into a sealed
// generation once superseded messages pile up (the old one deleted), and
// an unsealed generation (a compaction cut short) is ignored and deleted.
func TestTxnStateCompaction(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.store.txn.slack = 8
		put := func(s *Store, k, v string) {
			t.Helper()
			var val []byte
			if v != "" {
				val = []byte(v)
			}
			if err := s.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: k, Value: val}}); err != nil {
				t.Fatal(err)
			}
		}
		put(e.store, "t/b", "b1")
		put(e.store, "t/gone", "x")
		for i := range 30 {
			put(e.store, "t/a", fmt.Sprint("a", i))
		}
		put(e.store, "t/gone", "")
		want := map[string]string{"t/a": "a29", "t/b": "b1"}
		if got := foldOf(t, e.store); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("fold: %v, want %v", got, want)
		}
		gens := txnGenerations(t, e.store)
		if len(gens) != 1 || gens[0] == 0 {
			t.Fatalf("generations after compaction: %v, want one above 0", gens)
		}

		// A reopened store reads the compacted generation.
		again, err := Open(ctx, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		if got := foldOf(t, again); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("fold after reopening: %v, want %v", got, want)
		}

		// A compaction cut short: the next generation holds part of the
		// state and no seal.
		cut := txnTopic(gens[0] + 1)
		if _, err := again.appendState(ctx, &cut, stateMsg{payload: bridge.AppendTxnStateRecord(nil, bridge.TxnStateEntry{Key: "t/a", Value: []byte("stale")})}); err != nil {
			t.Fatal(err)
		}
		third, err := Open(ctx, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		defer third.Close()
		if got := foldOf(t, third); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("fold with an unsealed generation: %v, want %v", got, want)
		}
		if g := txnGenerations(t, third); len(g) != 1 || g[0] != gens[0] {
			t.Fatalf("generations after the reopen: %v, want [%d]", g, gens[0])
		}
		put(third, "t/c", "c1")
		want["t/c"] = "c1"
		if got := foldOf(t, third); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("fold after a put: %v, want %v", got, want)
		}
	})
}
