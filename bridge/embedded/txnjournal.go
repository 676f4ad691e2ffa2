package embedded

// The coordinator state journal (docs/STORAGE.md, "Coordinator state
// journal"). Under SyncNever and SyncInterval the coordinators' state ('x'
// keys) and committed group offsets ('o' keys) are written to pebble
// without a sync, as the policy asks; but pebble keeps an unsynced write in
// its own buffer for a while, so a kill -9 of the gateway could lose it.
// The transaction and share-group coordinators need every write they
// answered after to survive that (a forgotten partition of an ongoing
// transaction would leave its records visible after an abort), and a
// transaction's offsets must not be lost while its complete state, written
// after them, is kept. So each such write is first appended to
// txnstate.journal with one write(2): in the kernel, it survives the
// process, as the segment logs' pwritev does; like them, only a crash of
// the machine can lose what the policy left unsynced.
//
// Each write has a sequence number, in its frame and, under key 'j', in
// the same pebble batch. Open replays the frames past pebble's number, in
// order and without a gap, over pebble's state, syncs pebble and removes
// the journal: after a kill -9 those are exactly the writes pebble lost.
// After a crash of the machine pebble may hold more than the journal (the
// journal is not synced, pebble is, by other writes or the interval): its
// number then covers the whole journal and nothing is replayed, so a
// replay never sets a key back. When the journal passes journalMax,
// pebble is synced and a new, empty journal replaces it; Close syncs
// pebble and removes it.
//
// Frame: u32 LE length of the body, u32 LE CRC-32C of the body, then the
// body: u64 LE sequence number and the batch's writes
// (appendJournalFrame). Replay stops at the first frame that is short,
// fails its CRC or does not follow the one before (what a crash of the
// machine can leave).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded/seglog"
)

const (
	journalName = "txnstate.journal"
	// journalMax is the size past which the journal is replaced.
	journalMax = 4 << 20
	// journalFrameMax bounds a frame's body on replay (a corrupt length
	// must not make replay allocate without bound).
	journalFrameMax = 256 << 20
	journalHeader   = 8
	// prefixJournalSeq is the pebble key of the last journaled write's
	// sequence number (u64 BE), written in the same batch as the write.
	prefixJournalSeq = 'j'
)

var journalSeqKey = []byte{prefixJournalSeq}

var journalCRC = crc32.MakeTable(crc32.Castagnoli)

// txnJournal is the open journal. mu orders writes: a write goes to the
// journal and to pebble under it, so both see writes in the same order.
type txnJournal struct {
	mu     sync.Mutex
	fs     vfs.FS
	path   string
	f      vfs.File // nil: broken (a write failed); writes sync pebble instead
	size   int
	seq    uint64 // the last write's sequence number
	buf    []byte
	closed bool
}

// Journal operations.
const (
	journalSet         = 1
	journalDelete      = 2
	journalDeleteRange = 3 // value is the end key
)

// journalOp is one pebble write of a journaled batch.
type journalOp struct {
	kind       byte
	key, value []byte
}

// appendJournalFrame appends the frame of write seq to dst: seq, then
// each op as its kind, then u32 LE length and bytes of its key and of its
// value.
func appendJournalFrame(dst []byte, seq uint64, ops []journalOp) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, journalHeader)...)
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	for _, op := range ops {
		dst = append(dst, op.kind)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(op.key)))
		dst = append(dst, op.key...)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(op.value)))
		dst = append(dst, op.value...)
	}
	body := dst[start+journalHeader:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(body, journalCRC))
	return dst
}

// errJournalOp is a frame whose CRC holds but whose ops do not decode.
var errJournalOp = errors.New("embedded: malformed coordinator state journal frame")

