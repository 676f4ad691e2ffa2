package iggy

import (
	"context"
	"testing"
)

func TestProducerIDMarks(t *testing.T) {
	t.Parallel()
	eachServer(t, testProducerIDMarks)
}

func testProducerIDMarks(t *testing.T, e *env) {
	ctx := context.Background()
	if m, err := e.store.LoadProducerIDMark(ctx, 3); err != nil || m != 0 {
		t.Fatalf("empty: %d, %v", m, err)
	}
	for _, step := range []struct {
		inst uint16
		mark uint64
	}{{3, 100}, {4, 5000}, {3, 70_000}, {3, 500}} {
		if err := e.store.StoreProducerIDMark(ctx, step.inst, step.mark); err != nil {
			t.Fatalf("store %+v: %v", step, err)
		}
	}
	if m, err := e.store.LoadProducerIDMark(ctx, 3); err != nil || m != 70_000 {
		t.Fatalf("instance 3: %d, %v", m, err)
	}
	if m, err := e.store.LoadProducerIDMark(ctx, 4); err != nil || m != 5000 {
		t.Fatalf("instance 4: %d, %v", m, err)
	}
	// A new client (a restarted gateway) reads the same marks.
	s2 := e.another(t)
	if m, err := s2.LoadProducerIDMark(ctx, 3); err != nil || m != 70_000 {
		t.Fatalf("after reconnect: %d, %v", m, err)
	}
}
