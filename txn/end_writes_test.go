package txn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// countingStore counts the durable (synced) and lazy writes of the state.
type countingStore struct {
	*memStore
	puts, lazy atomic.Int64
}

func (c *countingStore) PutTxnStates(ctx context.Context, es []bridge.TxnStateEntry) error {
	c.puts.Add(1)
	return c.memStore.PutTxnStates(ctx, es)
}

func (c *countingStore) PutTxnStatesLazy(ctx context.Context, es []bridge.TxnStateEntry) error {
	c.lazy.Add(1)
	return c.memStore.PutTxnStatesLazy(ctx, es)
}

// TestEndV2StoresTwice: a v2 EndTxn stores the Prepare state with the
// bumped epoch durably (a synced write on the embedded store, the cost of
// a transaction), then the complete state lazily, and a coordinator loaded
// from that state knows the bump: the client's retry of the end is
// answered with the new epoch.
func TestEndV2StoresTwice(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store := &countingStore{memStore: &memStore{}}
	env := newEnv()
	co := New(Options{Store: store, Env: env, MaxTimeout: 15 * time.Minute, Now: func() time.Time { return now }})
	if err := co.Load(ctx); err != nil {
		t.Fatal(err)
	}
	init := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	if code := co.CheckWrite(ctx, "t", init.ProducerID, init.Epoch, pa, true); code != 0 {
		t.Fatal(code)
	}
	before, lazyBefore := store.puts.Load(), store.lazy.Load()
	end := co.End(ctx, "t", init.ProducerID, init.Epoch, true, true, false)
	if end.Code != 0 || end.ProducerID != init.ProducerID || end.Epoch != init.Epoch+1 {
		t.Fatalf("end: %+v", end)
	}
	if n, l := store.puts.Load()-before, store.lazy.Load()-lazyBefore; n != 1 || l != 1 {
		t.Errorf("EndTxn v2 made %d durable and %d lazy state writes, want 1 (Prepare with the bump) and 1 (complete)", n, l)
	}
	again := New(Options{Store: store, Env: env, MaxTimeout: 15 * time.Minute, Now: func() time.Time { return now }})
	if err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if retry := again.End(ctx, "t", init.ProducerID, init.Epoch, true, true, false); retry != end {
		t.Errorf("retried end after a restart: %+v, want %+v", retry, end)
	}
	if code := again.CheckWrite(ctx, "t", init.ProducerID, end.Epoch, pa, true); code != 0 {
		t.Errorf("the next transaction at the bumped epoch: %d", code)
	}
}

// A crash that loses the lazily stored complete state leaves the durable
// prepared one: the next start finishes the transaction again without
// writing its markers twice, and the client's retry of the end is
// answered as before the crash.
func TestCompleteLostInCrashFinishedAgain(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store := &memStore{}
	env := newEnv()
	open := func() *Coordinator {
		co := New(Options{Store: store, Env: env, MaxTimeout: 15 * time.Minute, Now: func() time.Time { return now }})
		if err := co.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return co
	}
	co := open()
	init := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	if code := co.CheckWrite(ctx, "t", init.ProducerID, init.Epoch, pa, true); code != 0 {
		t.Fatal(code)
	}
	end := co.End(ctx, "t", init.ProducerID, init.Epoch, true, true, false)
	if end.Code != 0 {
		t.Fatalf("end: %+v", end)
	}
	markers := len(env.markers)
	if markers != 1 {
		t.Fatalf("%d markers written, want 1", markers)
	}
	store.mu.Lock()
	lost := len(store.undo)
	store.mu.Unlock()
	if lost == 0 {
		t.Fatal("the complete state was stored durably: nothing for a crash to lose")
	}
	store.crash()
	again := open()
	if n := len(env.markers); n != markers {
		t.Fatalf("the restart wrote %d markers more", n-markers)
	}
	if d, ok := again.Describe("t"); !ok || d.State != CompleteCommit {
		t.Fatalf("after the restart: %+v, want %s", d, CompleteCommit)
	}
	if retry := again.End(ctx, "t", init.ProducerID, init.Epoch, true, true, false); retry != end {
		t.Errorf("retried end after the crash: %+v, want %+v", retry, end)
	}
	if code := again.CheckWrite(ctx, "t", init.ProducerID, end.Epoch, pa, true); code != 0 {
		t.Errorf("the next transaction at the bumped epoch: %d", code)
	}
}
