package embedded

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

// DeleteRecords moves the partition's log start to before
// (Kafka DeleteRecords): the new start is committed to pebble (synced),
// then the segments that end at or below it are removed from the log. A
// batch holding offsets on both sides of before stays stored, its offsets
// below before unreadable (Poll callers skip them, Partition reports
// before as Earliest), and so do the other batches of its segment: disk
// space comes back a whole segment at a time. Readers in flight finish
// reading a removed segment. Worker goroutines (it fsyncs).
func (s *Store) DeleteRecords(ctx context.Context, stream, name string, part int32, before uint64) (bridge.PartitionState, error) {
	if err := s.enterWrite(); err != nil {
		return bridge.PartitionState{}, err
	}
	defer s.exitWrite()
	t, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return bridge.PartitionState{}, err
	}
	// Shared with Appends; DeleteTopic and SetPartitions take it
	// exclusively, so the partition's log stays meanwhile.
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.deleted {
		return bridge.PartitionState{}, bridge.ErrTopicNotFound
	}
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	hwm := p.log.Next()
	if before > hwm {
		return p.state(), fmt.Errorf("%w: %d above the high watermark %d", bridge.ErrOffsetOutOfRange, before, hwm)
	}
	if before <= p.log.Earliest() {
		return p.state(), nil
	}
	if err := ctx.Err(); err != nil {
		return bridge.PartitionState{}, err
	}
	if err := s.moveStart(t.info.ID, part, p, before); err != nil {
		return bridge.PartitionState{}, err
	}
	return p.state(), nil
}

// moveStart makes start the partition's log start: the 'l' key first,
// synced (a crash after it finds the start and removes the segments below
// it at Open), then the log, which removes the segments wholly below it.
// Under p.trimMu.
func (s *Store) moveStart(id uint32, part int32, p *partition, start uint64) error {
	if err := s.db.Set(logStartKey(id, uint32(part)), be.AppendUint64(nil, start), pebble.Sync); err != nil {
		return fmt.Errorf("%w: log start: %w", bridge.ErrUnavailable, err)
	}
	if err := p.log.SetStart(start); err != nil {
		s.log.Warn("embedded store: removing segments below the log start; removed again at the next open", "err", err)
	}
	return nil
}

// PartitionSizes returns each partition's bytes on disk
// (Kafka DescribeLogDirs): the sizes of its segment files, which include the
// batches below its log start in its first segment until that segment
// goes whole.
func (s *Store) PartitionSizes(ctx context.Context, stream, name string) ([]int64, error) {
	if err := s.enterRead(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	t, err := s.lookup(stream, name)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(t.parts))
	for i, p := range t.parts {
		out[i] = p.log.Size()
	}
	return out, nil
}
