package seglog

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
)

// ErrTooLarge: a batch larger than a segment may be.
var ErrTooLarge = errors.New("seglog: batch larger than a segment may be")

// Append writes batch at the end of the log, stamped with the log's
// partition, the next offsets and the append time, and returns its base
// offset and the logical position after it (what WaitSynced waits for).
// batch must be a whole verified batch (bridge.VerifyIggyBatch; v its view,
// len(batch) == v.Length); it is only read: the stamped header is a copy
// written beside the caller's frames, so payloads are never copied in user
// space. segBytes is the topic's segment.bytes (<= 0: the default).
//
// On a write error nothing happened: the bytes written are cut off again,
// the offsets stay free and nothing became visible; the error wraps the
// cause (errors.Is finds ENOSPC). When the cut itself fails the log is
// broken (ErrBroken). Under VisibleOnSync it first waits, until ctx ends,
// while a sync round runs (passGate). Any goroutine; appends to one log
// run one at a time.
func (l *Log) Append(ctx context.Context, batch []byte, v bridge.BatchView, segBytes int64) (uint64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return 0, 0, err
	}
	released, err := l.passGate(ctx)
	if released {
		defer l.written1()
	}
	if err != nil {
		return 0, 0, err
	}
	n := int64(len(batch))
	if err := l.makeRoom(n, uint64(v.Count), segBytes, false); err != nil {
		return 0, 0, err
	}
	seg, base, now := l.active, l.next, l.cfg.Clock()
	copy(l.hdr[:], batch[:bridge.BatchHeaderSize])
	if v.Sums != nil {
		bridge.StampIggyHeaderSums(l.hdr[:], v.Sums, l.cfg.Partition, base, now)
	} else {
		bridge.StampIggyHeader(l.hdr[:], batch[bridge.BatchHeaderSize:], l.cfg.Partition, base, now)
	}
	if err := l.write(seg, l.hdr[:], batch[bridge.BatchHeaderSize:]); err != nil {
		return 0, 0, err
	}
	l.advance(seg, base, uint64(v.Count), n, newest(v, now))
	return base, l.endPos, nil
}

// passGate waits, with mu released, while a sync round runs under
// VisibleOnSync. A write landing in a file while it is fdatasynced makes
// that fdatasync several times slower (ext4: about 0.66 ms instead of
// 0.17 ms with appends going on). The appends held here are released
// together when the round ends, and the next round starts only once they
// all wrote (round waits for pending to drain), so it covers all of them:
// rounds never overlap writes and groups stay large. The wait ends with
// ctx. released says the append was let through by openGate and counts in
// pending until written1 (also after an error). Under mu; returns under mu.
func (l *Log) passGate(ctx context.Context) (released bool, err error) {
	if !l.gated {
		return false, nil
	}
	w := waiterPool.Get().(*waiter)
	l.gateWaiters = append(l.gateWaiters, w)
	l.mu.Unlock()
	select {
	case <-w.ch:
		released = true
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.mu.Lock()
	if err != nil {
		if i := slices.Index(l.gateWaiters, w); i >= 0 {
			l.gateWaiters = slices.Delete(l.gateWaiters, i, i+1)
		} else {
			<-w.ch // released meanwhile: counted in pending
			released = true
		}
	}
	waiterPool.Put(w)
	if err == nil {
		// A round cannot have started again: it waits for pending.
		err = l.writable()
	}
	return released, err
}

// openGate ends a round's hold on appends: every append held is let
// through and counted as pending. Under mu.
func (l *Log) openGate() {
	l.gated = false
	l.pending += len(l.gateWaiters)
	for _, w := range l.gateWaiters {
		w.ch <- true
	}
	l.gateWaiters = l.gateWaiters[:0]
}

// written1 books a released append done (written, or failed). Under mu.
func (l *Log) written1() {
	if l.pending--; l.pending == 0 {
		l.drained.Broadcast()
	}
}

// Import appends a batch that is already stamped, as it is (a migration
// from another store). Its base offset must be at or past the log's next
// offset (or anything, in a log with no segment: a batch straddling the log
// start); past it, the offsets between stay unused and a new segment starts
// at the batch. The batch must pass bridge.VerifyIggyBatch. It returns the
// logical position after the batch. Same errors as Append.
func (l *Log) Import(batch []byte, segBytes int64) (int64, error) {
	v, err := bridge.VerifyIggyBatch(batch)
	if err != nil {
		return 0, err
	}
	batch = batch[:v.Length]
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return 0, err
	}
	if v.BaseOffset < l.next && len(l.segments()) > 0 {
		return 0, fmt.Errorf("seglog: import of offset %d below the next offset %d", v.BaseOffset, l.next)
	}
	prev := l.next
	l.next = v.BaseOffset
	// An import may leave offsets unused before a batch (a gap Open must
	// keep), so the segment before it is sealed inline: Open drops the
	// segments after a segment that lost bytes in a crash during a
	// background seal, and must not mistake the gap for that.
	if err := l.makeRoom(int64(len(batch)), uint64(v.Count), segBytes, true); err != nil {
		l.next = prev
		return 0, err
	}
	seg := l.active
	if err := l.write(seg, batch[:bridge.BatchHeaderSize], batch[bridge.BatchHeaderSize:]); err != nil {
		l.next = prev
		return 0, err
	}
	l.advance(seg, v.BaseOffset, uint64(v.Count), int64(len(batch)), newest(v, v.BaseTimestamp))
	return l.endPos, nil
}

