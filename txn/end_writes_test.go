package txn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// countingStore counts the synced writes of the state.
type countingStore struct {
	*memStore
	puts atomic.Int64
}

func (c *countingStore) PutTxnStates(ctx context.Context, es []bridge.TxnStateEntry) error {
	c.puts.Add(1)
	return c.memStore.PutTxnStates(ctx, es)
}

// TestEndV2StoresTwice: a v2 EndTxn stores the Prepare state, then the
// complete state with the bumped epoch in one write (each is a synced
// write on the embedded store, the cost of a transaction), and a
// coordinator loaded from that state knows the bump: the client's retry
// of the end is answered with the new epoch.
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
	before := store.puts.Load()
	end := co.End(ctx, "t", init.ProducerID, init.Epoch, true, true, false)
	if end.Code != 0 || end.ProducerID != init.ProducerID || end.Epoch != init.Epoch+1 {
		t.Fatalf("end: %+v", end)
	}
	if n := store.puts.Load() - before; n != 2 {
		t.Errorf("EndTxn v2 made %d state writes, want 2 (Prepare; complete with the bump)", n)
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
