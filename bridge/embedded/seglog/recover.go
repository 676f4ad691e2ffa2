package seglog

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// load recovers one segment at Open. A sealed segment whose index file
// matches its size is taken from the index alone, without reading it (a
// corrupt batch in it is found when read); any other sealed segment is
// scanned whole and gets a new index. The last segment is opened for
// writing and scanned from its index's last entry (a clean Close left one),
// or from 0 without a usable index. A torn or corrupt tail is cut off.
// Open's goroutine.
func (l *Log) load(seg *segment, last bool) error {
	fs := l.cfg.FS
	fi, err := fs.Stat(seg.path)
	if err != nil {
		return fmt.Errorf("seglog: stat %s: %w", seg.path, err)
	}
	size := fi.Size()
	ix, ixErr := l.readIndex(seg.base)
	if !last && ixErr == nil && ix.size == size {
		seg.setIndex(ix)
		return nil
	}
	if !last {
		l.indexProblem(seg, ix, ixErr, size)
		seg.unsealed = isNotExist(ixErr)
	}
	f, err := fs.OpenReadWrite(seg.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("seglog: open %s: %w", seg.path, err)
	}
	sf := l.segFile(f)
	seg.file.Store(sf)
	pos, expect, vouched := int64(0), seg.base, int64(0)
	if last && ixErr == nil && ix.size <= size {
		// Written at a seal or a clean Close, after a sync: the bytes it
		// describes are durable. Scan from its last entry on (the
		// index's last batches, and whatever was appended after it).
		seg.setIndex(ix)
		vouched = ix.size
		if e, ok := seg.idx.last(); ok {
			pos, expect = int64(e.pos), seg.base+uint64(e.rel)
		}
	}
	r := scan(sf.f, seg, pos, expect, size)
	seg.raiseMaxTs(r.maxTs)
	seg.size.Store(r.end)
	seg.next.Store(r.next)
	if r.cut != nil {
		if err := l.cutTail(seg, r, size); err != nil {
			return err
		}
		if ixErr == nil && r.end < ix.size {
			_ = fs.Remove(l.path(seg.base, indexSuffix)) // it describes bytes cut off
		}
	}
	if !last {
		// Its seal may not have finished (sealLater): after a kill -9
		// its bytes may be in the page cache only, and the index must
		// not vouch for bytes a crash could still lose.
		if err := seg.file.Load().f.SyncData(); err != nil {
			return fmt.Errorf("seglog: sync %s: %w", seg.path, err)
		}
		if err := l.writeIndex(seg); errors.Is(err, ErrBroken) {
			return err // its fsync failed: the disk is not to be trusted
		} else if err != nil {
			l.log.Warn("segment log: could not write a rebuilt index; rebuilt again at the next open",
				"segment", seg.path, "err", err)
		}
		return nil
	}
	// Bytes past what the index vouched for may be only in the page cache
	// (the process died, not the machine): sync them before counting them
	// as durable.
	if r.end > vouched {
		if err := seg.file.Load().f.SyncData(); err != nil {
			return fmt.Errorf("seglog: sync %s: %w", seg.path, err)
		}
	}
	return nil
}

// indexProblem logs why a sealed segment's index is not used.
func (l *Log) indexProblem(seg *segment, ix indexFile, err error, size int64) {
	switch {
	case err == nil:
		l.log.Warn("segment log: index does not match its segment; rebuilding it by a scan",
			"segment", seg.path, "index_size", ix.size, "segment_size", size)
	case isNotExist(err):
		l.log.Warn("segment log: index missing; rebuilding it by a scan", "segment", seg.path)
	default:
		l.log.Warn("segment log: index unreadable; rebuilding it by a scan", "segment", seg.path, "err", err)
	}
}

// cutTail truncates a segment after its last good batch and logs what was
// cut.
func (l *Log) cutTail(seg *segment, r scanResult, size int64) error {
	l.log.Warn("segment log: cut a torn or corrupt tail at recovery",
		"segment", seg.path, "at", r.end, "bytes_cut", size-r.end, "next_offset", r.next, "why", r.cut)
	sf, err := truncate(l.cfg.FS, seg.path, seg.file.Load(), r.end)
	seg.file.Store(sf)
	if err != nil {
		return fmt.Errorf("seglog: truncate %s at %d: %w", seg.path, r.end, err)
	}
	seg.idx.cutAt(r.end)
	return nil
}

// readIndex reads and checks the index file of the segment at base.
func (l *Log) readIndex(base uint64) (indexFile, error) {
	f, err := l.cfg.FS.Open(l.path(base, indexSuffix))
	if err != nil {
		return indexFile{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return indexFile{}, err
	}
	return decodeIndex(b, base)
}

// setIndex takes a segment's state from its index file.
func (s *segment) setIndex(ix indexFile) {
	s.size.Store(ix.size)
	s.next.Store(ix.next)
	s.maxTs.Store(ix.maxTs)
	s.idx.entries = ix.entries
	s.idx.lastPos = -1
	if n := len(ix.entries); n > 0 {
		s.idx.lastPos = int64(ix.entries[n-1].pos)
	}
}

// writeIndex writes and syncs the index file of seg as it is now. Only
// after its data is durable: the index must never describe bytes a crash
// could lose. Under mu, on Open's goroutine, or on a background seal's
// (a sealed segment no longer changes; whoever removes one waits for it).
func (l *Log) writeIndex(seg *segment) error {
	seg.idx.mu.RLock()
	b := encodeIndex(indexFile{
		base: seg.base, next: seg.next.Load(), maxTs: seg.maxTs.Load(),
		size: seg.size.Load(), entries: seg.idx.entries,
	})
	seg.idx.mu.RUnlock()
	path := l.path(seg.base, indexSuffix)
	f, err := l.cfg.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("seglog: create %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		_ = l.cfg.FS.Remove(path)
		return fmt.Errorf("seglog: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return l.failSync(fmt.Errorf("sync %s: %w", path, err))
	}
	return f.Close()
}
