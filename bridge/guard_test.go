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

// hangStore is a Backend whose calls block until release is closed; its
// health can be set. Only what the tests call is implemented.
type hangStore struct {
	Backend
	release chan struct{}
	entered atomic.Int32 // Append and Poll calls that reached the store

	mu      sync.Mutex
	h       Health
	changed chan struct{}
}

func newHangStore() *hangStore {
	return &hangStore{release: make(chan struct{}), changed: make(chan struct{})}
}

func (s *hangStore) Capabilities() Capabilities { return Capabilities{Health: true} }

func (s *hangStore) Health() (Health, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h, s.changed
}

func (s *hangStore) setHealth(h Health) {
	s.mu.Lock()
	s.h = h
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *hangStore) Append(ctx context.Context, stream, topic string, partition int32, batch []byte) (uint64, error) {
	s.entered.Add(1)
	<-s.release
	return 7, nil
}

func (s *hangStore) AppendStaged(ctx context.Context, stream, topic string, partition int32, batch []byte, _ Prepared) (uint64, func(context.Context) error, error) {
	base, err := s.Append(ctx, stream, topic, partition, batch)
	return base, nil, err
}

func (s *hangStore) Topics(ctx context.Context, stream string) ([]TopicInfo, error) {
	<-s.release
	return nil, nil
}

func (s *hangStore) Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func([]byte) bool) error {
	s.entered.Add(1)
	<-s.release
	fn(late)
	return nil
}

var late = []byte("late") // what hangStore.Poll feeds, allocated once

func (s *hangStore) Close() error {
	<-s.release
	return nil
}

// A hung call is answered at its deadline, the hung count goes up and back
// down when the call finally returns, and past MaxHung calls are refused
// at once.
func TestStoreFailGuardDeadline(t *testing.T) {
	// Not parallel: it bounds how fast calls are answered (20ms), which load from parallel tests would stretch.
	s := newHangStore()
	g := Guard(s, GuardOptions{Timeout: 50 * time.Millisecond, MaxHung: 2, CloseTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		start := time.Now()
		_, err := g.Append(ctx, "s", "t", 0, []byte("b"))
		if !errors.Is(err, ErrAbandoned) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hung append: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("hung append answered after %v", d)
		}
	}
	if g.Hung() != 2 {
		t.Fatalf("hung %d, want 2", g.Hung())
	}
	if h, _ := g.Health(); h.State != Degraded {
		t.Fatalf("health with MaxHung hung calls: %+v", h)
	}
	start := time.Now()
	if _, err := g.Topics(ctx, "s"); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrAbandoned) || time.Since(start) > 20*time.Millisecond {
		t.Fatalf("call past MaxHung: %v after %v", err, time.Since(start))
	}
	if err := g.Close(); err == nil {
		t.Fatal("Close of a hung store returned nil")
	}
	close(s.release)
	await.Until(t, 5*time.Second, func() error {
		if n := g.Hung(); n != 0 {
			return fmt.Errorf("hung count stuck at %d", n)
		}
		return nil
	})
	if base, err := g.Append(ctx, "s", "t", 0, nil); err != nil || base != 7 {
		t.Fatalf("append after release: %d %v", base, err)
	}
}

