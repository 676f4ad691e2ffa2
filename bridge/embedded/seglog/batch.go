package seglog

import (
	"errors"
	"fmt"

	"github.com/iggy-kafka/gateway/bridge"
)

// ErrCorrupt wraps every error about bytes on disk that are not what the
// log wrote: a batch failing its checksums, a length or an offset that does
// not follow, a segment shorter than recorded.
var ErrCorrupt = errors.New("seglog: corrupt segment")

// Offsets of the batch header fields the log reads (PROTOCOL.md 6.10).
const (
	hdrBaseOffset = 8
	hdrLength     = 32
	hdrCount      = 48
)

// header is what the log reads of a batch header without parsing frames.
type header struct {
	base   uint64
	length int64
	count  uint32
}

// readHeader reads a batch header at the start of b (at least
// bridge.BatchHeaderSize bytes). It checks nothing.
func readHeader(b []byte) header {
	return header{
		base:   le.Uint64(b[hdrBaseOffset:]),
		length: int64(min(le.Uint64(b[hdrLength:]), 1<<62)),
		count:  le.Uint32(b[hdrCount:]),
	}
}

// plausible reports whether a header read at file position pos may be a
// batch of the segment: long enough, inside the first limit bytes, holding
// at least one message, and at the expected offset.
func (h header) plausible(pos, limit int64, expect uint64) bool {
	return h.length >= bridge.BatchHeaderSize && h.length <= limit-pos && h.count > 0 && h.base == expect &&
		h.base+uint64(h.count) > h.base
}

// corruptAt is the error for a bad batch at position pos of a segment.
func corruptAt(path string, pos int64, what string, err error) error {
	if err != nil {
		return fmt.Errorf("%w: %s at position %d: %s: %w", ErrCorrupt, path, pos, what, err)
	}
	return fmt.Errorf("%w: %s at position %d: %s", ErrCorrupt, path, pos, what)
}

// verify checks a whole stored batch the way the Iggy server admits one
// (lengths, offset deltas, checksums), and that it is the batch h said.
func verify(b []byte, h header) error {
	v, err := bridge.VerifyIggyBatch(b)
	if err != nil {
		return err
	}
	if int64(v.Length) != int64(len(b)) || v.BaseOffset != h.base || v.Count != h.count {
		return bridge.ErrInvalidBatch
	}
	return nil
}

// newest is a batch's newest record time (µs): the largest origin
// timestamp (the clamp undone), or the batch's append time appendTs for a
// message with none (origin 0), the time Fetch shows for it; from v.Times
// when the caller knows them, else by walking the frames, which must be
// well formed.
func newest(v bridge.BatchView, appendTs uint64) uint64 {
	if v.Times.Known {
		return v.Times.Newest(appendTs)
	}
	var ts uint64
	it := bridge.NewIggyMessageIter(v)
	for it.Next() {
		t := bridge.UnclampedOrigin(it.Message())
		if t == 0 {
			t = appendTs
		}
		ts = max(ts, t)
	}
	return ts
}

// newestStored is newest for a stamped (stored) batch.
func newestStored(b []byte) uint64 {
	v, err := bridge.ParseIggyBatch(b)
	if err != nil {
		return 0
	}
	return newest(v, v.BaseTimestamp)
}