// replayJournal calls fn with every op of the frames of data that follow
// write after: frames numbered after or below are skipped, then frames
// after+1, after+2, ... are replayed until one is short, fails its CRC or
// is numbered otherwise. It returns the last number replayed (after when
// none). A frame that passes its CRC but does not decode is an error.
func replayJournal(data []byte, after uint64, fn func(seq uint64, op journalOp) error) (uint64, error) {
	last := after
	for len(data) >= journalHeader {
		n := uint64(binary.LittleEndian.Uint32(data))
		if n < 8 || n > journalFrameMax || n > uint64(len(data)-journalHeader) {
			break
		}
		body := data[journalHeader : journalHeader+n]
		if crc32.Checksum(body, journalCRC) != binary.LittleEndian.Uint32(data[4:]) {
			break
		}
		data = data[journalHeader+n:]
		seq := binary.LittleEndian.Uint64(body)
		if seq <= last && last == after {
			continue // pebble has it
		}
		if seq != last+1 {
			break
		}
		for body = body[8:]; len(body) > 0; {
			var op journalOp
			var ok bool
			op.kind = body[0]
			if op.kind < journalSet || op.kind > journalDeleteRange {
				return last, errJournalOp
			}
			if body, op.key, ok = cutJournalBytes(body[1:]); !ok {
				return last, errJournalOp
			}
			if body, op.value, ok = cutJournalBytes(body); !ok {
				return last, errJournalOp
			}
			if err := fn(seq, op); err != nil {
				return last, err
			}
		}
		last = seq
	}
	return last, nil
}

// cutJournalBytes splits a u32 LE length and that many bytes off b.
func cutJournalBytes(b []byte) (rest, v []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4+n:], b[4 : 4+n], true
}

// opsBatch is a new batch of ops; the caller closes it.
func opsBatch(db *pebble.DB, ops []journalOp) (*pebble.Batch, error) {
	b := db.NewBatch()
	for _, op := range ops {
		if err := applyJournalOp(b, op); err != nil {
			_ = b.Close()
			return nil, err
		}
	}
	return b, nil
}

// applyJournalOp adds op to b.
func applyJournalOp(b *pebble.Batch, op journalOp) error {
	switch op.kind {
	case journalSet:
		return b.Set(op.key, op.value, nil)
	case journalDelete:
		return b.Delete(op.key, nil)
	default:
		return b.DeleteRange(op.key, op.value, nil)
	}
}

// recoverJournal applies the writes pebble lost from a journal a previous
// run left, syncs pebble and removes the journal; it returns how many it
// applied (-1: there was no journal) and the last write's number. Open
// only.
func recoverJournal(fs vfs.FS, db *pebble.DB, path string) (int, uint64, error) {
	seq, err := journalSeq(db)
	if err != nil {
		return 0, 0, err
	}
	f, err := fs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return -1, seq, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return 0, 0, fmt.Errorf("embedded: read %s: %w", path, err)
	}
	b := db.NewBatch()
	defer b.Close()
	last, err := replayJournal(data, seq, func(_ uint64, op journalOp) error { return applyJournalOp(b, op) })
	if err != nil {
		return 0, 0, fmt.Errorf("embedded: %s: %w", path, err)
	}
	if last > seq {
		if err := b.Set(journalSeqKey, binary.BigEndian.AppendUint64(nil, last), nil); err != nil {
			return 0, 0, err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, 0, fmt.Errorf("embedded: replaying %s: %w", path, err)
	}
	if err := removeJournal(fs, path); err != nil {
		return 0, 0, err
	}
	return int(last - seq), last, nil
}

