package seglog

import (
	"errors"
	"fmt"
)

// SetStart moves the log start forward to start (never back; the caller
// made it durable first and keeps start at or below the watermark) and
// removes every segment that ends at or below it, the active one too when
// all of the log is below it (the next append starts a new segment).
// Readers still reading a removed segment keep its file open until they
// finish. A removal that fails is returned; the segment is out of the log
// either way, and Open removes it again. Any goroutine.
func (l *Log) SetStart(start uint64) error {
	l.mu.Lock()
	if l.closed || start <= l.start.Load() {
		l.mu.Unlock()
		return nil
	}
	l.waitSeal() // its index must not be written after the segment is removed
	l.start.Store(start)
	segs := l.segments()
	k := 0
	for k < len(segs) && segs[k].next.Load() <= start && (segs[k] != l.active || l.next <= start) {
		k++
	}
	gone := segs[:k]
	if k > 0 {
		rest := append([]*segment(nil), segs[k:]...)
		l.segs.Store(&rest)
		if len(rest) == 0 {
			l.active = nil
		}
	}
	l.updateEarliest()
	l.mu.Unlock()
	var errs []error
	for _, s := range gone {
		s.release()
		if err := l.removeFiles(s.base); err != nil {
			errs = append(errs, fmt.Errorf("seglog: remove segment %s: %w", s.path, err))
		}
	}
	return errors.Join(errs...)
}

// Close syncs the active segment, writes its index (so the next Open reads
// nothing) and closes the log's files. A broken log is closed without
// either. Calls after Close fail with ErrClosed. The caller stops calling
// the log first (a reader still pinning a segment keeps its file open
// until it finishes). Any goroutine.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.waitSeal()
	var err error
	if seg := l.active; seg != nil && seg.size.Load() > 0 && l.broken.Load() == nil {
		if err = seg.file.Load().f.SyncData(); err != nil {
			err = l.failSync(fmt.Errorf("sync %s: %w", seg.path, err))
		} else {
			l.markSynced(l.endPos, l.next)
			err = l.writeIndex(seg)
		}
	}
	segs := l.detach()
	l.mu.Unlock()
	for _, s := range segs {
		s.release()
	}
	l.failWaiters(ErrClosed)
	return err
}

// Remove closes the log without syncing and removes its directory (the
// topic or partition was deleted). Any goroutine.
func (l *Log) Remove() error {
	l.mu.Lock()
	l.closed = true
	l.waitSeal()
	segs := l.detach()
	l.mu.Unlock()
	for _, s := range segs {
		s.release()
	}
	l.failWaiters(ErrClosed)
	if err := l.cfg.FS.RemoveAll(l.cfg.Dir); err != nil && !isNotExist(err) {
		return fmt.Errorf("seglog: remove %s: %w", l.cfg.Dir, err)
	}
	return nil
}

// detach empties the segment list. Under mu.
func (l *Log) detach() []*segment {
	segs := l.segments()
	var none []*segment
	l.segs.Store(&none)
	l.active = nil
	return segs
}

// failWaiters ends every wait with err (the log closed under them).
func (l *Log) failWaiters(err error) {
	sc := &l.sc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.err == nil {
		sc.err = err
	}
	for _, w := range sc.waiters {
		w.ch <- false
	}
	sc.waiters = sc.waiters[:0]
}
