package embedded

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

// Retention (docs/STORAGE.md, "Retention"). One sweeper goroutine per
// store wakes every Options.RetentionCheckInterval and, for every topic
// whose cleanup.policy includes delete (the default), moves each
// partition's log start past
//
//   - retention.ms (>= 0): the leading batches whose newest record is
//     older than now - retention.ms. A record's time is its origin
//     timestamp (the Kafka record timestamp, CreateTime), or its batch's
//     append time when it has none, the time Fetch shows for it. Kafka
//     likewise compares a segment's largest timestamp against now.
//   - retention.bytes (>= 0): the oldest batches while the batches after
//     them hold at least retention.bytes (Kafka's rule, per partition:
//     a segment goes when the rest of the log alone still reaches the
//     limit).
//
// Whole batches only, and only batches below the high watermark; the
// deletion is DeleteRecords' (a synced commit of the new start and a range
// delete of the batches below it). The sweep stops at the first batch that
// must stay, so its cost is the batches that go plus one. The partition's
// size comes from a running count (storedBytes), read from disk once per
// partition after Open for the batches stored before it.

// DefaultRetentionCheckInterval is how often the sweeper runs when
// Options.RetentionCheckInterval is zero.
const DefaultRetentionCheckInterval = 30 * time.Second

// sweepTimeout bounds one sweep: between partitions the sweep gives up
// (and runs again at the next tick) once it is past.
const sweepTimeout = 10 * time.Second

// retentionLimits are a topic's enforced retention configs; -1 is none.
type retentionLimits struct {
	ms, bytes int64
}

// limitsOf reads a topic's retention configs. A compact-only topic
// (cleanup.policy without delete) never deletes; a value that does not
// parse (the handlers validate what they store) counts as none.
func limitsOf(cfg bridge.TopicConfigs) retentionLimits {
	l := retentionLimits{ms: -1, bytes: -1}
	if p, ok := cfg["cleanup.policy"]; ok {
		del := false
		for _, v := range strings.Split(p, ",") {
			if strings.TrimSpace(v) == "delete" {
				del = true
			}
		}
		if !del {
			return l
		}
	}
	parse := func(name string) int64 {
		v, ok := cfg[name]
		if !ok {
			return -1
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return -1
		}
		return n
	}
	l.ms, l.bytes = parse("retention.ms"), parse("retention.bytes")
	return l
}

func (l retentionLimits) none() bool { return l.ms < 0 && l.bytes < 0 }

// OnTrim registers fn to run after retention moved a partition's log
// start (bridge.TrimNotifier), so parked fetches below it answer
// OFFSET_OUT_OF_RANGE at once. fn runs on the sweeper goroutine and must
// not block or call the store. A later call replaces fn.
func (s *Store) OnTrim(fn func(stream, topic string, partition int32)) {
	s.onTrim.Store(&fn)
}

// retentionLoop is the sweeper goroutine; it ends when stopRet closes.
func (s *Store) retentionLoop(period time.Duration) {
	defer close(s.retDone)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.stopRet:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), sweepTimeout)
			if err := s.sweep(ctx); err != nil && every(&s.lastSweepErr, time.Minute) {
				s.log.Warn("retention sweep", "err", err)
			}
			cancel()
		}
	}
}

// sweep applies every topic's retention once. It runs only while the
// store is healthy: enterWrite refuses a full disk, and deleting would not
// help there, since a range delete is a WAL write and frees space only
// once pebble compacts the range. Any goroutine; the sweeper's.
func (s *Store) sweep(ctx context.Context) error {
	if err := s.enterWrite(); err != nil {
		return nil // closed, full or failed: nothing to do now
	}
	defer s.exitWrite()
	type job struct {
		t *topic
		l retentionLimits
	}
	var jobs []job
	s.catMu.RLock()
	for _, byName := range s.topics {
		for _, t := range byName {
			if l := limitsOf(t.cfg); !l.none() {
				jobs = append(jobs, job{t, l})
			}
		}
	}
	s.catMu.RUnlock()
	now := uint64(s.clock().UnixMicro())
	for _, j := range jobs {
		for i := range j.t.parts {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.closed.Load() || s.health.err() != nil {
				// Close waits for this sweep, and a disk that filled
				// meanwhile gains nothing from more deletes: end early.
				return nil
			}
			moved, err := s.applyRetention(j.t, int32(i), j.l, now)
			if err != nil {
				return fmt.Errorf("topic %s/%s partition %d: %w", j.t.info.Stream, j.t.info.Name, i, err)
			}
			if moved {
				if fn := s.onTrim.Load(); fn != nil {
					(*fn)(j.t.info.Stream, j.t.info.Name, int32(i))
				}
			}
		}
	}
	return nil
}