// journalSeq reads the last journaled write's number from pebble.
func journalSeq(db *pebble.DB) (uint64, error) {
	v, closer, err := db.Get(journalSeqKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: reading the journal's sequence number: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("embedded: journal sequence number of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// removeJournal removes the journal and syncs its directory (tidiness:
// the sequence numbers make an old journal harmless).
func removeJournal(fs vfs.FS, path string) error {
	if err := fs.Remove(path); err != nil {
		return fmt.Errorf("embedded: remove %s: %w", path, err)
	}
	if err := seglog.SyncDir(fs, fs.PathDir(path)); err != nil {
		return fmt.Errorf("embedded: sync the directory of %s: %w", path, err)
	}
	return nil
}

// openJournal makes a new, empty journal whose writes follow seq. Open
// only.
func openJournal(fs vfs.FS, path string, seq uint64) (*txnJournal, error) {
	j := &txnJournal{fs: fs, path: path, seq: seq}
	if err := j.replace(); err != nil {
		return nil, err
	}
	return j, nil
}

// replace makes a new, empty journal file in place of the current one.
// The caller synced pebble past every write the old one holds. mu held
// (or Open).
func (j *txnJournal) replace() error {
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
	f, err := j.fs.Create(j.path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("embedded: create %s: %w", j.path, err)
	}
	// Not needed for safety (an old journal is skipped by its numbers),
	// but a new journal is not used before its entry is durable.
	if err := seglog.SyncDir(j.fs, j.fs.PathDir(j.path)); err != nil {
		_ = f.Close()
		return fmt.Errorf("embedded: sync the directory of %s: %w", j.path, err)
	}
	j.f, j.size = f, 0
	return nil
}

// put writes ops to the journal, then to pebble without a sync. When the
// journal is broken (a write failed), or is to be replaced, they are
// committed synced instead, and a new journal made. Any goroutine.
func (j *txnJournal) put(db *pebble.DB, ops []journalOp) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return bridge.ErrClosed
	}
	seq := j.seq + 1
	b, err := opsBatch(db, ops)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.Set(journalSeqKey, binary.BigEndian.AppendUint64(nil, seq), nil); err != nil {
		return err
	}
	// From here the number is spent, whatever follows: the next write's
	// frame must follow this one's for a replay to reach it.
	j.seq = seq
	opts := pebble.NoSync
	if j.f != nil {
		j.buf = appendJournalFrame(j.buf[:0], j.seq, ops)
		if _, err := j.f.Write(j.buf); err != nil {
			// Part of the frame may be in the file, and replay stops
			// there: this write and the next ones go to pebble synced
			// until a new journal is made.
			_ = j.f.Close()
			j.f = nil
		} else {
			j.size += len(j.buf)
		}
	}
	renew := j.f == nil || j.size >= journalMax
	if renew {
		opts = pebble.Sync
	}
	if err := b.Commit(opts); err != nil {
		return err
	}
	if renew {
		// Pebble is synced past everything the journal holds.
		_ = j.replace()
	}
	return nil
}

// close closes and removes the journal. Close calls it once pebble is
// synced, so pebble holds everything the journal does; a journal left
// behind (removal failed) is skipped by its numbers.
func (j *txnJournal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
	_ = removeJournal(j.fs, j.path)
}

// openJournal replays the journal a previous run left and, under
// SyncNever and SyncInterval, makes a new one. Open only.
func (s *Store) openJournal() error {
	path := s.fs.PathJoin(s.dir, journalName)
	frames, seq, err := recoverJournal(s.fs, s.db, path)
	if err != nil {
		return err
	}
	if frames >= 0 {
		// A journal is left only by a run that did not close: say what it
		// gave back (the writes pebble had lost).
		s.log.Info("embedded store: coordinator state journal read", "replayed", frames)
	}
	if s.policy == SyncAlways {
		return nil
	}
	s.journal, err = openJournal(s.fs, path, seq)
	return err
}

// commitOps commits ops: under SyncAlways (no journal) to pebble with
// opts; else through the journal, unsynced, as the policy says. Every
// write of the 'x' and 'o' keys goes through it, so one rule decides how
// durable each is. Caller is inside enterWrite.
func (s *Store) commitOps(ops []journalOp, opts *pebble.WriteOptions) error {
	if len(ops) == 0 {
		return nil
	}
	if s.journal != nil {
		err := s.journal.put(s.db, ops)
		s.wroteUnsynced()
		return err
	}
	b, err := opsBatch(s.db, ops)
	if err != nil {
		return err
	}
	defer b.Close()
	return b.Commit(opts)
}
