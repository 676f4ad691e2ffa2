package txn

import (
	"context"
	"testing"
	"time"
)

// TestCoordinatorEpochMovesOnEachStart: the first start of a store is
// coordinator epoch 0, each later one the last plus one (as a Kafka
// coordinator's epoch is its state partition's leader epoch, which a
// restart moves on); the epoch is stored before any marker is written,
// and the markers of a transaction a start finishes carry that start's
// epoch.
func TestCoordinatorEpochMovesOnEachStart(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store := &memStore{}
	env := newEnv()
	start := func() *Coordinator {
		t.Helper()
		co := newCo(store, env, &now)
		if err := co.Load(ctx); err != nil {
			t.Fatal(err)
		}
		return co
	}
	co := start()
	if co.Epoch() != 0 {
		t.Fatalf("first start: epoch %d, want 0", co.Epoch())
	}
	r := co.InitProducerID(ctx, "t", 60000, -1, -1, 4)
	if code := co.CheckWrite(ctx, "t", r.ProducerID, r.Epoch, pa, true); code != 0 {
		t.Fatal(code)
	}
	if e := co.End(ctx, "t", r.ProducerID, r.Epoch, true, false, false); e.Code != 0 {
		t.Fatalf("end: %+v", e)
	}
	if len(env.markers) != 1 || env.markers[0].coord != 0 {
		t.Fatalf("markers %+v, want one at coordinator epoch 0", env.markers)
	}

	// A transaction left prepared by a crash: the next start finishes it
	// at its own epoch.
	if code := co.CheckWrite(ctx, "t", r.ProducerID, r.Epoch, pb, true); code != 0 {
		t.Fatal(code)
	}
	env.failing = true
	if e := co.End(ctx, "t", r.ProducerID, r.Epoch, false, false, false); e.Code == 0 {
		t.Fatalf("end with the store down: %+v, want an error", e)
	}
	env.failing = false
	for want := int32(1); want <= 3; want++ {
		if got := start().Epoch(); got != want {
			t.Fatalf("start %d: epoch %d, want %d", want+1, got, want)
		}
	}
	if n := len(env.markers); n != 2 || env.markers[1].coord != 1 || env.markers[1].commit {
		t.Fatalf("markers %+v, want the abort finished by the second start, at coordinator epoch 1", env.markers)
	}

	// Unreadable: counted as bad and started over at 0.
	store.mu.Lock()
	store.kv[keyEpoch] = []byte{1}
	store.mu.Unlock()
	if got := start().Epoch(); got != 0 {
		t.Fatalf("after an unreadable stored epoch: %d, want 0", got)
	}
}
