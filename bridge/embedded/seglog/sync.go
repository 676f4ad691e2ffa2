package seglog

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Group commit. An Append returns the logical position after its batch;
// WaitSynced(pos) returns once every byte below pos is durable. The first
// waiter to find no sync running leads: it notes the log's end (under mu,
// after its own write, so the end covers its batch), fsyncs the active
// segment with no lock held, records the end as synced and wakes every
// waiter it covered. If waiters remain (they wrote after the end was noted)
// it hands the lead to the oldest and returns: each caller waits for at
// most the fsync in progress and its own. Only the active segment can hold
// unsynced bytes, and the one before it while its seal runs in the
// background (sealLater): a round waits for that seal too.

// syncState is the group commit's state, guarded by its mu.
type syncState struct {
	mu      sync.Mutex
	synced  int64 // every byte below this logical position is durable
	leading bool  // a sync round is running
	waiters []*waiter
	err     error // a sync failed: every wait fails (the log is broken)
	// abandoned counts waiters that left at their context's end while a
	// round ran: their bytes may lie past it, so the leader runs one more.
	abandoned int
}

// waiter is one WaitSynced call waiting for a round. ch (one slot)
// receives true to make it the leader, false when its bytes are synced or
// the round failed.
type waiter struct {
	pos int64
	ch  chan bool
}

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan bool, 1)} }}

// WaitSynced returns once the log is durable up to logical position pos
// (what Append returned), or with ctx's error (the round running then
// runs once more, so the bytes still become durable and visible), or with
// the error of a failed fsync (the log is broken). Under VisibleOnSync it is also what makes the batch visible.
// Any goroutine; no lock is held while it waits.
func (l *Log) WaitSynced(ctx context.Context, pos int64) error {
	sc := &l.sc
	sc.mu.Lock()
	if sc.err != nil || sc.synced >= pos {
		err := sc.err
		sc.mu.Unlock()
		return err
	}
	if !sc.leading {
		sc.leading = true
		sc.mu.Unlock()
		return l.lead()
	}
	w := waiterPool.Get().(*waiter)
	w.pos = pos
	sc.waiters = append(sc.waiters, w)
	sc.mu.Unlock()
	select {
	case lead := <-w.ch:
		waiterPool.Put(w)
		if lead {
			return l.lead()
		}
		return l.syncErr()
	case <-ctx.Done():
		sc.mu.Lock()
		i := slices.Index(sc.waiters, w)
		if i >= 0 {
			sc.waiters = slices.Delete(sc.waiters, i, i+1)
			sc.abandoned++
		}
		sc.mu.Unlock()
		if i >= 0 {
			waiterPool.Put(w)
			return ctx.Err()
		}
		// Signalled meanwhile: the value is in ch. A lead handed over
		// must be taken, or the waiters behind would wait for ever; the
		// fsync is bounded by the disk, not by a lock.
		lead := <-w.ch
		waiterPool.Put(w)
		if lead {
			return l.lead()
		}
		return l.syncErr()
	}
}

// lead runs sync rounds as the leader, then passes the lead on (or
// drops it). Its own bytes are covered by its first round; it runs another
// only when a waiter left without them being synced.
func (l *Log) lead() error {
	for {
		again, err := l.round()
		if !again {
			return err
		}
	}
}

// round is one sync round of the leader: it notes the end, fsyncs, records
// and wakes; again is true when it must run another.
func (l *Log) round() (again bool, err error) {
	l.mu.Lock()
	// The appends the last round held write first, so this round covers
	// them (they hold no lock and are only waiting for mu).
	for l.pending > 0 {
		l.drained.Wait()
	}
	seg, end, next := l.active, l.endPos, l.next
	ok := seg != nil && seg.acquire()
	l.gated = l.cfg.VisibleOnSync
	sealing := l.sealDone
	l.mu.Unlock()
	if ok {
		if err = seg.file.Load().f.SyncData(); err != nil {
			err = l.breakWith(fmt.Errorf("sync %s: %w", seg.path, err))
		}
		seg.release()
	}
	if sealing != nil {
		// The segment before the active one may still be syncing
		// (sealLater): end is durable only once it is.
		<-sealing
	}
	l.mu.Lock()
	l.openGate()
	l.mu.Unlock()
	if p := l.broken.Load(); p != nil && err == nil {
		// Another sync failed meanwhile (a seal): after a failed fsync
		// the kernel may have dropped pages, so a later success proves
		// nothing.
		err = *p
	}
	sc := &l.sc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if err != nil {
		if sc.err == nil {
			sc.err = err
		}
	} else {
		l.syncedLocked(end, next)
	}
	sc.wakeSyncedLocked()
	if len(sc.waiters) == 0 {
		if sc.abandoned > 0 && sc.err == nil {
			sc.abandoned = 0
			return true, err
		}
		sc.leading = false
		return false, err
	}
	// The next leader notes the end after its own write, which came after
	// any abandoned one's: its round covers them.
	sc.abandoned = 0
	next0 := sc.waiters[0]
	sc.waiters = slices.Delete(sc.waiters, 0, 1)
	next0.ch <- true
	return false, err
}

// markSynced records that the log is durable up to (pos, off). Under mu
// (a seal), or on a background seal's goroutine; takes sc.mu.
func (l *Log) markSynced(pos int64, off uint64) {
	sc := &l.sc
	sc.mu.Lock()
	l.syncedLocked(pos, off)
	sc.wakeSyncedLocked()
	sc.mu.Unlock()
}

// wakeSyncedLocked ends the wait of every waiter whose bytes are synced
// (of every waiter once a sync failed) and drops it from the list. A woken
// waiter may at once go back to waiterPool and wait on another log with
// another pos: each is kept or dropped on what was read before its wake,
// and not read after. Under sc.mu.
func (sc *syncState) wakeSyncedLocked() {
	kept := sc.waiters[:0]
	for _, w := range sc.waiters {
		if sc.err == nil && w.pos > sc.synced {
			kept = append(kept, w)
			continue
		}
		w.ch <- false
	}
	clear(sc.waiters[len(kept):]) // no hold on pooled waiters
	sc.waiters = kept
}

// syncedLocked moves the synced position forward to pos, and under
// VisibleOnSync the visible watermark with it. Under sc.mu.
func (l *Log) syncedLocked(pos int64, off uint64) {
	if pos <= l.sc.synced {
		return
	}
	l.sc.synced = pos
	if l.cfg.VisibleOnSync {
		l.publish(pos, off)
	}
}

// failSync breaks the log after a failed sync and fails every wait: no
// byte written since the last good sync may be counted durable now. Any
// goroutine (under mu or not; takes sc.mu).
func (l *Log) failSync(err error) error {
	err = l.breakWith(err)
	l.failWaiters(err)
	return err
}

func (l *Log) syncErr() error {
	l.sc.mu.Lock()
	defer l.sc.mu.Unlock()
	return l.sc.err
}

// Sync makes every byte written so far durable (Close, Store.Sync, the
// SyncInterval ticker). Any goroutine.
func (l *Log) Sync(ctx context.Context) error {
	return l.WaitSynced(ctx, l.written.Load())
}

// Dirty reports bytes written and not yet known durable. Any goroutine.
func (l *Log) Dirty() bool {
	l.sc.mu.Lock()
	defer l.sc.mu.Unlock()
	return l.written.Load() > l.sc.synced
}
