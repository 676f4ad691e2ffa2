package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
)

// fnStore is a hangStore (health that can be set) whose Append runs the
// test's function.
type fnStore struct {
	*hangStore
	append func(ctx context.Context, partition int32) (uint64, error)
}

func newFnStore(fn func(ctx context.Context, partition int32) (uint64, error)) *fnStore {
	return &fnStore{hangStore: newHangStore(), append: fn}
}

func (s *fnStore) Append(ctx context.Context, stream, topic string, partition int32, batch []byte) (uint64, error) {
	s.entered.Add(1)
	return s.append(ctx, partition)
}

// Hung calls keep their workers; the calls after them get new ones and
// are answered. Once the hung calls return, the idle workers end.
func TestGuardWorkersGrowPastHungCalls(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := newFnStore(func(ctx context.Context, p int32) (uint64, error) {
		if p < 0 {
			<-release
		}
		return uint64(p), nil
	})
	g := Guard(s, GuardOptions{Timeout: 10 * time.Millisecond, MaxHung: 100})
	ctx := context.Background()
	const hung = 5
	for i := range hung {
		if _, err := g.Append(ctx, "s", "t", -1, nil); !errors.Is(err, ErrAbandoned) {
			t.Fatalf("hung append %d: %v", i, err)
		}
		if base, err := g.Append(ctx, "s", "t", int32(i), nil); err != nil || base != uint64(i) {
			t.Fatalf("append %d beside %d hung: %d %v", i, i+1, base, err)
		}
	}
	if n := g.Hung(); n != hung {
		t.Fatalf("hung %d, want %d", n, hung)
	}
	if n := g.workers.Load(); n <= hung {
		t.Fatalf("%d workers with %d hung calls", n, hung)
	}
	close(release)
	await.Until(t, 5*time.Second, func() error {
		g.reap() // as its timer does every workerIdle
		if n, w := g.Hung(), g.workers.Load(); n != 0 || w != 0 {
			return fmt.Errorf("%d hung, %d workers left after reap", n, w)
		}
		return nil
	})
	base, err := g.Append(ctx, "s", "t", 9, nil)
	if err != nil || base != 9 {
		t.Fatalf("append after the pool shrank: %d %v", base, err)
	}
}

// A call is reused only after it finished in time: a call that finishes
// just as its deadline passes (the worker and the caller race for it)
// never hands its result to a later call, nor a later call's to it.
func TestGuardReusedCallNoStaleResult(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	s := newFnStore(func(ctx context.Context, p int32) (uint64, error) {
		if n.Add(1)%3 == 0 {
			<-ctx.Done() // answers at the deadline, when the caller may give up
		}
		return uint64(p), nil
	})
	g := Guard(s, GuardOptions{Timeout: time.Millisecond, MaxHung: 1 << 20})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 300 {
				p := int32(w*1000 + i + 1)
				base, err := g.Append(context.Background(), "s", "t", p, nil)
				if err != nil && !errors.Is(err, ErrAbandoned) {
					t.Errorf("append %d: %v", p, err)
					return
				}
				if err == nil && base != uint64(p) {
					t.Errorf("append %d answered %d: another call's result", p, base)
					return
				}
			}
		})
	}
	wg.Wait()
	await.True(t, 5*time.Second, "no call hung", func() bool { return g.Hung() == 0 })
}

