package embedded

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

var (
	_ bridge.PartitionGrower = (*Store)(nil)
	_ bridge.RecordDeleter   = (*Store)(nil)
	_ bridge.SizeReporter    = (*Store)(nil)
)

// DeleteRecords moves the partition's log start to before
// (bridge.RecordDeleter). The new start and the range delete of every
// batch wholly below it are one synced commit; a batch holding offsets on
// both sides of before stays stored, its offsets below before unreadable
// (Poll callers skip them, Partition reports before as Earliest). Readers
// in flight keep their pebble snapshot. Worker goroutines (it fsyncs).
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
	// exclusively, so the topic's keys stay as they are meanwhile.
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.deleted {
		return bridge.PartitionState{}, bridge.ErrTopicNotFound
	}
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	hwm := p.visible.Load()
	if before > hwm {
		return p.state(), fmt.Errorf("%w: %d above the high watermark %d", bridge.ErrOffsetOutOfRange, before, hwm)
	}
	if before <= p.earliest.Load() {
		return p.state(), nil
	}
	if err := ctx.Err(); err != nil {
		return bridge.PartitionState{}, err
	}
	cut, err := s.trimPoint(t.info.ID, uint32(part), before)
	if err != nil {
		return bridge.PartitionState{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(logStartKey(t.info.ID, uint32(part)), be.AppendUint64(nil, before), nil)
	if lo, _ := partitionBounds(t.info.ID, uint32(part)); cut != nil {
		_ = b.DeleteRange(lo, cut, nil)
	}
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return bridge.PartitionState{}, fmt.Errorf("%w: delete records: %w", bridge.ErrUnavailable, err)
	}
	p.earliest.Store(before)
	return p.state(), nil
}

// trimPoint returns the key below which every batch of the partition ends
// at or before offset before: the key of the last batch starting below
// before when that batch runs past it, else dataKey(before). nil when no
// batch starts below before. Every batch below the high watermark is
// committed, so the iterator sees them all.
func (s *Store) trimPoint(id, part uint32, before uint64) ([]byte, error) {
	it, err := s.visibleIter(id, part, before)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if !it.Last() {
		return nil, it.Error()
	}
	v, err := bridge.ParseIggyBatch(it.Value())
	if err != nil {
		return nil, fmt.Errorf("embedded: topic %d partition %d: stored batch: %w", id, part, err)
	}
	if offsetOfKey(it.Key())+uint64(v.Count) > before {
		return append([]byte(nil), it.Key()...), nil
	}
	return dataKey(id, part, before), nil
}

// PartitionSizes estimates each partition's stored bytes
// (bridge.SizeReporter): pebble's estimate of the partition's key range on
// disk, or the bytes appended since Open when that is more (data still in
// the memtable is not on disk yet). Deleted ranges count until pebble
// compacts them away.
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
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lo, hi := partitionBounds(t.info.ID, uint32(i))
		n, err := s.db.EstimateDiskUsage(lo, hi)
		if err != nil {
			return nil, fmt.Errorf("embedded: estimate size: %w", err)
		}
		out[i] = max(int64(n), p.appended.Load())
	}
	return out, nil
}
