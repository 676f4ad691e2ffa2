package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// A store failure is an answer, never a hang. Guarded puts every call of a
// Store under a deadline and runs it on a goroutine of its own, so a call
// stuck inside the engine (a full disk, a stopped Iggy server) cannot hold
// the worker that made it: the worker gets an error at the deadline, or at
// once when the store reports that its storage failed, and the stuck call
// is left to finish on its own ("hung"). Hung calls are counted; past
// GuardOptions.MaxHung new calls are refused at once, so a wedged engine
// cannot grow goroutines without bound.

// HealthState says whether a store serves.
type HealthState uint8

const (
	// Healthy: the store serves every call.
	Healthy HealthState = iota
	// Degraded: writes fail, and the store recovers by itself once the
	// cause is gone (disk space freed, the server back).
	Degraded
	// NeedsRestart: the store failed in a way only a restart recovers
	// from (an I/O error, a fatal engine error).
	NeedsRestart
)

func (s HealthState) String() string {
	switch s {
	case Healthy:
		return "ok"
	case Degraded:
		return "degraded"
	case NeedsRestart:
		return "restart needed"
	}
	return fmt.Sprintf("HealthState(%d)", int(s))
}

// Health is a store's state; Cause is nil when Healthy.
type Health struct {
	State HealthState
	Cause error
	Since time.Time
}

// HealthReporter is implemented by a Store that knows the state of its
// storage (bridge/embedded). Any goroutine.
type HealthReporter interface {
	// Health returns the current state and a channel closed at the next
	// change of state.
	Health() (Health, <-chan struct{})
}

// MemoryReader is implemented by a Store whose Topic, Topics and Partition
// answer from memory and never wait on the engine (bridge/embedded): the
// guard calls them inline, without a goroutine, since they cannot hang.
type MemoryReader interface {
	// MemoryReads is a marker; it does nothing.
	MemoryReads()
}

// ErrAbandoned marks an error returned for a call the guard gave up on at
// its deadline (or when the store failed) while the call was still running
// inside the store. Arguments the caller passed may still be read by that
// call: the caller must not reuse a buffer it passed (Append's batch) and
// must drop it instead.
var ErrAbandoned = errors.New("bridge: store call abandoned")

// abandonedError is the error of an abandoned call: ErrAbandoned plus the
// reason (context.DeadlineExceeded, or the store's failure).
type abandonedError struct {
	op    string
	cause error
}

func (e *abandonedError) Error() string {
	return "bridge: store " + e.op + " abandoned: " + e.cause.Error()
}
func (e *abandonedError) Unwrap() []error { return []error{ErrAbandoned, e.cause} }

// FullStore is what the gateway's backends implement.
type FullStore interface {
	Store
	GroupOffsets
	ProducerIDMarks
}

// GuardOptions configures Guard. Zero fields take the defaults.
type GuardOptions struct {
	// Timeout is the deadline of one call (default 10s). The call's
	// context carries it too, so a store that honours contexts stops.
	Timeout time.Duration
	// MaxHung is how many abandoned calls may still be running before new
	// calls are refused (default 256).
	MaxHung int
	// CloseTimeout bounds Close (default 5s): past it Close returns an
	// error and leaves the store's Close running.
	CloseTimeout time.Duration
	Log          *slog.Logger
}

// Guarded is a FullStore whose every call has a deadline. Build it with
// Guard. Safe for concurrent use.
type Guarded struct {
	inner   FullStore
	hr      HealthReporter // nil when inner does not report health
	inline  bool           // inner is a MemoryReader
	timeout time.Duration
	closeTO time.Duration
	maxHung int64
	log     *slog.Logger

	// lastBad/lastGood: unix nanos of the last call that failed for the
	// store's sake (abandoned, or ErrUnavailable) and of the last one the
	// store answered otherwise; badCause is the former's error.
	lastBad, lastGood atomic.Int64
	badCause          atomic.Pointer[error]

	hung      atomic.Int64  // abandoned calls still running
	abandoned atomic.Uint64 // calls abandoned, ever
	refused   atomic.Uint64 // calls refused for too many hung ones
	lastLog   atomic.Int64  // unix nanos of the last abandonment log line
}

var (
	_ FullStore            = (*Guarded)(nil)
	_ HealthReporter       = (*Guarded)(nil)
	_ OffsetBatchCommitter = (*Guarded)(nil)
)

