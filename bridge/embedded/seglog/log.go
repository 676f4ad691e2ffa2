package seglog

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
)

// DefaultSegmentBytes is the segment size when a topic sets no
// segment.bytes: Kafka's log.segment.bytes default.
const DefaultSegmentBytes = 1 << 30

var (
	// ErrClosed: the log was closed or removed.
	ErrClosed = errors.New("seglog: log closed")
	// ErrBroken: a sync failed, or a failed write could not be undone, so
	// what is on disk is no longer known; the log refuses writes until it
	// is reopened (which recovers from what really is on disk).
	ErrBroken = errors.New("seglog: log failed; reopen it")
)

// Config says where a partition's log lives and how it behaves.
type Config struct {
	FS  vfs.FS
	Dir string // the partition's directory; created at the first append
	// Partition is stamped into every appended batch.
	Partition uint64
	// Start is the log start offset the caller keeps durable elsewhere
	// (DeleteRecords, retention): segments wholly below it are removed at
	// Open, and the next offset is at least Start.
	Start uint64
	// VisibleOnSync: readers see a batch only once it is synced (the
	// store's SyncAlways). Otherwise once it is written.
	VisibleOnSync bool
	// Direct says FS is the OS's own (vfs.Default): writes go out with
	// pwritev and undoing one uses ftruncate. Never set it for a wrapping
	// FS, whose Write methods would be bypassed.
	Direct bool
	Logger *slog.Logger
	// Clock is the append time (µs) stamped into batches; time.Now.
	Clock func() uint64
	// MakeDir creates Dir durably (its entry synced into its parent)
	// before the first segment is made. Default: MkdirAll, then sync the
	// parent.
	MakeDir func() error
}

// Log is one partition's segment log. See the package doc for the layout
// and the locking.
type Log struct {
	cfg Config
	log *slog.Logger

	// mu orders writers: appends, rolls, start changes, Close.
	mu      sync.Mutex
	next    uint64   // next offset to hand out
	endPos  int64    // logical position after the last written byte
	active  *segment // the segment appends go to; nil when there is none
	dirMade bool
	closed  bool
	w       writer
	hdr     [bridge.BatchHeaderSize]byte // the stamped header of the batch being written
	// gated holds appends while a sync round runs (VisibleOnSync only;
	// append.go, passGate); gateWaiters are the appends held, pending the
	// appends released and not yet written; drained (on mu) is signalled
	// when pending reaches 0.
	gated       bool
	gateWaiters []*waiter
	pending     int
	drained     sync.Cond

	broken atomic.Pointer[error] // set once (ErrBroken)

	// sealDone is closed when the seal running in the background ends
	// (sealLater; nil when none ever ran). Set under mu; the seal itself
	// never takes mu, so a holder of mu may wait for it.
	sealDone chan struct{}

	segs       atomic.Pointer[[]*segment] // by base offset; replaced, never changed in place
	visibleOff atomic.Uint64              // readers see offsets below it ...
	visiblePos atomic.Int64               // ... and bytes below it (stored before visibleOff)
	start      atomic.Uint64              // log start offset
	earliest   atomic.Uint64              // max(start, first segment's base)
	written    atomic.Int64               // endPos, for lock-free Dirty

	sc syncState // group commit (sync.go)
}

// Open opens the partition log in cfg.Dir (an absent directory is an empty
// log) and recovers it: sealed segments from their index files (or a scan
// when the index is missing or does not match the segment), the last
// segment scanned from its last index entry, every batch checked; a torn
// or corrupt tail is cut off and logged. Open's goroutine.
func Open(cfg Config) (*Log, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = func() uint64 { return uint64(time.Now().UnixMicro()) }
	}
	if cfg.MakeDir == nil {
		cfg.MakeDir = func() error {
			if err := cfg.FS.MkdirAll(cfg.Dir, 0o755); err != nil {
				return err
			}
			return SyncDir(cfg.FS, cfg.FS.PathDir(cfg.Dir))
		}
	}
	l := &Log{cfg: cfg, log: cfg.Logger.With("segment_dir", cfg.Dir)}
	l.drained.L = &l.mu
	l.start.Store(cfg.Start)
	segs, err := l.recover()
	if err != nil {
		for _, s := range segs {
			s.release()
		}
		return nil, err
	}
	l.install(segs)
	return l, nil
}

