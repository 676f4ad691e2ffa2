package seglog

import (
	"math"
	"sort"

	"github.com/iggy-kafka/gateway/bridge"
)

// Read calls fn with the log's batches in offset order, starting with the
// one holding offset from (from the log start at least: batches wholly
// below it are gone even while their segment stays), up to the visible
// watermark: whole batches, the first always, then while
// the bytes passed stay within maxBytes; fn returning false stops it. Every
// batch passed its checksums (hashed once: when this process appended it,
// or at the first read after Open); a batch that fails them is an
// ErrCorrupt error, never passed. The slice is valid only during fn, which must not
// call back into the log. Any goroutine; it takes no lock, reads with one
// pread per call when maxBytes allows (a segment boundary or a batch larger
// than the read adds one) and allocates nothing in steady state.
func (l *Log) Read(from uint64, maxBytes int, fn func(batch []byte) bool) error {
	// The batch holding from starts less than indexInterval past its index
	// entry, and the answer ends within maxBytes of it, plus the header
	// of the batch that does not fit: one read holds it all.
	k := l.newWalk(maxBytes, int(min(int64(maxBytes)+indexInterval+bridge.BatchHeaderSize, maxChunk)))
	defer k.w.release()
	from = max(from, l.start.Load())
	if from >= k.hwm {
		return nil
	}
	return k.run(from, fn)
}

// walk reads batches of a log below a visible watermark noted when it
// began. One goroutine.
type walk struct {
	l      *Log
	hwm    uint64 // stop at a batch at or past this offset
	vpos   int64  // and at bytes at or past this logical position
	budget int    // stop before a batch that takes sent past it (never the first)
	want   int    // bytes to read at once
	sent   int    // bytes passed to fn
	cur    int64  // logical position of the batch being passed
	w      window
}

// newWalk notes the visible watermark: the offset first, then the
// position, which was stored before it and so covers every batch below it.
func (l *Log) newWalk(budget, want int) walk {
	hwm := l.visibleOff.Load()
	return walk{l: l, hwm: hwm, vpos: l.visiblePos.Load(), budget: budget, want: max(want, minChunk)}
}

// run walks the segments from the one holding from.
func (k *walk) run(from uint64, fn func([]byte) bool) error {
	for attempt := 0; ; attempt++ {
		segs := k.l.segments()
		i := findSegment(segs, from)
		if i >= len(segs) {
			return nil
		}
		if !segs[i].acquire() {
			// Removed by retention or DeleteRecords meanwhile: the list
			// changed, look again (or the log closed).
			if attempt < 3 {
				continue
			}
			return ErrClosed
		}
		for {
			done, err := k.segment(segs[i], from, fn)
			segs[i].release()
			if done || err != nil {
				return err
			}
			if i++; i >= len(segs) || !segs[i].acquire() {
				return nil
			}
		}
	}
}

// findSegment returns the index of the last segment starting at or below
// from (0 when from lies below them all).
func findSegment(segs []*segment, from uint64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > from })
	return max(i-1, 0)
}

// segment walks one pinned segment from the batch holding from. done is
// true when the walk is over (watermark, budget, fn); false when the next
// segment may continue it.
func (k *walk) segment(seg *segment, from uint64, fn func([]byte) bool) (bool, error) {
	sf, err := seg.open(k.l.cfg.FS)
	if err != nil {
		return true, err
	}
	size := seg.size.Load()
	limit := min(size, k.vpos-seg.startPos)
	pos, expect := int64(0), seg.base
	if from > seg.base {
		if e, ok := seg.idx.lookup(from - seg.base); ok {
			pos, expect = int64(e.pos), seg.base+uint64(e.rel)
		}
	}
	k.w.forget()
	for pos < limit {
		if limit-pos < bridge.BatchHeaderSize {
			return true, corruptAt(seg.path, pos, "torn batch header", nil)
		}
		hb, err := k.w.at(sf.f, pos, bridge.BatchHeaderSize, k.want, limit)
		if err != nil {
			return true, corruptAt(seg.path, pos, "read", err)
		}
		h := readHeader(hb)
		if !h.plausible(pos, limit, expect) {
			return true, corruptAt(seg.path, pos, "batch header does not follow", nil)
		}
		if h.base >= k.hwm {
			return true, nil
		}
		if h.base+uint64(h.count) > from {
			if k.sent > 0 && int64(k.sent)+h.length > int64(k.budget) {
				return true, nil
			}
			b, err := k.w.at(sf.f, pos, int(h.length), k.want, limit)
			if err != nil {
				return true, corruptAt(seg.path, pos, "read", err)
			}
			if pos+h.length > seg.checked.Load() {
				if err := verify(b, h); err != nil {
					return true, corruptAt(seg.path, pos, "batch", err)
				}
				seg.markChecked(pos, pos+h.length)
			}
			k.cur = seg.startPos + pos
			if !fn(b) {
				return true, nil
			}
			if k.sent += len(b); k.sent >= k.budget {
				return true, nil
			}
		}
		pos += h.length
		expect = h.base + uint64(h.count)
	}
	return limit < size, nil
}

// visiblePair returns the visible watermark as one consistent (offset,
// position) pair, read under the lock that publishes it.
func (l *Log) visiblePair() (uint64, int64) {
	if l.cfg.VisibleOnSync {
		l.sc.mu.Lock()
		defer l.sc.mu.Unlock()
	} else {
		l.mu.Lock()
		defer l.mu.Unlock()
	}
	return l.visibleOff.Load(), l.visiblePos.Load()
}

// posOf returns the logical position of the visible batch holding offset
// off, or of the first one after it; vpos when there is none below hwm.
func (l *Log) posOf(off, hwm uint64, vpos int64) (int64, error) {
	if off >= hwm {
		return vpos, nil
	}
	k := walk{l: l, hwm: hwm, vpos: vpos, budget: 1, want: minChunk}
	defer k.w.release()
	pos := int64(math.MinInt64)
	if err := k.run(off, func([]byte) bool { pos = k.cur; return false }); err != nil {
		return 0, err
	}
	if pos == math.MinInt64 {
		return vpos, nil
	}
	return pos, nil
}