// Guard wraps inner.
func Guard(inner FullStore, o GuardOptions) *Guarded {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxHung <= 0 {
		o.MaxHung = 256
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	g := &Guarded{inner: inner, timeout: o.Timeout, closeTO: o.CloseTimeout, maxHung: int64(o.MaxHung), log: o.Log}
	g.hr, _ = inner.(HealthReporter)
	_, g.inline = inner.(MemoryReader)
	return g
}

// Inner returns the wrapped store.
func (g *Guarded) Inner() FullStore { return g.inner }

// Hung is the number of abandoned calls still running. Abandoned and
// Refused count abandoned and refused calls since Guard.
func (g *Guarded) Hung() int64       { return g.hung.Load() }
func (g *Guarded) Abandoned() uint64 { return g.abandoned.Load() }
func (g *Guarded) Refused() uint64   { return g.refused.Load() }

// Health is the inner store's health, or Degraded while MaxHung calls are
// hung; for a store that reports no health (Iggy), Degraded also while the
// latest store-caused failure (an abandoned call, ErrUnavailable) is newer
// than the latest answer. changed is the inner store's (nil when it
// reports none).
func (g *Guarded) Health() (Health, <-chan struct{}) {
	var h Health
	var changed <-chan struct{}
	if g.hr != nil {
		h, changed = g.hr.Health()
	}
	if h.State == Healthy {
		if n := g.hung.Load(); n >= g.maxHung {
			h = Health{State: Degraded, Cause: fmt.Errorf("%w: %d store calls hung past their deadline", ErrUnavailable, n)}
		} else if bad := g.lastBad.Load(); g.hr == nil && bad > g.lastGood.Load() {
			// A store that reports no health of its own (Iggy): the last
			// answer says. A reporting store's own state is the truth.
			cause := errors.New("store calls failing")
			if p := g.badCause.Load(); p != nil {
				cause = *p
			}
			h = Health{State: Degraded, Cause: cause, Since: time.Unix(0, bad)}
		}
	}
	return h, changed
}

// note records how the store answered a call that was not abandoned.
func (g *Guarded) note(err error) {
	now := time.Now().UnixNano()
	if err != nil && errors.Is(err, ErrUnavailable) {
		g.badCause.Store(&err)
		g.lastBad.Store(now)
		return
	}
	g.lastGood.Store(now)
}

// guardCall is one call in flight. state: 0 running, 1 finished, 2
// abandoned; whoever moves it from 0 decides who owns the result.
type guardCall[T any] struct {
	state atomic.Int32
	done  chan struct{}
	v     T
	err   error
}

// run calls fn(ctx) on its own goroutine under the deadline and returns its
// result, or an abandonedError at the deadline or, for a write, as soon as
// the store reports a failure. onAbandon (may be nil) runs before run
// returns an abandoned call, on the caller's goroutine. Any goroutine.
func run[T any](g *Guarded, ctx context.Context, op string, write bool, onAbandon func(), fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if g.hung.Load() >= g.maxHung {
		g.refused.Add(1)
		return zero, fmt.Errorf("%w: %d store calls hung past their deadline", ErrUnavailable, g.hung.Load())
	}
	var changed <-chan struct{}
	if g.hr != nil {
		var h Health
		h, changed = g.hr.Health()
		if write && h.State != Healthy {
			return zero, h.Cause
		}
		if !write {
			changed = nil // reads are not cut short by a write failure
		}
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	c := &guardCall[T]{done: make(chan struct{})}
	go func() {
		v, err := fn(ctx)
		if c.state.CompareAndSwap(0, 1) {
			c.v, c.err = v, err
			close(c.done)
			return
		}
		g.hung.Add(-1) // the caller gave up on us
	}()
	for {
		select {
		case <-c.done:
			g.note(c.err)
			return c.v, c.err
		case <-ctx.Done():
			return abandon(g, c, op, ctx.Err(), onAbandon)
		case <-changed:
			h, next := g.hr.Health()
			if h.State != Healthy {
				return abandon(g, c, op, h.Cause, onAbandon)
			}
			changed = next
		}
	}
}

// abandon gives up on c unless it finished meanwhile. Caller's goroutine.
func abandon[T any](g *Guarded, c *guardCall[T], op string, cause error, onAbandon func()) (T, error) {
	g.hung.Add(1) // before the CAS, so the goroutine's decrement never runs first
	if !c.state.CompareAndSwap(0, 2) {
		g.hung.Add(-1)
		<-c.done
		return c.v, c.err
	}
	if onAbandon != nil {
		onAbandon()
	}
	g.note(fmt.Errorf("%w: store %s abandoned: %w", ErrUnavailable, op, cause))
	n := g.abandoned.Add(1)
	now := time.Now().UnixNano()
	if last := g.lastLog.Load(); now-last >= int64(10*time.Second) && g.lastLog.CompareAndSwap(last, now) {
		g.log.Warn("store call abandoned; it is still running in the store", "op", op, "cause", cause,
			"hung", g.hung.Load(), "abandoned_total", n)
	}
	var zero T
	return zero, &abandonedError{op: op, cause: cause}
}

// CreateTopic implements Store.
func (g *Guarded) CreateTopic(ctx context.Context, stream, topic string, partitions int32) (TopicInfo, error) {
	return run(g, ctx, "create_topic", true, nil, func(ctx context.Context) (TopicInfo, error) {
		return g.inner.CreateTopic(ctx, stream, topic, partitions)
	})
}

// DeleteTopic implements Store.
func (g *Guarded) DeleteTopic(ctx context.Context, stream, topic string) error {
	_, err := run(g, ctx, "delete_topic", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.inner.DeleteTopic(ctx, stream, topic)
	})
	return err
}

// Topic implements Store.
func (g *Guarded) Topic(ctx context.Context, stream, topic string) (TopicInfo, error) {
	if g.inline {
		return g.inner.Topic(ctx, stream, topic)
	}
	return run(g, ctx, "topic", false, nil, func(ctx context.Context) (TopicInfo, error) {
		return g.inner.Topic(ctx, stream, topic)
	})
}

// Topics implements Store.
func (g *Guarded) Topics(ctx context.Context, stream string) ([]TopicInfo, error) {
	if g.inline {
		return g.inner.Topics(ctx, stream)
	}
	return run(g, ctx, "topics", false, nil, func(ctx context.Context) ([]TopicInfo, error) {
		return g.inner.Topics(ctx, stream)
	})
}

// Append implements Store. An error matching ErrAbandoned means the store
// may still read batch: the caller must drop the buffer, not reuse it.
func (g *Guarded) Append(ctx context.Context, stream, topic string, partition int32, batch []byte) (uint64, error) {
	return run(g, ctx, "append", true, nil, func(ctx context.Context) (uint64, error) {
		return g.inner.Append(ctx, stream, topic, partition, batch)
	})
}

// Poll implements Store. fn runs on the call's goroutine while the caller
// waits; once the call is abandoned fn is never called again, so it never
// touches the caller's state after Poll returned.
func (g *Guarded) Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func(batch []byte) bool) error {
	var mu sync.Mutex
	gone := false
	guarded := func(b []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		return !gone && fn(b)
	}
	cut := func() {
		mu.Lock()
		gone = true
		mu.Unlock()
	}
	_, err := run(g, ctx, "poll", false, cut, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.inner.Poll(ctx, stream, topic, partition, from, maxBytes, guarded)
	})
	return err
}

