package embedded

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

// partition orders the appends of one partition. Offsets are handed out
// under mu, but the pebble commit (and its fsync) runs outside it, so
// concurrent appends share an fsync. Commits can therefore finish out of
// order; visible (the high watermark readers see) only moves past a range
// once every lower range has committed, so no reader ever sees a gap.
type partition struct {
	mu       sync.Mutex
	next     uint64        // next offset to hand out
	inflight []reservation // handed-out ranges not yet visible, by offset
	head     int           // first live element of inflight

	// earliest is the first readable offset: the first stored batch's
	// base, or the log start DeleteRecords set when that is higher.
	earliest atomic.Uint64
	// trimMu serializes DeleteRecords on the partition.
	trimMu sync.Mutex
	// appended counts the batch bytes committed since Open, so a size
	// estimate also sees data not yet flushed from the memtable.
	appended atomic.Int64

	visible atomic.Uint64 // high watermark: every offset below is committed
}

// reservation is one append's offset range [base, end) and whether its
// commit has finished.
type reservation struct {
	base, end uint64
	done      bool
}

// init sets the offsets recovered at Open.
func (p *partition) init(earliest, next uint64) {
	p.earliest.Store(earliest)
	p.next = next
	p.visible.Store(next)
}

// reserve hands out the next n offsets and queues their range.
func (p *partition) reserve(n uint64) uint64 {
	p.mu.Lock()
	base := p.next
	p.next += n
	p.inflight = append(p.inflight, reservation{base: base, end: base + n})
	p.mu.Unlock()
	return base
}

// commit marks the range starting at base committed and advances the
// visible watermark over every leading committed range.
func (p *partition) commit(base uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := p.head; i < len(p.inflight); i++ {
		if p.inflight[i].base == base {
			p.inflight[i].done = true
			break
		}
	}
	for p.head < len(p.inflight) && p.inflight[p.head].done {
		p.visible.Store(p.inflight[p.head].end)
		p.head++
	}
	p.compact()
}

// compact reuses the queue's backing array: reset when drained, shift the
// live tail down when the dead head is the larger part, so a queue that
// never drains under load does not grow without bound.
func (p *partition) compact() {
	switch {
	case p.head == len(p.inflight):
		p.inflight, p.head = p.inflight[:0], 0
	case p.head > len(p.inflight)/2:
		n := copy(p.inflight, p.inflight[p.head:])
		p.inflight, p.head = p.inflight[:n], 0
	}
}

// state returns the partition's offsets as readers may see them.
func (p *partition) state() bridge.PartitionState {
	next := p.visible.Load()
	if next == 0 {
		return bridge.PartitionState{}
	}
	return bridge.PartitionState{Earliest: min(p.earliest.Load(), next), Next: next}
}

// Append verifies batch as the Iggy server would (lengths, offset deltas,
// checksums), stores a stamped copy under the next offsets and returns the
// first. The copy is written straight into pebble's batch buffer, so the
// bytes are copied once. See docs/STORAGE.md for what a nil error promises
// under each sync policy.
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
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.deleted {
		return 0, bridge.ErrTopicNotFound
	}
	return s.commitBatch(t.info.ID, part, p, batch[:v.Length], uint64(v.Count))
}

// commitBatch copies, stamps and commits one verified batch. Once offsets
// are reserved the commit must happen or the store fails (see fail).
func (s *Store) commitBatch(id uint32, part int32, p *partition, batch []byte, count uint64) (uint64, error) {
	b := s.db.NewBatch()
	defer b.Close()
	op := b.SetDeferred(dataKeyLen, len(batch))
	copy(op.Value, batch)
	base := p.reserve(count)
	putDataKey(op.Key, id, uint32(part), base)
	bridge.StampIggyBatch(op.Value, uint64(part), base, nowMicros())
	if err := op.Finish(); err != nil {
		return 0, s.fail("append", err)
	}
	if err := s.db.Apply(b, s.writeOpts); err != nil {
		return 0, s.fail("append", err)
	}
	p.commit(base)
	p.appended.Add(int64(len(batch)))
	if s.policy == SyncInterval {
		s.dirty.Add(1)
	}
	return base, nil
}

// Poll passes the partition's batches, from the one holding offset from,
// up to the visible high watermark. maxBytes is a cap on the bytes passed:
// a batch that would go over it is not passed, unless it is the first.
// fn must not call back into the store (a pending Close would deadlock it).
func (s *Store) Poll(ctx context.Context, stream, name string, part int32, from uint64, maxBytes int, fn func(batch []byte) bool) error {
	if err := s.enterRead(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	t, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return err
	}
	// Read the watermark before the iterator takes its snapshot: every
	// batch below it is committed, so the snapshot holds all of them.
	hwm := p.visible.Load()
	if from >= hwm {
		return nil
	}
	it, err := s.visibleIter(t.info.ID, uint32(part), hwm)
	if err != nil {
		return err
	}
	defer it.Close()
	if !it.SeekLT(dataKey(t.info.ID, uint32(part), from+1)) {
		it.First()
	}
	sent := 0
	for ; it.Valid(); it.Next() {
		val, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if sent > 0 && sent+len(val) > maxBytes {
			break
		}
		if !fn(val) {
			break
		}
		sent += len(val)
		if sent >= maxBytes {
			break
		}
	}
	return it.Error()
}

// visibleIter iterates a partition's batches whose base offset is below
// hwm. Batches are whole, so each of them ends at or below hwm.
func (s *Store) visibleIter(id, part uint32, hwm uint64) (*pebble.Iterator, error) {
	lo, _ := partitionBounds(id, part)
	return s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: dataKey(id, part, hwm)})
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

// OffsetForTimestamp scans the partition from its start for the first
// message whose timestamp is >= ts. A message's timestamp is its origin
// timestamp, or its batch's append time when it has none (origin 0), the
// same time Fetch shows for it. Cost: one pass over the partition's frame
// headers (payloads are not read but do pass through the block cache), so
// it is O(partition size); ListOffsets by time is rare in Kafka clients.
func (s *Store) OffsetForTimestamp(ctx context.Context, stream, name string, part int32, ts uint64) (uint64, bool, error) {
	if err := s.enterRead(); err != nil {
		return 0, false, err
	}
	defer s.ops.RUnlock()
	t, p, err := s.lookupPartition(stream, name, part)
	if err != nil {
		return 0, false, err
	}
	hwm := p.visible.Load()
	if hwm == 0 {
		return 0, false, nil
	}
	it, err := s.visibleIter(t.info.ID, uint32(part), hwm)
	if err != nil {
		return 0, false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
		off, found, err := firstAtOrAfter(it.Value(), ts, p.earliest.Load())
		if err != nil || found {
			return off, found, err
		}
	}
	return 0, false, it.Error()
}

// firstAtOrAfter finds the first message of a stored batch at or after ts,
// among the offsets from start on (below it DeleteRecords removed them).
func firstAtOrAfter(b []byte, ts, start uint64) (uint64, bool, error) {
	v, err := bridge.ParseIggyBatch(b)
	if err != nil {
		return 0, false, fmt.Errorf("embedded: stored batch: %w", err)
	}
	mi := bridge.NewIggyMessageIter(v)
	for mi.Next() {
		m := mi.Message()
		if m.Offset < start {
			continue
		}
		mts := m.OriginTimestamp
		if mts == 0 {
			mts = m.Timestamp
		}
		if mts >= ts {
			return m.Offset, true, nil
		}
	}
	return 0, false, mi.Err()
}