// applyRetention trims one partition of t by l at time now (µs) and
// reports whether its log start moved. Under enterWrite.
func (s *Store) applyRetention(t *topic, part int32, l retentionLimits, now uint64) (bool, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.deleted {
		return false, nil
	}
	p := t.parts[part]
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	hwm := p.visible.Load()
	start := p.earliest.Load()
	if hwm <= start {
		return false, nil
	}
	id := t.info.ID
	before := start
	if l.ms >= 0 {
		var cutoff uint64 // records newer than this stay; 0 when retention.ms reaches before 1970
		if uint64(l.ms) < now/1000 {
			cutoff = now - uint64(l.ms)*1000
		}
		b, err := s.expiredBefore(id, uint32(part), hwm, cutoff)
		if err != nil {
			return false, err
		}
		before = max(before, b)
	}
	if l.bytes >= 0 {
		b, err := s.oversizeBefore(id, uint32(part), p, hwm, l.bytes)
		if err != nil {
			return false, err
		}
		before = max(before, b)
	}
	if before <= start {
		return false, nil
	}
	// Whole batches only: before is a batch boundary (or the high
	// watermark), so every batch below it goes.
	lo, _ := partitionBounds(id, uint32(part))
	cut := dataKey(id, uint32(part), before)
	tr, err := s.countTrim(id, uint32(part), p, cut)
	if err != nil {
		return false, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(logStartKey(id, uint32(part)), be.AppendUint64(nil, before), nil)
	_ = b.DeleteRange(lo, cut, nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return false, fmt.Errorf("%w: retention: %w", bridge.ErrUnavailable, err)
	}
	tr.apply(p)
	p.earliest.Store(before)
	return true, nil
}

// expiredBefore returns the base offset of the first batch below hwm
// whose newest record is at or after cutoff (µs), or hwm when every batch
// is older: the start that removes exactly the expired leading batches.
func (s *Store) expiredBefore(id, part uint32, hwm, cutoff uint64) (uint64, error) {
	it, err := s.visibleIter(id, part, hwm)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := bridge.ParseIggyBatch(it.Value())
		if err != nil {
			return 0, fmt.Errorf("stored batch: %w", err)
		}
		newest, err := newestTimestamp(v)
		if err != nil {
			return 0, err
		}
		if newest >= cutoff {
			return offsetOfKey(it.Key()), nil
		}
	}
	return hwm, it.Error()
}

// newestTimestamp is the largest record time of a batch (µs): origin
// timestamps, or the append time for a record without one.
func newestTimestamp(v bridge.BatchView) (uint64, error) {
	var newest uint64
	mi := bridge.NewIggyMessageIter(v)
	for mi.Next() {
		m := mi.Message()
		ts := m.OriginTimestamp
		if ts == 0 {
			ts = m.Timestamp
		}
		newest = max(newest, ts)
	}
	return newest, mi.Err()
}

// storedBytes is the partition's stored batch bytes: those from before
// Open (counted by one scan, the first time it is needed), plus those
// appended since and below the watermark, minus those of them deleted.
// Under p.trimMu.
func (s *Store) storedBytes(id, part uint32, p *partition) (int64, error) {
	if !p.oldKnown {
		lo, _ := partitionBounds(id, part)
		n, err := s.sumBatches(lo, dataKey(id, part, p.openNext))
		if err != nil {
			return 0, err
		}
		p.oldBytes, p.oldKnown = n, true
	}
	p.mu.Lock()
	vb := p.visibleBytes
	p.mu.Unlock()
	return p.oldBytes + vb - p.trimmedNew, nil
}

// sumBatches adds up the stored lengths of the batches in [lo, hi).
func (s *Store) sumBatches(lo, hi []byte) (int64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		lv := it.LazyValue()
		n += int64(lv.Len())
	}
	return n, it.Error()
}

// trimmed is what deleting the batches below cut takes off the byte
// accounting; apply it once the delete committed.
type trimmed struct{ old, new int64 }

// countTrim measures the batches of the partition below cut, split at
// the partition's Open point. Under p.trimMu, before the delete.
func (s *Store) countTrim(id, part uint32, p *partition, cut []byte) (trimmed, error) {
	lo, _ := partitionBounds(id, part)
	split := dataKey(id, part, p.openNext)
	if string(cut) < string(split) {
		split = cut
	}
	var tr trimmed
	var err error
	if p.oldKnown {
		if tr.old, err = s.sumBatches(lo, split); err != nil {
			return trimmed{}, err
		}
	}
	if string(split) < string(cut) {
		if tr.new, err = s.sumBatches(split, cut); err != nil {
			return trimmed{}, err
		}
	}
	return tr, nil
}

// apply books a committed delete. Under p.trimMu.
func (tr trimmed) apply(p *partition) {
	if p.oldKnown {
		p.oldBytes -= tr.old
	}
	p.trimmedNew += tr.new
}

// oversizeBefore returns the base offset of the oldest batch below hwm
// that Kafka's size rule keeps: walking from the oldest batch, each one
// goes while the partition without it still holds at least limit bytes.
// hwm when every batch below it goes. Cost: the batches that go, plus
// one. Under p.trimMu.
func (s *Store) oversizeBefore(id, part uint32, p *partition, hwm uint64, limit int64) (uint64, error) {
	size, err := s.storedBytes(id, part, p)
	if err != nil || size <= limit {
		return 0, err
	}
	it, err := s.visibleIter(id, part, hwm)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		lv := it.LazyValue()
		n := int64(lv.Len())
		if size-n < limit {
			return offsetOfKey(it.Key()), nil
		}
		size -= n
	}
	return hwm, it.Error()
}