// Partition implements Store.
func (g *Guarded) Partition(ctx context.Context, stream, topic string, partition int32) (PartitionState, error) {
	if g.inline {
		return g.inner.Partition(ctx, stream, topic, partition)
	}
	return run(g, ctx, "partition", false, nil, func(ctx context.Context) (PartitionState, error) {
		return g.inner.Partition(ctx, stream, topic, partition)
	})
}

// offsetAt is OffsetForTimestamp's two results.
type offsetAt struct {
	off   uint64
	found bool
}

// OffsetForTimestamp implements Store.
func (g *Guarded) OffsetForTimestamp(ctx context.Context, stream, topic string, partition int32, ts uint64) (uint64, bool, error) {
	r, err := run(g, ctx, "offset_for_timestamp", false, nil, func(ctx context.Context) (offsetAt, error) {
		off, found, err := g.inner.OffsetForTimestamp(ctx, stream, topic, partition, ts)
		return offsetAt{off, found}, err
	})
	return r.off, r.found, err
}

// CommitOffset implements GroupOffsets.
func (g *Guarded) CommitOffset(ctx context.Context, stream, group, topic string, partition int32, o CommittedOffset) error {
	_, err := run(g, ctx, "commit_offset", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.inner.CommitOffset(ctx, stream, group, topic, partition, o)
	})
	return err
}

