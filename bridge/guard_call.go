package bridge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// How a guarded call runs without a goroutine, a timer and a context of
// its own (guard.go): the caller takes a call from callPool, lists it with
// its Guarded's watchdog and hands it to one of the Guarded's workers,
// then waits for the worker's answer or the end of the call's context.
//
//   - call is the store call's context: Deadline is the guard's deadline
//     (or the parent's, when earlier), Done a channel the watchdog closes
//     at the guard's deadline and the caller closes when it gives up or
//     the parent ends. A store may use the context only until its call
//     returns: a call that finished in time is reused by a later one.
//   - watchdog: one time.AfterFunc per Guarded, armed for the oldest
//     listed call. Every call has the same timeout, so listing order is
//     deadline order and the timer moves only when it fires.
//   - workers: goroutines that take calls from an unbuffered channel. A
//     call nobody is idle to take starts a new worker (so hung calls never
//     hold up the others; MaxHung bounds them); every workerIdle the
//     workers idle at that moment end (reap).

// workerIdle is how often idle workers are ended.
const workerIdle = 5 * time.Second

// job is a store call with its arguments and, once exec returned, its
// results. exec runs on a worker.
type job interface{ exec(ctx context.Context) }

// call is one guarded call in flight and the context of its store call.
type call struct {
	parent   context.Context
	deadline time.Time     // the context's: the guard's, or the parent's if earlier
	expires  time.Duration // the guard's, on clock: the watchdog enforces it
	job      job

	// state: 0 running, 1 finished, 2 abandoned; whoever moves it from 0
	// decides who owns the result. res gets the worker's "finished".
	state atomic.Int32
	res   chan struct{}

	// done is closed, err set first, when the context ends: by the
	// watchdog, or by the caller giving up. mu guards the closing, afters
	// and gen (bumped when the call is reused).
	done   chan struct{}
	err    atomic.Pointer[error]
	mu     sync.Mutex
	afters []func()
	gen    uint64

	prev, next *call // the watchdog's list, under its mu
	listed     bool
}

// A call is reused only when it finished in time and its context never
// ended, so its channels are open and empty.
var callPool = sync.Pool{New: func() any {
	return &call{res: make(chan struct{}, 1), done: make(chan struct{})}
}}

// clock is the monotonic time since clockBase: one clock read, where
// time.Now reads the wall clock too (25 ns against 48 on the VM
// measured).
func clock() time.Duration { return time.Since(clockBase) }

var clockBase = time.Now()

var (
	errDeadline error = context.DeadlineExceeded
	errCanceled error = context.Canceled
)

func (c *call) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *call) Done() <-chan struct{}       { return c.done }
func (c *call) Value(key any) any           { return c.parent.Value(key) }

func (c *call) Err() error {
	select {
	case <-c.done:
		return *c.err.Load()
	default:
		return nil
	}
}

// AfterFunc makes contexts derived from c (context.WithTimeout,
// context.AfterFunc, as the Iggy store's connections use) hang on c
// without a goroutine of their own each: the context package uses this
// method when the parent has it. f runs on a goroutine of its own once c
// ends; stop reports whether it kept f from running.
func (c *call) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err.Load() != nil {
		go f()
		return func() bool { return false }
	}
	i, gen := len(c.afters), c.gen
	c.afters = append(c.afters, f)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.gen != gen {
			return true // c finished in time and was reused: f never runs
		}
		stopped := c.afters[i] != nil
		c.afters[i] = nil
		return stopped
	}
}

// cancel ends c's context with *errp unless it ended already.
func (c *call) cancel(errp *error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err.Load() != nil {
		return
	}
	c.err.Store(errp)
	close(c.done)
	for i, f := range c.afters {
		if f != nil {
			c.afters[i] = nil
			go f()
		}
	}
}

// newCall takes a call for j under ctx, listed with the watchdog.
func (g *Guarded) newCall(ctx context.Context, j job) *call {
	c := callPool.Get().(*call)
	c.parent, c.job = ctx, j
	c.expires = clock() + g.timeout
	c.deadline = clockBase.Add(c.expires)
	if d, ok := ctx.Deadline(); ok && d.Before(c.deadline) {
		c.deadline = d
	}
	c.state.Store(0)
	g.watch.add(c, g.timeout)
	return c
}

// release ends c's life as a call whose worker finished (res received):
// it is reused unless its context ended. Caller's goroutine.
func (g *Guarded) release(c *call) {
	g.watch.remove(c)
	// A store that broke the rule and kept the context finds no values.
	c.job, c.parent = nil, context.Background()
	if c.err.Load() != nil {
		return // its done channel is closed
	}
	c.mu.Lock()
	c.gen++
	clear(c.afters)
	c.afters = c.afters[:0]
	c.mu.Unlock()
	callPool.Put(c)
}

// start hands c to an idle worker, or to a new one when none is idle.
func (g *Guarded) start(c *call) {
	select {
	case g.work <- c:
	default:
		g.workers.Add(1)
		go g.worker(c)
		if g.reaping.CompareAndSwap(false, true) {
			g.reaper.Reset(workerIdle)
		}
	}
}

// worker runs c and then whatever calls it is handed, until it is handed
// nil.
func (g *Guarded) worker(c *call) {
	for ; c != nil; c = <-g.work {
		c.job.exec(c)
		if c.state.CompareAndSwap(0, 1) {
			c.res <- struct{}{} // c is the caller's again from here
		} else {
			g.hung.Add(-1) // the caller gave up on it
		}
	}
	g.workers.Add(-1)
}

// reap ends the workers idle now, every workerIdle while there are any,
// so that the pool shrinks back after a burst or hung calls without a
// timer per worker: a worker ended this way costs one goroutine start
// the next time all are busy. On the timer's goroutine.
func (g *Guarded) reap() {
	for ended := false; !ended; {
		select {
		case g.work <- nil:
		default:
			ended = true
		}
	}
	if g.workers.Load() > 0 {
		g.reaper.Reset(workerIdle)
		return
	}
	g.reaping.Store(false)
	// A worker started meanwhile may have found reaping still set.
	if g.workers.Load() > 0 && g.reaping.CompareAndSwap(false, true) {
		g.reaper.Reset(workerIdle)
	}
}

// watchdog ends the context of each listed call at its expiry: one timer,
// armed for the oldest.
type watchdog struct {
	mu         sync.Mutex
	head, tail *call
	timer      *time.Timer
	armed      bool
}

// add lists c, whose expiry is d from now; no listed call expires later.
func (w *watchdog) add(c *call, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c.prev, c.next, c.listed = w.tail, nil, true
	if w.tail != nil {
		w.tail.next = c
	} else {
		w.head = c
	}
	w.tail = c
	if w.armed {
		return // for an older call: it re-arms for the rest when it fires
	}
	w.armed = true
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
	} else {
		w.timer.Reset(d)
	}
}

func (w *watchdog) remove(c *call) {
	w.mu.Lock()
	w.unlink(c)
	w.mu.Unlock()
}

// unlink takes c off the list if it is on it. Under mu.
func (w *watchdog) unlink(c *call) {
	if !c.listed {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		w.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		w.tail = c.prev
	}
	c.prev, c.next, c.listed = nil, nil, false
}

// fire ends the expired calls and re-arms for the oldest left. On the
// timer's goroutine.
func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := clock()
	for c := w.head; c != nil && c.expires <= now; c = w.head {
		w.unlink(c)
		c.cancel(&errDeadline)
	}
	if w.head == nil {
		w.armed = false
		return
	}
	w.timer.Reset(w.head.expires - now)
}