// makeRoom rolls to a new segment when the batch does not belong in the
// active one: none yet, the offsets do not continue it, or the batch would
// take it past segBytes (a batch larger than segBytes gets a segment of its
// own). inlineSeal seals the active segment before returning (roll).
// Under mu.
func (l *Log) makeRoom(n int64, count uint64, segBytes int64, inlineSeal bool) error {
	if n > maxSegmentSize || count > maxRel {
		return ErrTooLarge
	}
	if segBytes <= 0 {
		segBytes = DefaultSegmentBytes
	}
	if seg := l.active; seg != nil && seg.next.Load() == l.next {
		size := seg.size.Load()
		if size == 0 || size+n <= min(segBytes, maxSegmentSize) && l.next+count-seg.base <= maxRel {
			return nil
		}
	}
	return l.roll(inlineSeal)
}

// roll seals the active segment (synced, its index written and synced:
// inline under VisibleOnSync or when inline is set, else in the
// background, sealLater) and starts a new one at the next offset, its
// directory entry synced. An empty active segment is removed instead of
// sealed. On an error the active segment stays as it was. Under mu.
func (l *Log) roll(inline bool) error {
	fs := l.cfg.FS
	if !l.dirMade {
		if err := l.cfg.MakeDir(); err != nil {
			return fmt.Errorf("seglog: make %s: %w", l.cfg.Dir, err)
		}
		l.dirMade = true
	}
	old := l.active
	if old != nil && old.size.Load() > 0 {
		if inline || l.cfg.VisibleOnSync {
			l.waitSeal() // seal counts everything written as synced
			if err := l.seal(old); err != nil {
				return err
			}
		} else {
			l.sealLater(old)
		}
	}
	path := l.path(l.next, logSuffix)
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("seglog: create %s: %w", path, err)
	}
	if err := SyncDir(fs, l.cfg.Dir); err != nil {
		_ = f.Close()
		return l.failSync(fmt.Errorf("sync %s: %w", l.cfg.Dir, err))
	}
	seg := newSegment(l.next, l.endPos, path)
	seg.file.Store(l.segFile(f))
	dropOld := old != nil && old.size.Load() == 0
	segs := l.segments()
	ns := make([]*segment, 0, len(segs)+1)
	for _, s := range segs {
		if !dropOld || s != old {
			ns = append(ns, s)
		}
	}
	ns = append(ns, seg)
	l.segs.Store(&ns)
	l.active = seg
	if dropOld {
		old.release()
		_ = l.removeFiles(old.base)
	}
	l.updateEarliest()
	return nil
}