// The store's context: the guard's deadline, ended at it; the parent's
// deadline when earlier; the parent's cancellation; the end of a call cut
// short by a store failure; and contexts derived from it end with it.
func TestGuardCallContext(t *testing.T) {
	t.Parallel()
	type seen struct {
		deadline time.Time
		err      error
	}
	// waitStore's Append waits for its context to end and reports it.
	waitStore := func() (*fnStore, chan seen) {
		ch := make(chan seen, 1)
		return newFnStore(func(ctx context.Context, p int32) (uint64, error) {
			dl, ok := ctx.Deadline()
			if !ok {
				t.Error("store call without a deadline")
			}
			<-ctx.Done()
			ch <- seen{dl, ctx.Err()}
			return 0, ctx.Err()
		}), ch
	}

	t.Run("guard deadline", func(t *testing.T) {
		t.Parallel()
		s, ch := waitStore()
		g := Guard(s, GuardOptions{Timeout: 30 * time.Millisecond})
		before := time.Now()
		_, err := g.Append(context.Background(), "s", "t", 0, nil)
		after := time.Now()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("append past the guard's deadline: %v", err)
		}
		got := <-ch
		if !errors.Is(got.err, context.DeadlineExceeded) || got.deadline.Before(before.Add(30*time.Millisecond)) || got.deadline.After(after.Add(30*time.Millisecond)) {
			t.Fatalf("store saw deadline %v (call from %v to %v), err %v", got.deadline, before, after, got.err)
		}
	})

	t.Run("parent deadline", func(t *testing.T) {
		t.Parallel()
		s, ch := waitStore()
		g := Guard(s, GuardOptions{Timeout: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		want, _ := ctx.Deadline()
		if _, err := g.Append(ctx, "s", "t", 0, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("append past the parent's deadline: %v", err)
		}
		if got := <-ch; !got.deadline.Equal(want) || !errors.Is(got.err, context.DeadlineExceeded) {
			t.Fatalf("store saw deadline %v err %v, want %v", got.deadline, got.err, want)
		}
	})

	t.Run("parent cancelled", func(t *testing.T) {
		t.Parallel()
		s, ch := waitStore()
		g := Guard(s, GuardOptions{Timeout: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := g.Append(ctx, "s", "t", 0, nil)
			errc <- err
		}()
		await.True(t, 5*time.Second, "the call in the store", func() bool { return s.entered.Load() == 1 })
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("append whose parent was cancelled: %v", err)
		}
		if got := <-ch; !errors.Is(got.err, context.Canceled) {
			t.Fatalf("store saw %v", got.err)
		}
	})

	t.Run("store failed", func(t *testing.T) {
		t.Parallel()
		s, ch := waitStore()
		g := Guard(s, GuardOptions{Timeout: time.Hour})
		errc := make(chan error, 1)
		go func() {
			_, err := g.Append(context.Background(), "s", "t", 0, nil)
			errc <- err
		}()
		await.True(t, 5*time.Second, "the call in the store", func() bool { return s.entered.Load() == 1 })
		cause := errors.New("disk full")
		s.setHealth(Health{State: Degraded, Cause: cause})
		if err := <-errc; !errors.Is(err, ErrAbandoned) || !errors.Is(err, cause) {
			t.Fatalf("append cut by the store's failure: %v", err)
		}
		if got := <-ch; !errors.Is(got.err, context.Canceled) {
			t.Fatalf("store saw %v after its call was abandoned", got.err)
		}
	})

	t.Run("derived", func(t *testing.T) {
		t.Parallel()
		ended := make(chan error, 1)
		s := newFnStore(func(ctx context.Context, p int32) (uint64, error) {
			if p == 0 {
				// As the Iggy store's connection: an abort hung on the
				// context, stopped when the call answers in time.
				stop := context.AfterFunc(ctx, func() { t.Error("a stopped AfterFunc ran") })
				if !stop() {
					t.Error("stop of a pending AfterFunc returned false")
				}
				return 0, nil
			}
			ran := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ran) })
			d, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			<-d.Done()
			<-ran
			ended <- d.Err()
			return 0, d.Err()
		})
		g := Guard(s, GuardOptions{Timeout: 20 * time.Millisecond})
		for range 20 { // reused calls: a stopped AfterFunc never runs
			if _, err := g.Append(context.Background(), "s", "t", 0, nil); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := g.Append(context.Background(), "s", "t", 1, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("append past the deadline: %v", err)
		}
		if err := <-ended; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("derived context ended with %v", err)
		}
	})
}

// A guarded call allocates its job and nothing else per call once warm:
// Append and AppendStaged one job, Poll one job and its callback, other
// calls the closure holding the arguments and the task holding the
// results. A context, a timer, a goroutine or a channel per call would
// show here.
func TestGuardCallAllocs(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	if guardRace {
		t.Skip("the race detector allocates and empties sync.Pools")
	}
	s := newHangStore()
	close(s.release)
	g := Guard(s, GuardOptions{})
	ctx := context.Background()
	batch := make([]byte, 64)
	feed := func([]byte) bool { return true }
	for _, c := range []struct {
		name string
		max  float64
		f    func() error
	}{
		{"append", 1, func() error { _, err := g.Append(ctx, "s", "t", 0, batch); return err }},
		{"append staged", 1, func() error { _, _, err := g.AppendStaged(ctx, "s", "t", 0, batch, Prepared{}); return err }},
		{"poll", 2, func() error { return g.Poll(ctx, "s", "t", 0, 0, 1, feed) }},
		{"topics", 2, func() error { _, err := g.Topics(ctx, "s"); return err }},
	} {
		for range 100 {
			if err := c.f(); err != nil {
				t.Fatal(err)
			}
		}
		if n := testing.AllocsPerRun(1000, func() { _ = c.f() }); n > c.max {
			t.Errorf("%s: %v allocations per guarded call, want at most %v", c.name, n, c.max)
		}
	}
}
