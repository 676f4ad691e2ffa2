package seglog

import (
	"context"
	"math"

	"github.com/iggy-kafka/gateway/bridge"
)

// A record's time is the time Fetch shows for it (bridge.SearchTime): its
// Kafka timestamp, which is its origin timestamp but for a clamped one
// (docs/MAPPING.md), or its batch's append time when it has none. Each
// segment keeps the newest record time of its batches (never below it),
// so a search by time skips whole segments.

// OffsetForTimestamp returns the first visible offset at or after the log
// start whose record time is >= ts, or found=false when there is none.
// Segments whose newest record is older than ts are skipped unread; the
// first other one is read from the start (or from the batch holding the
// log start). Any goroutine.
func (l *Log) OffsetForTimestamp(ctx context.Context, ts uint64) (uint64, bool, error) {
	start := l.start.Load()
	k := l.newWalk(math.MaxInt, scanChunk)
	defer k.w.release()
	var (
		off   uint64
		found bool
		ferr  error
	)
	fn := func(b []byte) bool {
		off, found, ferr = firstAtOrAfter(b, ts, start)
		return !found && ferr == nil && ctx.Err() == nil
	}
	for _, seg := range l.segments() {
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		if seg.next.Load() <= start || seg.maxTs.Load() < ts {
			continue
		}
		if !seg.acquire() {
			continue // removed meanwhile: below the start now
		}
		_, err := k.segment(seg, max(start, seg.base), fn)
		seg.release()
		if err != nil || ferr != nil || found {
			return off, found, firstErr(err, ferr)
		}
	}
	return 0, false, ctx.Err()
}

// firstAtOrAfter finds the first message of a stored batch at or after ts,
// among the offsets from start on.
func firstAtOrAfter(b []byte, ts, start uint64) (uint64, bool, error) {
	v, err := bridge.ParseIggyBatch(b)
	if err != nil {
		return 0, false, err
	}
	mi := bridge.NewIggyMessageIter(v)
	for mi.Next() {
		m := mi.Message()
		if m.Offset < start {
			continue
		}
		if bridge.SearchTime(m) >= ts {
			return m.Offset, true, nil
		}
	}
	return 0, false, mi.Err()
}

// ExpiredBefore returns the base offset of the first visible batch (from
// the one holding the log start) whose newest record time is at or after
// cutoff (µs), or the watermark when every visible batch is older: the
// start that removes exactly the expired leading batches (never below the
// current start: a batch holding it that stays gives the start itself). Segments whose
// newest record is older than cutoff are skipped unread. Any goroutine
// (the retention sweeper).
func (l *Log) ExpiredBefore(cutoff uint64) (uint64, error) {
	start := l.start.Load()
	k := l.newWalk(math.MaxInt, scanChunk)
	defer k.w.release()
	return l.firstBatch(&k, start, k.hwm,
		func(seg *segment) bool { return seg.next.Load() <= start || seg.maxTs.Load() < cutoff },
		func(b []byte) bool { return newestStored(b) >= cutoff })
}

// OversizeBefore returns the base offset of the oldest visible batch that
// Kafka's size rule keeps with limit bytes per partition: from the batch
// holding the log start, each batch goes while the batches after it alone
// still hold at least limit bytes. The log start when nothing goes (or
// only the batch holding it would), the watermark when everything does. Whole segments that go are skipped
// unread; the cost is the one segment the cut falls in. Any goroutine.
func (l *Log) OversizeBefore(limit int64) (uint64, error) {
	start := l.start.Load()
	hwm, vpos := l.visiblePair()
	from, err := l.posOf(start, hwm, vpos)
	if err != nil {
		return 0, err
	}
	size := vpos - from
	if size <= limit {
		return start, nil
	}
	k := walk{l: l, hwm: hwm, vpos: vpos, budget: math.MaxInt, want: scanChunk}
	defer k.w.release()
	// A segment wholly before the cut goes unread: its bytes go at once.
	skip := func(seg *segment) bool {
		segFrom := max(from, seg.startPos)
		segTo := min(seg.startPos+seg.size.Load(), vpos)
		if segTo <= segFrom {
			return true
		}
		if size-(segTo-segFrom) >= limit {
			size -= segTo - segFrom
			return true
		}
		return false
	}
	return l.firstBatch(&k, start, hwm, skip, func(b []byte) bool {
		n := int64(len(b))
		if size-n < limit {
			return true
		}
		size -= n
		return false
	})
}

// firstBatch walks, with k, the visible batches of every segment that skip
// does not pass over, from start on, and returns the base offset of the
// first batch stop accepts, or end when none does (neither below start).
// Any goroutine.
func (l *Log) firstBatch(k *walk, start, end uint64, skip func(*segment) bool, stop func(b []byte) bool) (uint64, error) {
	var at uint64
	found := false
	fn := func(b []byte) bool {
		if stop(b) {
			at, found = le.Uint64(b[hdrBaseOffset:]), true
		}
		return !found
	}
	for _, seg := range l.segments() {
		if skip(seg) || !seg.acquire() {
			continue
		}
		_, err := k.segment(seg, max(start, seg.base), fn)
		seg.release()
		if err != nil || found {
			return max(at, start), err
		}
	}
	return max(end, start), nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