// seal makes a segment durable before a new one starts (inline; sealLater
// runs the same in the background): its data synced
// (so a crash never leaves a torn sealed segment), then its index written
// and synced. Everything written is synced afterwards (every earlier
// segment was synced when it sealed), which wakes waiters. Under mu.
func (l *Log) seal(seg *segment) error {
	if err := seg.file.Load().f.SyncData(); err != nil {
		return l.failSync(fmt.Errorf("sync %s: %w", seg.path, err))
	}
	l.markSynced(l.endPos, l.next)
	return l.writeIndex(seg)
}

// sealLater seals seg on a goroutine of its own, so the append that rolled
// does not wait for the sync of a whole segment (up to segment.bytes, 1 GiB
// by default: seconds on a slow disk, every produce to the partition
// stalled behind it). Only when no append waits for a sync to be visible
// (not VisibleOnSync): under SyncAlways every batch of seg was synced by
// its own group commit, so its seal is cheap and stays inline. Until the
// seal ends, a crash may leave seg without an index (Open scans it then)
// and sync rounds do not count bytes past the segment's end as durable
// (round waits for sealDone). Seals run side by side when the producer
// outruns the disk (the kernel's dirty-page limit throttles the writes
// then, not a roll), but each counts its segment synced only after the
// seal before it did (they chain on sealDone). Under mu.
func (l *Log) sealLater(seg *segment) {
	seg.acquire() // the active segment: the log holds a reference
	end, next := l.endPos, l.next
	prev, done := l.sealDone, make(chan struct{})
	l.sealDone = done
	go func() {
		defer close(done)
		defer seg.release()
		err := seg.file.Load().f.SyncData()
		if prev != nil {
			<-prev
		}
		if err != nil {
			_ = l.failSync(fmt.Errorf("sync %s: %w", seg.path, err))
			return
		}
		if l.broken.Load() != nil {
			return // an earlier seal failed: nothing after it counts
		}
		l.markSynced(end, next)
		if err := l.writeIndex(seg); err != nil && !errors.Is(err, ErrBroken) {
			l.log.Warn("segment log: could not write a sealed segment's index; rebuilt by a scan at the next open",
				"segment", seg.path, "err", err)
		}
	}()
}

// waitSeal waits for the seals running in the background to end (the
// latest ends after the others). Under mu (a seal does not take it).
func (l *Log) waitSeal() {
	if d := l.sealDone; d != nil {
		<-d
	}
}

// write writes a header and body at the end of seg, or undoes what it
// wrote. Under mu.
func (l *Log) write(seg *segment, hdr, body []byte) error {
	pos := seg.size.Load()
	sf := seg.file.Load()
	err := l.w.writeAt(sf, pos, hdr, body)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("seglog: write %s at %d: %w", seg.path, pos, err)
	if uerr := l.undo(sf, pos); uerr != nil {
		return l.breakWith(errors.Join(err, fmt.Errorf("undo: %w", uerr)))
	}
	return err
}

// undo removes what a failed write may have left at pos: an OS file is
// truncated there; another file (a test filesystem) gets a zeroed header
// at pos, which a recovery scan stops at and the next write overwrites.
// Nothing to do when the file does not reach pos. Under mu.
func (l *Log) undo(sf *segFile, pos int64) error {
	if t, ok := sf.f.(truncater); ok {
		return t.Truncate(pos)
	}
	if fi, err := sf.f.Stat(); err == nil && fi.Size() <= pos {
		return nil
	}
	var zero [bridge.BatchHeaderSize]byte
	_, err := sf.f.WriteAt(zero[:], pos)
	return err
}

// advance books a batch written at the end of seg. Under mu.
func (l *Log) advance(seg *segment, base, count uint64, n int64, newestTs uint64) {
	pos := seg.size.Load()
	seg.idx.add(uint32(base-seg.base), pos)
	seg.size.Store(pos + n)
	seg.markChecked(pos, pos+n) // Append and Import take verified batches only
	l.next = base + count
	seg.next.Store(l.next)
	seg.raiseMaxTs(newestTs)
	l.endPos += n
	l.written.Store(l.endPos)
	if !l.cfg.VisibleOnSync {
		l.publish(l.endPos, l.next)
	}
}