// A write in flight is cut off as soon as the store reports a failure, and
// later writes are refused at once with the store's cause; reads are not.
func TestStoreFailGuardFailureCutsWrites(t *testing.T) {
	t.Parallel()
	s := newHangStore()
	g := Guard(s, GuardOptions{Timeout: time.Hour})
	ctx := context.Background()
	cause := errors.New("disk full")
	errc := make(chan error, 1)
	go func() {
		_, err := g.Append(ctx, "s", "t", 0, nil)
		errc <- err
	}()
	await.True(t, 5*time.Second, "the write in the store", func() bool { return s.entered.Load() == 1 })
	s.setHealth(Health{State: Degraded, Cause: cause, Since: time.Now()})
	select {
	case err := <-errc:
		if !errors.Is(err, cause) || !errors.Is(err, ErrAbandoned) {
			t.Fatalf("write cut by failure: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("write in flight not answered when the store failed")
	}
	if _, err := g.Append(ctx, "s", "t", 0, nil); !errors.Is(err, cause) || errors.Is(err, ErrAbandoned) {
		t.Fatalf("write on a failed store: %v", err)
	}
	// A read is not cut short by a write failure; it finishes normally.
	var got []byte
	done := make(chan error, 1)
	go func() {
		done <- g.Poll(ctx, "s", "t", 0, 0, 1, func(b []byte) bool { got = append(got, b...); return true })
	}()
	await.True(t, 5*time.Second, "the read in the store", func() bool { return s.entered.Load() == 2 })
	close(s.release)
	if err := <-done; err != nil || string(got) != "late" {
		t.Fatalf("poll: %q %v", got, err)
	}
}

// Once a Poll was abandoned its fn is never called: the caller's buffers
// are its own again.
func TestStoreFailGuardPollAfterAbandon(t *testing.T) {
	t.Parallel()
	s := newHangStore()
	g := Guard(s, GuardOptions{Timeout: 20 * time.Millisecond})
	called := make(chan struct{}, 1)
	err := g.Poll(context.Background(), "s", "t", 0, 0, 1, func([]byte) bool { called <- struct{}{}; return true })
	if !errors.Is(err, ErrAbandoned) {
		t.Fatalf("hung poll: %v", err)
	}
	close(s.release)
	await.True(t, 5*time.Second, "no call hung", func() bool { return g.Hung() == 0 })
	select {
	case <-called:
		t.Fatal("fn called after Poll returned")
	default:
	}
}

// batchStore records how commits reach it: through CommitOffsets in one
// call, or one CommitOffset each.
type batchStore struct {
	Backend
	batched          bool
	batches, singles int
}

func (s *batchStore) Capabilities() Capabilities        { return Capabilities{BatchedCommits: s.batched} }
func (s *batchStore) Health() (Health, <-chan struct{}) { return Health{}, nil }

func (s *batchStore) CommitOffsets(ctx context.Context, stream, group string, offs []GroupOffset) []error {
	s.batches++
	errs := make([]error, len(offs))
	errs[len(offs)-1] = ErrOffsetNotStorable
	return errs
}

func (s *batchStore) CommitOffset(ctx context.Context, stream, group, topic string, partition int32, o CommittedOffset) error {
	s.singles++
	return nil
}

// The guard keeps a store's batched offset commit (the Iggy store's one
// group-log append per OffsetCommit): without it the handler would fall
// back to one write per partition. A store without BatchedCommits gets one
// guarded CommitOffset per entry, each under its own deadline.
func TestGuardKeepsBatchedCommits(t *testing.T) {
	t.Parallel()
	inner := &batchStore{batched: true}
	g := Guard(inner, GuardOptions{Timeout: time.Second})
	offs := []GroupOffset{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}
	errs := g.CommitOffsets(context.Background(), "s", "g", offs)
	if inner.batches != 1 || inner.singles != 0 {
		t.Fatalf("batches=%d singles=%d, want 1 and 0", inner.batches, inner.singles)
	}
	if len(errs) != 3 || errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrOffsetNotStorable) {
		t.Fatalf("errs = %v", errs)
	}
	single := &batchStore{}
	errs = Guard(single, GuardOptions{Timeout: time.Second}).CommitOffsets(context.Background(), "s", "g", offs)
	if single.batches != 0 || single.singles != 3 || len(errs) != 3 || errs[2] != nil {
		t.Fatalf("without BatchedCommits: batches=%d singles=%d errs=%v, want 0, 3 and no error", single.batches, single.singles, errs)
	}
}

// answerStore has no health of its own (as Iggy): the guard judges it by
// its answers. Topics answers at once; Topic waits until its context ends
// (the guard's deadline, or its own wait when set) and returns fail's error.
type answerStore struct {
	Backend
	wait time.Duration
	fail func(ctx context.Context) error
}

func (s *answerStore) Capabilities() Capabilities        { return Capabilities{} }
func (s *answerStore) Health() (Health, <-chan struct{}) { return Health{}, nil }

func (s *answerStore) Topics(ctx context.Context, stream string) ([]TopicInfo, error) {
	return nil, nil
}

func (s *answerStore) Topic(ctx context.Context, stream, topic string) (TopicInfo, error) {
	if s.wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.wait)
		defer cancel()
	}
	<-ctx.Done()
	return TopicInfo{}, s.fail(ctx)
}

// A hung server's call fails at the guard's deadline, when the store ends
// it too (a connection's deadline is the call's): whichever of the two
// sees the deadline first, the failure is newer than the last answer and
// the store is degraded.
func TestGuardHealthFailureAtDeadline(t *testing.T) {
	t.Parallel()
	s := &answerStore{fail: func(ctx context.Context) error {
		return fmt.Errorf("%w: connection: %w", ErrUnavailable, ctx.Err())
	}}
	for i := 0; i < 300; i++ {
		g := Guard(s, GuardOptions{Timeout: time.Millisecond})
		// An answer first; under load even an instant one can miss 1ms.
		await.Until(t, 5*time.Second, func() error { _, err := g.Topics(context.Background(), "s"); return err })
		if _, err := g.Topic(context.Background(), "s", "t"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d on a hung server: %v", i, err)
		}
		if h, _ := g.Health(); h.State != Degraded {
			t.Fatalf("call %d failed at its deadline after an answer, health %+v", i, h)
		}
	}
}

// A call that ran out of time inside the store (here waiting for a
// connection a hung call holds: plain context.DeadlineExceeded) is no
// answer: the store is degraded.
func TestGuardHealthTimedOutInStore(t *testing.T) {
	t.Parallel()
	s := &answerStore{wait: time.Millisecond, fail: func(ctx context.Context) error {
		return fmt.Errorf("iggy get topic: %w", ctx.Err())
	}}
	g := Guard(s, GuardOptions{Timeout: time.Hour})
	if _, err := g.Topics(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Topic(context.Background(), "s", "t"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAbandoned) {
		t.Fatalf("call that timed out in the store: %v", err)
	}
	if h, _ := g.Health(); h.State != Degraded || !errors.Is(h.Cause, context.DeadlineExceeded) {
		t.Fatalf("health after a call timed out in the store: %+v", h)
	}
	if _, err := g.Topics(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	if h, _ := g.Health(); h.State != Healthy {
		t.Fatalf("health after the next answer: %+v", h)
	}
}