// install sets the log's state from its recovered segments.
func (l *Log) install(segs []*segment) {
	var pos int64
	for _, s := range segs {
		s.startPos = pos
		pos += s.size.Load()
	}
	l.endPos = pos
	l.next = l.cfg.Start
	if n := len(segs); n > 0 {
		l.active = segs[n-1]
		l.next = max(l.next, l.active.next.Load())
	}
	l.segs.Store(&segs)
	l.written.Store(pos)
	l.sc.synced = pos
	l.publish(pos, l.next)
	l.updateEarliest()
}

// recover lists the directory and loads its segments, oldest first, with
// those wholly below the log start removed.
func (l *Log) recover() ([]*segment, error) {
	fs := l.cfg.FS
	names, err := fs.List(l.cfg.Dir)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("seglog: list %s: %w", l.cfg.Dir, err)
	}
	l.dirMade = true
	bases, err := l.sortNames(names)
	if err != nil {
		return nil, err
	}
	var segs []*segment
	for i, base := range bases {
		last := i == len(bases)-1
		if !last && bases[i+1] <= l.cfg.Start {
			// Wholly below the start: the next segment begins at or
			// before it. No need to read it.
			l.removeFiles(base)
			continue
		}
		seg := newSegment(base, 0, l.path(base, logSuffix))
		if err := l.load(seg, last); err != nil {
			seg.release()
			return segs, err
		}
		segs = append(segs, seg)
	}
	segs = l.dropAfterLoss(segs)
	if err := l.checkOrder(segs); err != nil {
		return segs, err
	}
	return l.dropBelowStart(segs), nil
}

// dropAfterLoss cuts the log after a segment that a crash left short: one
// without an index (its background seal had not finished, sealLater) whose
// last offset falls short of the next segment's base. The bytes lost were
// never synced, and neither were the later segments' (their seals wait for
// it, and nothing under VisibleOnSync seals in the background), so nothing
// in them was promised; keeping them would leave a hole in the offsets.
// Gaps after a segment that has its index (an import's, or damage to a
// sealed segment: checkOrder logs those) stay. Open's goroutine.
func (l *Log) dropAfterLoss(segs []*segment) []*segment {
	for i := 0; i+1 < len(segs); i++ {
		if !segs[i].unsealed || segs[i].next.Load() >= segs[i+1].base {
			continue
		}
		l.log.Warn("segment log: a segment lost its unsynced tail in a crash; dropping the segments after it",
			"segment", segs[i].path, "next_offset", segs[i].next.Load(), "dropped_from", segs[i+1].base,
			"segments_dropped", len(segs)-i-1)
		for _, s := range segs[i+1:] {
			s.release()
			if err := l.removeFiles(s.base); err != nil {
				l.log.Warn("segment log: could not remove a dropped segment; removed at the next open", "segment", s.path, "err", err)
			}
		}
		return segs[:i+1]
	}
	return segs
}

