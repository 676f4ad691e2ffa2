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
// Open replays the journal over pebble's state, syncs pebble and removes
// the journal. The journal holds every write since it was made, in
// pebble's order, so replaying it over whatever prefix of them pebble
// kept gives the state as last written. When it passes journalMax, pebble
// is synced and a new, empty journal replaces it.
//
// Frame: u32 LE length of the body, u32 LE CRC-32C of the body, then the
// body: the batch's writes (appendJournalFrame). Replay stops at the first
// frame that is short or fails its CRC (what a machine crash can leave at
// the end).

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
)

var journalCRC = crc32.MakeTable(crc32.Castagnoli)

// txnJournal is the open journal. mu orders writes: a write goes to the
// journal and to pebble under it, so both see writes in the same order.
type txnJournal struct {
	mu     sync.Mutex
	fs     vfs.FS
	path   string
	f      vfs.File // nil: broken (a write failed); writes sync pebble instead
	size   int
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

// appendJournalFrame appends the frame of ops to dst: each op is its
// kind, then u32 LE length and bytes of its key and of its value.
func appendJournalFrame(dst []byte, ops []journalOp) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, journalHeader)...)
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

// replayJournal calls fn with every op of the whole frames of data, in
// order, and returns how many frames it read. It stops at the first
// frame that is short or fails its CRC; a frame that passes its CRC but
// does not decode is an error.
func replayJournal(data []byte, fn func(op journalOp) error) (int, error) {
	frames := 0
	for len(data) >= journalHeader {
		n := int(binary.LittleEndian.Uint32(data))
		if n > journalFrameMax || n > len(data)-journalHeader {
			break
		}
		body := data[journalHeader : journalHeader+n]
		if crc32.Checksum(body, journalCRC) != binary.LittleEndian.Uint32(data[4:]) {
			break
		}
		for len(body) > 0 {
			var op journalOp
			var ok bool
			op.kind = body[0]
			if op.kind < journalSet || op.kind > journalDeleteRange {
				return frames, errJournalOp
			}
			if body, op.key, ok = cutJournalBytes(body[1:]); !ok {
				return frames, errJournalOp
			}
			if body, op.value, ok = cutJournalBytes(body); !ok {
				return frames, errJournalOp
			}
			if err := fn(op); err != nil {
				return frames, err
			}
		}
		data = data[journalHeader+n:]
		frames++
	}
	return frames, nil
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

// recoverJournal applies a journal a previous run left to pebble, syncs
// pebble and removes it. Open only.
func recoverJournal(fs vfs.FS, db *pebble.DB, path string) (int, error) {
	f, err := fs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: open %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return 0, fmt.Errorf("embedded: read %s: %w", path, err)
	}
	b := db.NewBatch()
	defer b.Close()
	frames, err := replayJournal(data, func(op journalOp) error { return applyJournalOp(b, op) })
	if err != nil {
		return 0, fmt.Errorf("embedded: %s: %w", path, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("embedded: replaying %s: %w", path, err)
	}
	// The removal is made durable: a journal that came back after a crash
	// of the machine would be replayed over newer state.
	if err := fs.Remove(path); err != nil {
		return 0, fmt.Errorf("embedded: remove %s: %w", path, err)
	}
	if err := seglog.SyncDir(fs, fs.PathDir(path)); err != nil {
		return 0, fmt.Errorf("embedded: sync the directory of %s: %w", path, err)
	}
	return frames, nil
}

// openJournal makes a new, empty journal. Open only.
func openJournal(fs vfs.FS, path string) (*txnJournal, error) {
	j := &txnJournal{fs: fs, path: path}
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
	// As at Open: the old journal must not come back after a crash of the
	// machine. Until the directory is synced the new one is not used.
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
	b := db.NewBatch()
	defer b.Close()
	for _, op := range ops {
		if err := applyJournalOp(b, op); err != nil {
			return err
		}
	}
	opts := pebble.NoSync
	if j.f != nil {
		j.buf = appendJournalFrame(j.buf[:0], ops)
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

// close closes the journal file; it stays for the next Open to replay
// (pebble holds all of it by then, so the replay changes nothing).
func (j *txnJournal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
}

// openJournal replays the journal a previous run left and, under
// SyncNever and SyncInterval, makes a new one. Open only.
func (s *Store) openJournal() error {
	path := s.fs.PathJoin(s.dir, journalName)
	frames, err := recoverJournal(s.fs, s.db, path)
	if err != nil {
		return err
	}
	if frames > 0 {
		s.log.Info("embedded store: coordinator state journal replayed", "frames", frames)
	}
	if s.policy == SyncAlways {
		return nil
	}
	s.journal, err = openJournal(s.fs, path)
	return err
}

// commitOps commits ops: under SyncAlways (no journal) to pebble with
// opts; else through the journal, unsynced, as the policy says. For the
// keys only ever written this way ('x', 'o'): a key also written around
// the journal could be set back to an older value by a replay. Caller is
// inside enterWrite.
func (s *Store) commitOps(ops []journalOp, opts *pebble.WriteOptions) error {
	if s.journal != nil {
		err := s.journal.put(s.db, ops)
		s.wroteUnsynced()
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, op := range ops {
		if err := applyJournalOp(b, op); err != nil {
			return err
		}
	}
	return b.Commit(opts)
}
