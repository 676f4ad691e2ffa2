package embedded

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

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
// deletion is DeleteRecords' (a synced commit of the new start, then the
// removal of the log's segments wholly below it). Segments whose newest
// record is older than the cutoff, or that go whole by size, are skipped
// unread; within the segment where the cut falls the sweep reads up to
// the first batch that stays. The partition's size is its log's byte
// positions (the visible end minus the batch holding the start).

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
// start (bridge.Backend.OnTrim), so parked fetches below it answer
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
// store is healthy: enterWrite refuses a full disk (the new start is a
// pebble write, which would wait for space there). Any goroutine; the
// sweeper's.
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
	start := p.log.Earliest()
	if p.log.Next() <= start {
		return false, nil
	}
	before := start
	if l.ms >= 0 {
		var cutoff uint64 // records newer than this stay; 0 when retention.ms reaches before 1970
		if uint64(l.ms) < now/1000 {
			cutoff = now - uint64(l.ms)*1000
		}
		b, err := p.log.ExpiredBefore(cutoff)
		if err != nil {
			return false, err
		}
		before = max(before, b)
	}
	if l.bytes >= 0 {
		b, err := p.log.OversizeBefore(l.bytes)
		if err != nil {
			return false, err
		}
		before = max(before, b)
	}
	if before <= start {
		return false, nil
	}
	// Whole batches only: before is a batch boundary (or the high
	// watermark), so every batch below it goes; whole segments below it
	// leave the disk.
	if err := s.moveStart(t.info.ID, part, p, before); err != nil {
		return false, err
	}
	return true, nil
}
