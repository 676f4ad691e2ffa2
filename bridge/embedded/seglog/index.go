package seglog

import (
	"encoding/binary"
	"errors"
	"sort"
	"sync"

	"github.com/zeebo/xxh3"
)

// indexInterval bounds the batch bytes between two index entries: a batch
// starts less than indexInterval past the last entry before it (an entry is
// added at the first batch starting indexInterval or more past the last),
// so a read of maxBytes+indexInterval (and a header) from the entry holds a
// whole answer of maxBytes.
const indexInterval = 4096

// maxSegmentSize bounds a segment so positions fit the index's u32; a
// segment rolls before a batch would cross it (or segment.bytes).
const maxSegmentSize = 1<<32 - 1

// maxRel bounds the offsets of a segment: base+maxRel at most, so relative
// offsets fit the index's u32.
const maxRel = 1<<32 - 1

// entry maps the batch at offset base+rel to file position pos.
type entry struct{ rel, pos uint32 }

// sparseIndex is a segment's in-memory offset index. Entries are added
// under Log.mu by the one writer and read by any reader, hence its lock.
type sparseIndex struct {
	mu      sync.RWMutex
	entries []entry
	lastPos int64 // position of the last entry, -1 when none
}

// add indexes the batch at (rel, pos) when it lies indexInterval or more
// past the last entry, or is the first. Writer goroutine, under Log.mu.
func (x *sparseIndex) add(rel uint32, pos int64) {
	if len(x.entries) > 0 && pos-x.lastPos < indexInterval {
		return
	}
	x.mu.Lock()
	x.entries = append(x.entries, entry{rel: rel, pos: uint32(pos)})
	x.mu.Unlock()
	x.lastPos = pos
}

// lookup returns the last entry at or before rel (the first when rel is
// below all of them); ok is false for an empty index. Any goroutine.
func (x *sparseIndex) lookup(rel uint64) (entry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	es := x.entries
	if len(es) == 0 {
		return entry{}, false
	}
	i := sort.Search(len(es), func(i int) bool { return uint64(es[i].rel) > rel })
	return es[max(i-1, 0)], true
}

// last returns the index's last entry.
func (x *sparseIndex) last() (entry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.entries) == 0 {
		return entry{}, false
	}
	return x.entries[len(x.entries)-1], true
}

// cutAt drops the entries at or past pos (recovery truncated the segment
// there). Open's goroutine.
func (x *sparseIndex) cutAt(pos int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].pos) >= pos })
	x.entries = x.entries[:i]
	x.lastPos = -1
	if i > 0 {
		x.lastPos = int64(x.entries[i-1].pos)
	}
}

// The index file of a segment (<base>.index), little-endian:
//
//	0  magic "SLIX"   4  version (1)
//	8  base u64       16 size u64: the segment file's size it describes
//	24 next u64: one past the segment's last offset
//	32 maxTs u64      40 entries u32, 44 zero u32
//	48 entries: rel u32, pos u32 each
//	then xxh3-64 of every byte before it
//
// It is valid for a segment only if everything checks and, for a sealed
// segment, size equals the file's size (indexFile.check).
const (
	indexMagic   = 0x58494c53 // "SLIX"
	indexVersion = 1
	indexHead    = 48
)

var le = binary.LittleEndian

// indexFile is a decoded index file.
type indexFile struct {
	base, next, maxTs uint64
	size              int64
	entries           []entry
}

var errBadIndex = errors.New("seglog: invalid index file")

// encodeIndex serialises a segment's index as of (size, next).
func encodeIndex(ix indexFile) []byte {
	b := make([]byte, indexHead, indexHead+8*len(ix.entries)+8)
	le.PutUint32(b[0:], indexMagic)
	le.PutUint32(b[4:], indexVersion)
	le.PutUint64(b[8:], ix.base)
	le.PutUint64(b[16:], uint64(ix.size))
	le.PutUint64(b[24:], ix.next)
	le.PutUint64(b[32:], ix.maxTs)
	le.PutUint32(b[40:], uint32(len(ix.entries)))
	for _, e := range ix.entries {
		b = le.AppendUint32(b, e.rel)
		b = le.AppendUint32(b, e.pos)
	}
	return le.AppendUint64(b, xxh3.Hash(b))
}

// decodeIndex parses and checks an index file's bytes for the segment at
// base: checksum, header, and entries strictly increasing from (0, 0) and
// inside size. It does not compare size with the segment file.
func decodeIndex(b []byte, base uint64) (indexFile, error) {
	if len(b) < indexHead+8 || xxh3.Hash(b[:len(b)-8]) != le.Uint64(b[len(b)-8:]) {
		return indexFile{}, errBadIndex
	}
	ix := indexFile{
		base: le.Uint64(b[8:]), size: int64(le.Uint64(b[16:])),
		next: le.Uint64(b[24:]), maxTs: le.Uint64(b[32:]),
	}
	n := le.Uint32(b[40:])
	if le.Uint32(b[0:]) != indexMagic || le.Uint32(b[4:]) != indexVersion || le.Uint32(b[44:]) != 0 ||
		ix.base != base || ix.size < 0 || ix.size > maxSegmentSize || ix.next < base ||
		uint64(len(b)) != indexHead+8*uint64(n)+8 {
		return indexFile{}, errBadIndex
	}
	if (ix.size == 0) != (n == 0) || (n == 0) != (ix.next == base) {
		return indexFile{}, errBadIndex
	}
	ix.entries = make([]entry, n)
	for i := range ix.entries {
		e := entry{rel: le.Uint32(b[indexHead+8*i:]), pos: le.Uint32(b[indexHead+8*i+4:])}
		if i == 0 && e != (entry{}) || i > 0 && (e.rel <= ix.entries[i-1].rel || e.pos <= ix.entries[i-1].pos) ||
			int64(e.pos) >= ix.size || base+uint64(e.rel) >= ix.next {
			return indexFile{}, errBadIndex
		}
		ix.entries[i] = e
	}
	return ix, nil
}
