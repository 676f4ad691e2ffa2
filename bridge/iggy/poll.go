package iggy

import (
	"context"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// Iggy polls count messages, the Store is asked for bytes. The Store keeps,
// per partition, the bytes per message the last poll saw and asks for
// budget/size messages; the first poll of a partition probes with a few.
const (
	probeCount   = 16
	maxPollCount = 100_000
	// maxPollBytes keeps an estimated reply well inside the 64 MiB frame
	// cap even when message sizes vary.
	maxPollBytes = 16 << 20
)

// pollConsumer is the consumer offset-strategy polls name. Without
// auto-commit the server stores nothing for it.
var pollConsumer = PlainConsumer(ID(0))

// Poll passes stored batches from the one holding offset from, as the
// embedded store does: stop when fn says so, when maxBytes were passed (a
// batch that would go over is held back unless it is the first) or at the
// end of the partition.
func (s *Store) Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func(batch []byte) bool) error {
	return s.poll(ctx, stream, topic, partition, from, maxBytes, fn, true)
}

// poll is Poll; ahead says whether it may use and start read-ahead
// (readahead.go): Fetch's polls do, the Store's own scans do not.
func (s *Store) poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func(batch []byte) bool, ahead bool) error {
	if partition < 0 {
		return bridge.ErrPartitionNotFound
	}
	key := pollKey{stream, topic, partition}
	now := time.Now()
	pc := pollCursor{from: from, max: maxBytes, fn: fn, born: s.born.floor(stream, topic, now)}
	if ahead {
		if ch := s.ahead.take(key, from, now); ch != nil {
			s.serveAhead(ctx, key, ch, &pc)
			s.ahead.release(ch)
		}
	}
	for !pc.stop {
		count := s.pollCount(key, maxBytes-pc.sent)
		got, err := s.pollOnce(ctx, stream, topic, partition, &pc, PollingStrategy{Kind: PollOffset, Value: pc.from}, count)
		if err != nil {
			return err
		}
		s.learn(key, pc.bytes, pc.msgs)
		if got < count || pc.from == pc.before {
			return nil // end of partition, or no progress
		}
	}
	// The budget was spent before the partition ended: the reader will
	// most likely ask for what follows next.
	if ahead && pc.sent > 0 {
		s.readAheadAfter(key, pc.from, maxBytes, s.pollCount(key, maxBytes))
	}
	return nil
}

// pollCursor carries one Store.Poll across Iggy polls.
type pollCursor struct {
	from   uint64
	before uint64 // from at the start of the current Iggy poll
	max    int
	sent   int
	fn     func([]byte) bool
	stop   bool
	// born is the topic's creation time while the server may still serve
	// a deleted topic's messages under its name (ghost.go), else 0.
	born uint64
	// Totals of the current Iggy poll, for the size estimate.
	bytes, msgs int
}

// pollOnce runs one Iggy poll and feeds its records to the cursor. It
// returns how many messages the reply held.
func (s *Store) pollOnce(ctx context.Context, stream, topic string, partition int32, pc *pollCursor, st PollingStrategy, count uint32) (uint32, error) {
	p := uint32(partition)
	pc.before, pc.bytes, pc.msgs = pc.from, 0, 0
	h, err := s.c.PollMessages(ctx, &PollRequest{
		Consumer: pollConsumer, Stream: Name(stream), Topic: Name(topic),
		Partition: &p, Strategy: st, Count: count,
	}, pc.record)
	return h.Count, err
}

// record handles one stored batch record of a poll reply.
func (pc *pollCursor) record(rec []byte) bool {
	v, err := bridge.ParseIggyBatch(rec)
	if err != nil {
		pc.stop = true
		return false
	}
	if v.BaseTimestamp < pc.born {
		pc.stop = true // another topic's message (ghost.go)
		return false
	}
	pc.bytes += len(rec)
	pc.msgs += int(v.Count)
	if pc.sent > 0 && pc.sent+len(rec) > pc.max {
		pc.stop = true
		return false
	}
	if !pc.fn(rec) {
		pc.stop = true
		return false
	}
	pc.sent += len(rec)
	pc.from = lastOffset(v) + 1
	if pc.sent >= pc.max {
		pc.stop = true
		return false
	}
	return true
}

// lastOffset is the offset of a record's last message. Offsets inside a
// record are consecutive, but a server-sliced record starts at a non-zero
// delta, so the first frame's delta is read rather than assumed.
func lastOffset(v bridge.BatchView) uint64 {
	first := uint64(le.Uint32(v.Messages[24:28]))
	return v.BaseOffset + first + uint64(v.Count) - 1
}

// pollCount turns a byte budget into a message count.
func (s *Store) pollCount(key pollKey, budget int) uint32 {
	per, _ := s.est.Get(key)
	if per == 0 {
		return probeCount
	}
	budget = min(max(budget, 1), maxPollBytes)
	return uint32(min(max(budget/int(per)+1, 1), maxPollCount))
}

// learn records the bytes per message of a poll reply.
func (s *Store) learn(key pollKey, bytes, msgs int) {
	if msgs == 0 {
		return
	}
	s.est.Put(key, uint32(max(bytes/msgs, 1)))
}

// forget drops a deleted topic's estimates.
func (s *Store) forget(stream, topic string) {
	s.est.Forget(func(k pollKey) bool { return k.stream == stream && k.topic == topic })
}

// OffsetForTimestamp finds the first offset whose time, the one Fetch
// shows (bridge.SearchTime: the Kafka timestamp, clamped or not, or the
// append time for a message without one, as the embedded store does), is
// >= ts. Iggy's timestamp strategy matches on append time, which is never
// earlier than a message's origin time; so the first message it returns is
// at or before the answer, and a forward scan from there finds it. Clock
// skew that puts origin after append can make the answer late.
func (s *Store) OffsetForTimestamp(ctx context.Context, stream, topic string, partition int32, ts uint64) (uint64, bool, error) {
	if partition < 0 {
		return 0, false, bridge.ErrPartitionNotFound
	}
	var start uint64
	found := false
	pc := pollCursor{max: 1, fn: func(b []byte) bool {
		v, err := bridge.ParseIggyBatch(b)
		if err == nil {
			start, found = lastOffset(v)+1-uint64(v.Count), true
		}
		return false
	}}
	if _, err := s.pollOnce(ctx, stream, topic, partition, &pc, PollingStrategy{Kind: PollTimestamp, Value: ts}, 1); err != nil || !found {
		return 0, false, err
	}
	// Offsets below a DeleteRecords start are not Kafka's to answer.
	st, err := s.Partition(ctx, stream, topic, partition)
	if err != nil {
		return 0, false, err
	}
	return s.scanForTime(ctx, stream, topic, partition, max(start, st.Earliest), ts)
}

// scanForTime scans forward from offset from for the first message at or
// after ts.
func (s *Store) scanForTime(ctx context.Context, stream, topic string, partition int32, from, ts uint64) (uint64, bool, error) {
	var off uint64
	found := false
	for {
		next := from
		err := s.poll(ctx, stream, topic, partition, from, 1<<20, func(b []byte) bool {
			v, err := bridge.ParseIggyBatch(b)
			if err != nil {
				return false
			}
			it := bridge.NewIggyMessageIter(v)
			for it.Next() {
				m := it.Message()
				if m.Offset >= from && bridge.SearchTime(m) >= ts {
					off, found = m.Offset, true
					return false
				}
				next = m.Offset + 1
			}
			return true
		}, false)
		if err != nil || found || next == from {
			return off, found, err
		}
		from = next
	}
}