// CommitOffsets implements OffsetBatchCommitter: one guarded call to the
// inner store's CommitOffsets when it has one (the Iggy store logs a
// request's commits in one append), else one guarded CommitOffset each.
// A call that fails as a whole (deadline, refused) fails every entry.
func (g *Guarded) CommitOffsets(ctx context.Context, stream, group string, offs []GroupOffset) []error {
	bc, ok := g.inner.(OffsetBatchCommitter)
	if !ok {
		errs := make([]error, len(offs))
		for i, o := range offs {
			errs[i] = g.CommitOffset(ctx, stream, group, o.Topic, o.Partition, o.CommittedOffset)
		}
		return errs
	}
	errs, err := run(g, ctx, "commit_offsets", true, nil, func(ctx context.Context) ([]error, error) {
		return bc.CommitOffsets(ctx, stream, group, offs), nil
	})
	if err != nil {
		errs = make([]error, len(offs))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// fetched is FetchOffset's two results.
type fetched struct {
	o  CommittedOffset
	ok bool
}

// FetchOffset implements GroupOffsets.
func (g *Guarded) FetchOffset(ctx context.Context, stream, group, topic string, partition int32) (CommittedOffset, bool, error) {
	r, err := run(g, ctx, "fetch_offset", false, nil, func(ctx context.Context) (fetched, error) {
		o, ok, err := g.inner.FetchOffset(ctx, stream, group, topic, partition)
		return fetched{o, ok}, err
	})
	return r.o, r.ok, err
}

// GroupOffsets implements GroupOffsets.
func (g *Guarded) GroupOffsets(ctx context.Context, stream, group string) ([]GroupOffset, error) {
	return run(g, ctx, "group_offsets", false, nil, func(ctx context.Context) ([]GroupOffset, error) {
		return g.inner.GroupOffsets(ctx, stream, group)
	})
}

// DeleteOffset implements GroupOffsets.
func (g *Guarded) DeleteOffset(ctx context.Context, stream, group, topic string, partition int32) error {
	_, err := run(g, ctx, "delete_offset", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.inner.DeleteOffset(ctx, stream, group, topic, partition)
	})
	return err
}

// DeleteGroupOffsets implements GroupOffsets.
func (g *Guarded) DeleteGroupOffsets(ctx context.Context, stream, group string) error {
	_, err := run(g, ctx, "delete_group_offsets", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.inner.DeleteGroupOffsets(ctx, stream, group)
	})
	return err
}

// groupsOK is OffsetGroups' two results.
type groupsOK struct {
	groups []string
	ok     bool
}

// OffsetGroups implements GroupOffsets.
func (g *Guarded) OffsetGroups(ctx context.Context, stream string) ([]string, bool, error) {
	r, err := run(g, ctx, "offset_groups", false, nil, func(ctx context.Context) (groupsOK, error) {
		groups, ok, err := g.inner.OffsetGroups(ctx, stream)
		return groupsOK{groups, ok}, err
	})
	return r.groups, r.ok, err
}

// LoadProducerIDMark implements ProducerIDMarks.
func (g *Guarded) LoadProducerIDMark(ctx context.Context, instance uint16) (uint64, error) {
	return run(g, ctx, "load_producer_mark", false, nil, func(ctx context.Context) (uint64, error) {
		return g.inner.LoadProducerIDMark(ctx, instance)
	})
}

// StoreProducerIDMark implements ProducerIDMarks.
func (g *Guarded) StoreProducerIDMark(ctx context.Context, instance uint16, mark uint64) error {
	_, err := run(g, ctx, "store_producer_mark", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.inner.StoreProducerIDMark(ctx, instance, mark)
	})
	return err
}

// Close closes the inner store within CloseTimeout; past it Close returns
// an error and the inner Close keeps running (the process is exiting).
func (g *Guarded) Close() error { return g.CloseWithin(g.closeTO) }

// CloseWithin is Close with its own bound d.
func (g *Guarded) CloseWithin(d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- g.inner.Close() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("bridge: store did not close within %v (%d calls hung)", d, g.hung.Load())
	}
}
