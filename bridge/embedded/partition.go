package embedded

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded/seglog"
)

// partition is one partition's data: its segment log (seglog), which
// orders appends, keeps the high watermark and holds the batches. trimMu
// serializes the moves of its log start (DeleteRecords, retention).
type partition struct {
	log    *seglog.Log
	trimMu sync.Mutex
}

// state returns the partition's offsets as readers may see them.
func (p *partition) state() bridge.PartitionState {
	next := p.log.Next()
	if next == 0 {
		return bridge.PartitionState{}
	}
	return bridge.PartitionState{Earliest: min(p.log.Earliest(), next), Next: next}
}

// partDir is the directory of a partition's segment log:
// <data dir>/logs/<topic id>/<partition>. Topic ids are never reused, so a
// directory never outlives its topic's identity.
func (s *Store) partDir(id uint32, part int) string {
	return s.fs.PathJoin(s.topicDir(id), strconv.Itoa(part))
}

func (s *Store) topicDir(id uint32) string {
	return s.fs.PathJoin(s.logsDir, strconv.FormatUint(uint64(id), 10))
}

// openPartition opens (recovers) the segment log of partition part of
// topic id; start is its log start offset (the 'l' key, 0 when none). The
// directory is made at the first append.
func (s *Store) openPartition(id uint32, part int, start uint64) (*partition, error) {
	dir := s.partDir(id, part)
	l, err := seglog.Open(seglog.Config{
		FS: s.fs, Dir: dir, Partition: uint64(part), Start: start,
		VisibleOnSync: s.policy == SyncAlways, Direct: s.direct,
		Logger: s.log.With("topic_id", id, "partition", part), Clock: nowMicros,
		MakeDir: func() error { return s.makePartDir(id, dir) },
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: topic %d partition %d: %w", id, part, err)
	}
	return &partition{log: l}, nil
}

// makePartDir creates a partition's directory and makes its entry, and its
// topic directory's, durable. Under the partition log's lock (first roll).
func (s *Store) makePartDir(id uint32, dir string) error {
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := seglog.SyncDir(s.fs, s.topicDir(id)); err != nil {
		return err
	}
	return seglog.SyncDir(s.fs, s.logsDir)
}

// Append verifies batch as the Iggy server would (lengths, offset deltas,
// checksums) and writes it at the end of the partition's log, stamped with
// the next offsets, with no copy of its payloads. Under SyncAlways it
// returns once the batch is synced (group commit: concurrent appends share
// one fdatasync). See docs/STORAGE.md for what a nil error promises under
// each policy. Any goroutine.
func (s *Store) Append(ctx context.Context, stream, name string, part int32, batch []byte) (uint64, error) {
	if err := s.enterWrite(); err != nil {
		return 0, err
	}
	defer s.exitWrite()
	v, err := bridge.VerifyIggyBatch(batch)
	if err != nil {
		return 0, err
	}
	t, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// Shared with other appends; DeleteTopic and SetPartitions take it
	// exclusively before they remove logs.
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.deleted {
		return 0, bridge.ErrTopicNotFound
	}
	base, end, err := p.log.Append(ctx, batch[:v.Length], v, t.segBytes.Load())
	if err != nil {
		if isContextErr(err) {
			return 0, err // waited for a sync round past the deadline: nothing written
		}
		return 0, s.writeFailed("append", err, int(v.Length))
	}
	if s.policy != SyncAlways {
		s.wroteUnsynced()
		return base, nil
	}
	if err := p.log.WaitSynced(ctx, end); err != nil {
		if isContextErr(err) {
			return 0, err // written; the running sync round syncs once more for it
		}
		return 0, s.fail("append sync", err)
	}
	return base, nil
}

// AppendStaged is Append for a batch the mapping built, which is not
// verified again (its frames are well formed and checksummed by
// construction; times gives its newest record time),
// returning once the batch is written. Under SyncAlways durable waits for
// the group commit that syncs it and makes it visible; under the other
// policies it is nil (the batch is visible once written). Any goroutine.
func (s *Store) AppendStaged(ctx context.Context, stream, name string, part int32, batch []byte, prep bridge.Prepared) (uint64, func(context.Context) error, error) {
	if err := s.enterWrite(); err != nil {
		return 0, nil, err
	}
	defer s.exitWrite()
	v, err := bridge.ParseIggyBatch(batch)
	if err != nil {
		return 0, nil, err
	}
	v.Times, v.Sums = prep.Times, prep.Sums
	t, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return 0, nil, err
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.deleted {
		return 0, nil, bridge.ErrTopicNotFound
	}
	base, end, err := p.log.Append(ctx, batch[:v.Length], v, t.segBytes.Load())
	if err != nil {
		if isContextErr(err) {
			return 0, nil, err
		}
		return 0, nil, s.writeFailed("append", err, int(v.Length))
	}
	if s.policy != SyncAlways {
		s.wroteUnsynced()
		return base, nil, nil
	}
	log := p.log
	return base, func(ctx context.Context) error {
		// Held open like any call (Close waits for it), but not refused
		// on a full disk: the batch is written, only its sync is left.
		if err := s.enter(); err != nil {
			return err
		}
		defer s.ops.RUnlock()
		if err := log.WaitSynced(ctx, end); err != nil {
			if isContextErr(err) {
				return err // written; the running sync round syncs once more for it
			}
			return s.fail("append sync", err)
		}
		return nil
	}, nil
}

// isContextErr reports an error that is only the call's context ending.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// writeFailed answers an error from a segment log write. A full disk (the
// write was undone: nothing stored, the offsets free again) puts the store
// in the disk-full state, with a space probe that brings it back by
// itself; need is the size of the write, what the probe makes room for.
// Anything else (an I/O error, a write that could not be undone, a failed
// fsync) fails the store until a restart recovers from what is on disk.
func (s *Store) writeFailed(what string, err error, need int) error {
	if isNoSpace(err) && !errors.Is(err, seglog.ErrBroken) {
		s.startProbe(int64(need))
		s.health.diskFull(what, s.logsDir, err)
		if herr := s.health.err(); herr != nil {
			return herr
		}
		return fmt.Errorf("%w: %s: %w", bridge.ErrStorage, what, err)
	}
	if errors.Is(err, seglog.ErrClosed) {
		return bridge.ErrClosed
	}
	return s.fail(what, err)
}

// Poll passes the partition's batches, from the one holding offset from,
// up to the visible high watermark. maxBytes is a cap on the bytes passed:
// a batch that would go over it is not passed, unless it is the first.
// Every batch passed its checksums; a corrupt one is an error
// (bridge.ErrStorage), never passed. fn must not call back into the store
// (a pending Close would deadlock it). Any goroutine.
func (s *Store) Poll(ctx context.Context, stream, name string, part int32, from uint64, maxBytes int, fn func(batch []byte) bool) error {
	if err := s.enterRead(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	_, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.readFailed(p.log.Read(from, maxBytes, fn))
}

// readFailed maps an error from reading a partition's log: the log closed
// under the call (its topic or partition was deleted), or its bytes are not
// what was written (logged; the call gets bridge.ErrStorage).
func (s *Store) readFailed(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, seglog.ErrClosed):
		return bridge.ErrTopicNotFound
	case errors.Is(err, seglog.ErrCorrupt):
		if every(&s.lastCorrupt, 10*time.Second) {
			s.log.Error("embedded store: corrupt data in a segment log", "err", err)
		}
	}
	return fmt.Errorf("%w: %w", bridge.ErrStorage, err)
}

// Partition returns the partition's offsets.
func (s *Store) Partition(ctx context.Context, stream, name string, part int32) (bridge.PartitionState, error) {
	if err := s.enter(); err != nil {
		return bridge.PartitionState{}, err
	}
	defer s.ops.RUnlock()
	_, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return bridge.PartitionState{}, err
	}
	return p.state(), nil
}

// OffsetForTimestamp returns the first offset (from the log start on)
// whose time is >= ts: the time Fetch shows for it (bridge.SearchTime), a
// message's Kafka timestamp, or its batch's append time when it has none
// (origin 0). Segments whose newest record is older than ts are skipped
// unread; the first other one is scanned. Any goroutine.
func (s *Store) OffsetForTimestamp(ctx context.Context, stream, name string, part int32, ts uint64) (uint64, bool, error) {
	if err := s.enterRead(); err != nil {
		return 0, false, err
	}
	defer s.ops.RUnlock()
	_, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return 0, false, err
	}
	off, found, err := p.log.OffsetForTimestamp(ctx, ts)
	if err != nil && ctx.Err() == nil {
		return 0, false, s.readFailed(err)
	}
	return off, found, err
}
