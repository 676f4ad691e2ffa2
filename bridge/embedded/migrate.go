package embedded

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

// Upgrading a data directory. Versions before the segment logs kept each
// stamped batch in pebble under a 'd' key (keys.go). At Open, every
// partition whose batches are still there gets them appended to its log as
// they are (already stamped: same offsets, same bytes), the log is synced,
// and only then are the keys deleted, in one synced range delete. A crash
// part way leaves the keys: the next Open skips what its logs already hold
// (batches end at or below the log's end) and goes on.

// migrate moves every partition's pebble batches into its log. Open's
// goroutine, after the logs were recovered.
func (s *Store) migrate() error {
	lo, hi := []byte{prefixData}, []byte{prefixData + 1}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	any := it.First()
	err = it.Close()
	if !any || err != nil {
		return err
	}
	s.log.Warn("embedded store: moving the batches stored in pebble into segment logs (a one-time upgrade; needs free space as large as the data)")
	began := time.Now()
	var batches, size int64
	for _, byName := range s.topics {
		for _, t := range byName {
			for i := range t.parts {
				n, b, err := s.migratePartition(t, i)
				if err != nil {
					return fmt.Errorf("embedded: moving topic %s/%s partition %d into its segment log: %w",
						t.info.Stream, t.info.Name, i, err)
				}
				batches, size = batches+n, size+b
			}
		}
	}
	// Every batch is in a synced log now (keys of deleted topics were
	// range-deleted already, so none were missed): drop them all, and give
	// their space back now rather than at some later compaction.
	if err := s.db.DeleteRange(lo, hi, pebble.Sync); err != nil {
		return fmt.Errorf("embedded: delete the moved batches from pebble: %w", err)
	}
	if err := s.db.Compact(context.Background(), lo, hi, true); err != nil {
		s.log.Warn("embedded store: compacting the moved batches away; pebble does it later", "err", err)
	}
	s.log.Warn("embedded store: batches moved into segment logs", "batches", batches, "bytes", size,
		"took", time.Since(began).Round(time.Millisecond))
	return nil
}

// migratePartition appends one partition's pebble batches to its log,
// skipping those wholly below the log start (DeleteRecords, retention) and
// those the log already holds, and syncs the log. It returns the batches
// and bytes moved.
func (s *Store) migratePartition(t *topic, i int) (int64, int64, error) {
	p := t.parts[i]
	// Batches ending at or below skip are gone (below the start) or moved
	// already (by an Open that did not finish).
	skip := p.log.Start()
	if p.log.Segments() > 0 {
		skip = max(skip, p.log.Next())
	}
	lo, hi := partitionBounds(t.info.ID, uint32(i))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	var n, size int64
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return n, size, err
		}
		bv, err := bridge.ParseIggyBatch(v)
		if err != nil || bv.BaseOffset != offsetOfKey(it.Key()) {
			return n, size, fmt.Errorf("batch at offset %d: %w", offsetOfKey(it.Key()), bridge.ErrInvalidBatch)
		}
		if bv.BaseOffset+uint64(bv.Count) <= skip {
			continue
		}
		if _, err := p.log.Import(v, t.segBytes.Load()); err != nil {
			return n, size, err
		}
		n, size = n+1, size+int64(bv.Length)
	}
	if err := it.Error(); err != nil {
		return n, size, err
	}
	if n > 0 {
		if err := p.log.Sync(context.Background()); err != nil {
			return n, size, err
		}
		s.log.Info("embedded store: moved a partition into its segment log", "topic", t.info.Name,
			"partition", strconv.Itoa(i), "batches", n, "bytes", size)
	}
	return n, size, nil
}

// removeOrphans removes the log directories the catalog no longer names:
// those of deleted topics, and of partitions past a topic's count (a
// shrink), whose removal a crash interrupted; and a space probe's file.
// Open's goroutine, after the catalog was loaded.
func (s *Store) removeOrphans() error {
	byID := map[uint32]*topic{}
	for _, byName := range s.topics {
		for _, t := range byName {
			byID[t.info.ID] = t
		}
	}
	names, err := s.fs.List(s.logsDir)
	if err != nil {
		return fmt.Errorf("embedded: list %s: %w", s.logsDir, err)
	}
	for _, n := range names {
		if n == probeName {
			_ = s.fs.Remove(s.fs.PathJoin(s.logsDir, n))
			continue
		}
		id, err := strconv.ParseUint(n, 10, 32)
		if err != nil {
			s.log.Warn("embedded store: unknown entry in the logs directory left alone", "name", n)
			continue
		}
		t := byID[uint32(id)]
		if t == nil {
			s.log.Info("embedded store: removing the logs of a deleted topic", "topic_id", id)
			if err := s.fs.RemoveAll(s.topicDir(uint32(id))); err != nil {
				return fmt.Errorf("embedded: remove %s: %w", s.topicDir(uint32(id)), err)
			}
			continue
		}
		if err := s.removeOrphanPartitions(t); err != nil {
			return err
		}
	}
	return nil
}

// removeOrphanPartitions removes a topic's partition directories past its
// partition count.
func (s *Store) removeOrphanPartitions(t *topic) error {
	parts, err := s.fs.List(s.topicDir(t.info.ID))
	if err != nil {
		return fmt.Errorf("embedded: list %s: %w", s.topicDir(t.info.ID), err)
	}
	for _, pn := range parts {
		k, err := strconv.Atoi(pn)
		if err != nil || k < len(t.parts) {
			continue
		}
		s.log.Info("embedded store: removing the log of a removed partition", "topic_id", t.info.ID, "partition", k)
		if err := s.fs.RemoveAll(s.partDir(t.info.ID, k)); err != nil {
			return fmt.Errorf("embedded: remove %s: %w", s.partDir(t.info.ID, k), err)
		}
	}
	return nil
}