// sortNames returns the bases of the segment files among names, sorted,
// and removes leftovers: rewrite temporaries and index files without a
// segment.
func (l *Log) sortNames(names []string) ([]uint64, error) {
	var bases []uint64
	logs := map[uint64]bool{}
	var indexes []uint64
	for _, n := range names {
		if b, ok := parseSegmentName(n, logSuffix); ok {
			bases = append(bases, b)
			logs[b] = true
		} else if b, ok := parseSegmentName(n, indexSuffix); ok {
			indexes = append(indexes, b)
		} else if len(n) > len(tmpSuffix) && n[len(n)-len(tmpSuffix):] == tmpSuffix {
			_ = l.cfg.FS.Remove(l.cfg.FS.PathJoin(l.cfg.Dir, n))
		} else {
			l.log.Warn("segment log: unknown file left alone", "file", n)
		}
	}
	for _, b := range indexes {
		if !logs[b] {
			_ = l.cfg.FS.Remove(l.path(b, indexSuffix))
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// checkOrder refuses overlapping segments (nothing the log writes makes
// them) and logs the offsets missing between two segments (a segment cut
// short by recovery).
func (l *Log) checkOrder(segs []*segment) error {
	for i := 1; i < len(segs); i++ {
		prev, cur := segs[i-1].next.Load(), segs[i].base
		if cur < prev {
			return fmt.Errorf("%w: %s starts at offset %d, inside the segment before it (which ends at %d)",
				ErrCorrupt, segs[i].path, cur, prev)
		}
		if cur > prev {
			l.log.Error("segment log: offsets missing between segments", "from", prev, "to", cur, "segment", segs[i].path)
		}
	}
	return nil
}

// dropBelowStart removes the segments that end at or below the log start
// (a DeleteRecords or retention whose file removal did not finish).
func (l *Log) dropBelowStart(segs []*segment) []*segment {
	k := 0
	for k < len(segs) && segs[k].next.Load() <= l.cfg.Start {
		segs[k].release()
		l.removeFiles(segs[k].base)
		k++
	}
	return segs[k:]
}

// removeFiles removes a segment's files, the segment first.
func (l *Log) removeFiles(base uint64) error {
	err := l.cfg.FS.Remove(l.path(base, logSuffix))
	if err != nil && !isNotExist(err) {
		return err
	}
	if err := l.cfg.FS.Remove(l.path(base, indexSuffix)); err != nil && !isNotExist(err) {
		return err
	}
	return nil
}

func (l *Log) path(base uint64, suffix string) string {
	return l.cfg.FS.PathJoin(l.cfg.Dir, segmentName(base, suffix))
}

// segFile wraps a file of this log, with its descriptor when Direct.
func (l *Log) segFile(f vfs.File) *segFile {
	sf := &segFile{f: f, fd: -1}
	if l.cfg.Direct {
		if fd := f.Fd(); fd != vfs.InvalidFd {
			sf.fd = int(fd)
		}
	}
	return sf
}

// segments returns the current segment list (never modify it).
func (l *Log) segments() []*segment {
	if p := l.segs.Load(); p != nil {
		return *p
	}
	return nil
}

// publish moves the visible watermark to (pos, off): the position first,
// so a reader that loads the offset first never reads past what it covers.
// Under mu (written visibility) or sc.mu (synced visibility).
func (l *Log) publish(pos int64, off uint64) {
	l.visiblePos.Store(pos)
	l.visibleOff.Store(off)
}

// updateEarliest recomputes the first readable offset. Under mu.
func (l *Log) updateEarliest() {
	e := l.next
	if segs := l.segments(); len(segs) > 0 {
		e = segs[0].base
	}
	l.earliest.Store(max(e, l.start.Load()))
}

// writable refuses writes to a closed or broken log. Under mu.
func (l *Log) writable() error {
	if l.closed {
		return ErrClosed
	}
	if p := l.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// breakWith marks the log broken by err and returns the error callers get.
// Any goroutine.
func (l *Log) breakWith(err error) error {
	e := fmt.Errorf("%w: %w", ErrBroken, err)
	l.broken.CompareAndSwap(nil, &e)
	return *l.broken.Load()
}

// Next returns the visible high watermark: one past the last offset
// readers may see. Any goroutine.
func (l *Log) Next() uint64 { return l.visibleOff.Load() }

// Earliest returns the first readable offset: the log start, or the first
// segment's base when that is higher. Any goroutine.
func (l *Log) Earliest() uint64 { return l.earliest.Load() }

// Start returns the log start offset.
func (l *Log) Start() uint64 { return l.start.Load() }

// Size returns the bytes of the log's segment files (the batches below the
// log start in its first segment included). Any goroutine.
func (l *Log) Size() int64 {
	segs := l.segments()
	if len(segs) == 0 {
		return 0
	}
	first, last := segs[0], segs[len(segs)-1]
	return last.startPos + last.size.Load() - first.startPos
}

// Segments returns the number of segment files. Any goroutine.
func (l *Log) Segments() int { return len(l.segments()) }
