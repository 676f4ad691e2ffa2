package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// A store failure is an answer, never a hang. Guarded puts every call of a
// Store under a deadline and runs it on one of its own goroutines (its
// workers: guard_call.go), so a call stuck inside the engine (a full disk,
// a stopped Iggy server) cannot hold the goroutine that made it: the caller
// gets an error at the deadline, or at once when the store reports that
// its storage failed, and the stuck call is left to finish on its own
// ("hung"). Hung calls are counted; past GuardOptions.MaxHung new calls
// are refused at once, so a wedged engine cannot grow goroutines without
// bound.

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

// Guarded is a Backend whose every call has a deadline. Build it with
// Guard. Safe for concurrent use.
type Guarded struct {
	inner   Backend
	caps    Capabilities // inner's
	timeout time.Duration
	closeTO time.Duration
	maxHung int64
	log     *slog.Logger

	// lastBad/lastGood: the place in seq of the last call that failed for
	// the store's sake (abandoned, ErrUnavailable, or timed out in the
	// store) and of the last one the store answered otherwise; badSince
	// (unix nanos) and badCause are the former's time and error.
	seq, lastBad, lastGood atomic.Int64
	badSince               atomic.Int64
	badCause               atomic.Pointer[error]

	hung      atomic.Int64  // abandoned calls still running
	abandoned atomic.Uint64 // calls abandoned, ever
	refused   atomic.Uint64 // calls refused for too many hung ones
	lastLog   atomic.Int64  // unix nanos of the last abandonment log line

	watch   watchdog     // ends calls' contexts at their deadline (guard_call.go)
	work    chan *call   // idle workers take calls here
	workers atomic.Int32 // workers alive, idle or not
	reaping atomic.Bool  // reaper armed; the one who sets it arms it
	reaper  *time.Timer  // ends idle workers (reap)
}

var _ Backend = (*Guarded)(nil)

// Guard wraps inner.
func Guard(inner Backend, o GuardOptions) *Guarded {
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
	g := &Guarded{inner: inner, caps: inner.Capabilities(), timeout: o.Timeout, closeTO: o.CloseTimeout,
		maxHung: int64(o.MaxHung), log: o.Log, work: make(chan *call)}
	g.reaper = time.AfterFunc(workerIdle, g.reap)
	g.reaper.Stop() // armed by the first worker (start)
	return g
}

// Inner returns the wrapped backend.
func (g *Guarded) Inner() Backend { return g.inner }

// Capabilities are the wrapped backend's.
func (g *Guarded) Capabilities() Capabilities { return g.caps }

// OnTrim registers fn with the wrapped backend. Registration touches no
// disk, so it runs outside the guard.
func (g *Guarded) OnTrim(fn func(stream, topic string, partition int32)) { g.inner.OnTrim(fn) }

// Hung is the number of abandoned calls still running. Abandoned and
// Refused count abandoned and refused calls since Guard.
func (g *Guarded) Hung() int64       { return g.hung.Load() }
func (g *Guarded) Abandoned() uint64 { return g.abandoned.Load() }
func (g *Guarded) Refused() uint64   { return g.refused.Load() }

// Health is the inner store's health, or Degraded while MaxHung calls are
// hung; for a store that reports no health (Iggy), Degraded also while the
// latest store-caused failure (an abandoned or timed-out call,
// ErrUnavailable) is newer than the latest answer. changed is the inner
// store's (nil when it reports none).
func (g *Guarded) Health() (Health, <-chan struct{}) {
	h, changed := g.inner.Health()
	if h.State == Healthy {
		if n := g.hung.Load(); n >= g.maxHung {
			h = Health{State: Degraded, Cause: fmt.Errorf("%w: %d store calls hung past their deadline", ErrUnavailable, n)}
		} else if bad := g.lastBad.Load(); !g.caps.Health && bad > g.lastGood.Load() {
			// A store that reports no health of its own (Iggy): the last
			// answer says. A reporting store's own state is the truth.
			cause := errors.New("store calls failing")
			if p := g.badCause.Load(); p != nil {
				cause = *p
			}
			h = Health{State: Degraded, Cause: cause, Since: time.Unix(0, g.badSince.Load())}
		}
	}
	return h, changed
}

