package seglog

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// File name suffixes of a segment and of its index.
const (
	logSuffix   = ".log"
	indexSuffix = ".index"
	tmpSuffix   = ".tmp" // a rewrite in progress (truncate.go); removed at Open
)

// segmentName is the file name of the segment whose first batch is at base:
// zero-padded, so names sort as offsets do.
func segmentName(base uint64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// parseSegmentName reads the base offset out of a segment or index file
// name; ok is false for any other name.
func parseSegmentName(name, suffix string) (uint64, bool) {
	digits, found := strings.CutSuffix(name, suffix)
	if !found || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil
}

// segment is one segment file of a partition's log.
type segment struct {
	base     uint64 // offset of its first batch (its name)
	startPos int64  // logical position of its byte 0
	path     string // of the .log file

	// size is the bytes written; for the active segment it grows under
	// Log.mu (readers bound themselves by the visible position instead).
	size atomic.Int64
	// next is one past the last offset written to it.
	next atomic.Uint64
	// maxTs is the newest record time (µs) of its batches: a message's
	// origin timestamp, or its batch's append time when it has none.
	maxTs atomic.Uint64

	idx sparseIndex // offset -> position, an entry at least every indexInterval bytes

	// unsealed: Open found this segment, not the last, without an index:
	// its seal (sealLater) had not finished, so its tail may not have
	// been synced.
	unsealed bool

	// checked: the bytes below it passed their checksums since the log
	// opened (appended by this process, which verifies every batch it
	// writes, or read and verified once), so reads pass them without
	// hashing them again. Bytes recovered from disk are checked at their
	// first read.
	checked atomic.Int64

	// refs is 1 while the segment is in its log's list, plus one per
	// reader or syncer using its file; the file closes when it drops to 0.
	refs atomic.Int64

	fileMu sync.Mutex
	file   atomic.Pointer[segFile] // nil until opened (sealed segments open at first read)
}

// segFile is an open segment file and, when the log writes to OS files
// directly, its descriptor (-1 otherwise).
type segFile struct {
	f  vfs.File
	fd int
}

func newSegment(base uint64, startPos int64, path string) *segment {
	s := &segment{base: base, startPos: startPos, path: path}
	s.next.Store(base)
	s.refs.Store(1)
	return s
}

// acquire pins the segment's file for a reader or syncer; false when the
// segment left its log and its file closed (reload the list and retry).
// Any goroutine.
func (s *segment) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the file. Any goroutine.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		if sf := s.file.Swap(nil); sf != nil {
			_ = sf.f.Close()
		}
	}
}

// open returns the segment's file, opening it read-only on first use (a
// sealed segment found at Open). The caller holds a reference.
func (s *segment) open(fs vfs.FS) (*segFile, error) {
	if sf := s.file.Load(); sf != nil {
		return sf, nil
	}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if sf := s.file.Load(); sf != nil {
		return sf, nil
	}
	f, err := fs.Open(s.path)
	if err != nil {
		return nil, err
	}
	sf := &segFile{f: f, fd: -1}
	s.file.Store(sf)
	return sf, nil
}

// raiseMaxTs records a batch's newest record time.
func (s *segment) raiseMaxTs(ts uint64) {
	for {
		cur := s.maxTs.Load()
		if ts <= cur || s.maxTs.CompareAndSwap(cur, ts) {
			return
		}
	}
}

// markChecked records that the batch at [pos, end) passed its checksums:
// the checked prefix grows when the batch continues it. Any goroutine.
func (s *segment) markChecked(pos, end int64) {
	for {
		c := s.checked.Load()
		if c != pos || s.checked.CompareAndSwap(c, end) {
			return
		}
	}
}
