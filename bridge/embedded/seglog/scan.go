package seglog

import (
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
)

// scanChunk is the read size of a recovery scan.
const scanChunk = 1 << 20

// scanResult is what a recovery scan of a segment found.
type scanResult struct {
	end   int64  // file position after the last good batch
	next  uint64 // one past the last good batch's last offset
	maxTs uint64 // newest record time of the good batches scanned
	// cut says why the scan stopped before its limit (a torn or corrupt
	// batch at end); nil when every byte up to the limit was good.
	cut error
}

// scan checks the batches of a segment file from position pos, where a
// batch at offset expect must start, up to limit: each must parse, fit,
// continue the offsets and pass its checksums. It stops at the first that
// does not. Each good batch is offered to the segment's sparse index. It
// never panics on any file content. Open's goroutine (and the fuzz test).
func scan(f vfs.File, seg *segment, pos int64, expect uint64, limit int64) scanResult {
	r := scanResult{end: pos, next: expect}
	var w window
	defer w.release()
	for pos < limit {
		if limit-pos < bridge.BatchHeaderSize {
			r.cut = corruptAt(seg.path, pos, "torn batch header", nil)
			return r
		}
		hb, err := w.at(f, pos, bridge.BatchHeaderSize, scanChunk, limit)
		if err != nil {
			r.cut = corruptAt(seg.path, pos, "read", err)
			return r
		}
		h := readHeader(hb)
		if !h.plausible(pos, limit, expect) || h.base+uint64(h.count)-seg.base > maxRel || pos+h.length > maxSegmentSize {
			r.cut = corruptAt(seg.path, pos, "batch header does not follow", nil)
			return r
		}
		b, err := w.at(f, pos, int(h.length), scanChunk, limit)
		if err != nil {
			r.cut = corruptAt(seg.path, pos, "read", err)
			return r
		}
		if err := verify(b, h); err != nil {
			r.cut = corruptAt(seg.path, pos, "batch", err)
			return r
		}
		seg.idx.add(uint32(h.base-seg.base), pos)
		r.maxTs = max(r.maxTs, newestStored(b))
		pos += h.length
		expect = h.base + uint64(h.count)
		r.end, r.next = pos, expect
	}
	return r
}