// note records how the store answered a call that was not abandoned. A
// call that ran out of time inside the store (context.DeadlineExceeded:
// the store's own deadline, or the guard's reached while the call waited,
// e.g. for a connection a hung call holds) failed for the store's sake
// like ErrUnavailable; anything else is an answer.
func (g *Guarded) note(err error) {
	if err != nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)) {
		cause := err // a copy, so that only this branch allocates
		g.badCause.Store(&cause)
		g.badSince.Store(time.Now().UnixNano())
		storeMax(&g.lastBad, g.seq.Add(1))
		return
	}
	// An answer while no failure is newer than the last answer changes
	// nothing Health says: it is left out, so that the common case only
	// reads.
	if g.lastBad.Load() > g.lastGood.Load() {
		storeMax(&g.lastGood, g.seq.Add(1))
	}
}

// storeMax raises v to n unless it is there already.
func storeMax(v *atomic.Int64, n int64) {
	for old := v.Load(); old < n && !v.CompareAndSwap(old, n); old = v.Load() {
	}
}

// task is a job returning one value and an error.
type task[T any] struct {
	fn  func(context.Context) (T, error)
	v   T
	err error
}

func (t *task[T]) exec(ctx context.Context) { t.v, t.err = t.fn(ctx) }

// run calls fn(ctx) on a worker under the deadline and returns its result,
// or an abandonedError at the deadline or, for a write, as soon as the
// store reports a failure. Any goroutine.
func run[T any](g *Guarded, ctx context.Context, op string, write bool, fn func(context.Context) (T, error)) (T, error) {
	t := &task[T]{fn: fn}
	if err := g.call(ctx, op, write, t); err != nil {
		var zero T
		return zero, err
	}
	g.note(t.err)
	return t.v, t.err
}

// call runs j on a worker under the deadline. nil: j finished and its
// results are the caller's; else the call was refused or abandoned. A
// job with an abandoned method has it called before call returns an
// abandoned call, on the caller's goroutine.
func (g *Guarded) call(ctx context.Context, op string, write bool, j job) error {
	if g.hung.Load() >= g.maxHung {
		g.refused.Add(1)
		return fmt.Errorf("%w: %d store calls hung past their deadline", ErrUnavailable, g.hung.Load())
	}
	var changed <-chan struct{}
	if g.caps.Health {
		var h Health
		h, changed = g.inner.Health()
		if write && h.State != Healthy {
			return h.Cause
		}
		if !write {
			changed = nil // reads are not cut short by a write failure
		}
	}
	c := g.newCall(ctx, j)
	g.start(c)
	for {
		select {
		case <-c.res:
			g.release(c)
			return nil
		case <-c.done: // the watchdog: the guard's deadline
			return g.abandon(c, op, context.DeadlineExceeded)
		case <-ctx.Done():
			err := ctx.Err()
			c.cancel(&err)
			return g.abandon(c, op, err)
		case <-changed:
			h, next := g.inner.Health()
			if h.State != Healthy {
				return g.abandon(c, op, h.Cause)
			}
			changed = next
		}
	}
}

// abandon gives up on c unless it finished meanwhile (then nil, as call),
// and ends its context so that a store honouring it stops. Caller's
// goroutine.
func (g *Guarded) abandon(c *call, op string, cause error) error {
	g.hung.Add(1) // before the CAS, so the worker's decrement never runs first
	if !c.state.CompareAndSwap(0, 2) {
		// It finished meanwhile (a store that honours the deadline ends
		// with it): its outcome counts as any finished call's.
		g.hung.Add(-1)
		<-c.res
		g.release(c)
		return nil
	}
	g.watch.remove(c)
	c.cancel(&errCanceled) // a no-op when it ended already
	if a, ok := c.job.(interface{ abandoned() }); ok {
		a.abandoned()
	}
	g.note(fmt.Errorf("%w: store %s abandoned: %w", ErrUnavailable, op, cause))
	n := g.abandoned.Add(1)
	now := time.Now().UnixNano()
	if last := g.lastLog.Load(); now-last >= int64(10*time.Second) && g.lastLog.CompareAndSwap(last, now) {
		g.log.Warn("store call abandoned; it is still running in the store", "op", op, "cause", cause,
			"hung", g.hung.Load(), "abandoned_total", n)
	}
	return &abandonedError{op: op, cause: cause}
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
