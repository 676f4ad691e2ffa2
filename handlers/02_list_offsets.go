// ListOffsets: v1-11
//
// Behavior:
//   - -1 (latest) is the high watermark (next offset), -2 (earliest) and -4
//     (earliest local, KIP-405) the earliest stored offset; both with
//     timestamp -1.
//   - -3 (max timestamp, KIP-734) scans the partition: every stored message
//     is read and mapped once (O(partition size), in 1 MiB polls, bounded by
//     c.Ctx), and the first
//     offset holding the largest timestamp is returned with that timestamp;
//     an empty partition gives offset -1, timestamp -1. Kafka keeps this in
//     its time index; Iggy has no such index.
//   - -5 (latest tiered, KIP-1005) and -6 (earliest pending upload,
//     KIP-1023) answer offset -1, timestamp -1, as Kafka does for a topic
//     without tiered storage.
//   - A timestamp >= 0 (ms) is Store.OffsetForTimestamp(ms*1000 µs): the
//     first offset whose timestamp, as Fetch shows it (a record clamped in
//     a batch spanning over 71.6 minutes at its real time, docs/MAPPING.md),
//     is >= it, returned with that record's timestamp (one extra Poll reads
//     it); none gives offset -1, timestamp -1. The Rust gateway refuses
//     these with UNSUPPORTED_FOR_MESSAGE_FORMAT. Any other negative
//     timestamp is searched as 0, like Kafka.
//   - Leader epoch 0. Unknown topic or partition (and a bad name) is
//     UNKNOWN_TOPIC_OR_PARTITION. current_leader_epoch (v4+) is checked as
//     Fetch checks it (FENCED_LEADER_EPOCH older, UNKNOWN_LEADER_EPOCH
//     newer, -1 not checked). read_committed answers latest with the last
//     stable offset and a timestamp found past it with -1 (the same as
//     read_uncommitted while no transaction is open). Transient store failures: REQUEST_TIMED_OUT on a
//     deadline, NOT_LEADER_OR_FOLLOWER when the store is unavailable.
//
// Version notes:
//   - v0 (old-style offset lists) is not served. v2 adds isolation level
//     (KIP-98); v4 current leader epoch (KIP-320); v6 is
//     flexible; v7 allows -3 (KIP-734); v8 -4 (KIP-405); v9 -5 (KIP-1005);
//     v10 adds timeout_ms (KIP-1075), ignored: answers are synchronous; v11
//     allows -6 (KIP-1023). Every version past v1 only adds fields or
//     special timestamps answered above, so the max is kmsg's max.

package handlers

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 2, MinVersion: 1, MaxVersion: 11, Handle: typed(listOffsets)})
}

// Special timestamps of ListOffsets.
const (
	tsLatest              = -1
	tsEarliest            = -2
	tsMaxTimestamp        = -3
	tsEarliestLocal       = -4
	tsLatestTiered        = -5
	tsEarliestPendingUpld = -6
)

func listOffsets(c *Call, req *kmsg.ListOffsetsRequest, resp *kmsg.ListOffsetsResponse) (kmsg.Response, error) {
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(rt.Partitions))

		ti, tcode := c.authorizedTopic(rt.Topic, kmsg.ACLOperationDescribe, opOffsets)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			code := partitionCode(ti, tcode, rp.Partition)
			if code == 0 {
				latest, leads := c.G.Cfg.Cluster.LeaderEpoch(rt.Topic, rp.Partition)
				switch {
				case !leads, req.IsolationLevel == 1 && c.G.Txn != nil && !c.G.Txn.Ready():
					// read_committed waits for a new leader to load
					// the partition's transactions (txn.Coordinator.Ready).
					code = kerr.NotLeaderForPartition.Code
				case req.Version >= 4:
					code = currentEpochCode(rp.CurrentLeaderEpoch, latest)
				}
			}
			if code == 0 {
				var err error
				sp.Offset, sp.Timestamp, err = c.offsetFor(rt.Topic, rp.Partition, rp.Timestamp, req.IsolationLevel == 1)
				code = errCode(err, opOffsets)
			}
			if code != 0 {
				sp.ErrorCode = code
				sp.Offset, sp.Timestamp = -1, -1
				continue
			}
			sp.LeaderEpoch = 0
		}
	}
	return resp, nil
}

// offsetFor answers one partition for timestamp ts (ms or special);
// committed (read_committed) answers latest with the last stable offset,
// and a timestamp found past it with none, as Kafka does.
func (c *Call) offsetFor(topic string, partition int32, ts int64, committed bool) (offset, timestamp int64, err error) {
	off, t, err := c.offsetForUncommitted(topic, partition, ts)
	if err != nil || !committed || c.G.Txn == nil || off < 0 || ts == tsEarliest || ts == tsEarliestLocal {
		return off, t, err
	}
	st, err := c.G.Store.Partition(c.Ctx, c.G.Cfg.Stream, topic, partition)
	if err != nil {
		return -1, -1, err
	}
	lso := int64(c.G.Txn.Index.LastStable(txn.Partition{Topic: topic, Partition: partition}, st.Next))
	switch {
	case ts == tsLatest:
		return lso, -1, nil
	case off >= lso:
		return -1, -1, nil
	}
	return off, t, nil
}

// offsetForUncommitted is offsetFor for read_uncommitted.
func (c *Call) offsetForUncommitted(topic string, partition int32, ts int64) (offset, timestamp int64, err error) {
	g := c.G
	switch ts {
	case tsLatest, tsEarliest, tsEarliestLocal:
		st, err := g.Store.Partition(c.Ctx, g.Cfg.Stream, topic, partition)
		if err != nil {
			return -1, -1, err
		}
		if ts == tsLatest {
			return int64(st.Next), -1, nil
		}
		return int64(st.Earliest), -1, nil
	case tsLatestTiered, tsEarliestPendingUpld:
		return -1, -1, nil
	case tsMaxTimestamp:
		return c.maxTimestamp(topic, partition)
	}
	if ts < 0 {
		ts = 0
	}
	if uint64(ts) > math.MaxUint64/1000 {
		return -1, -1, nil
	}
	off, found, err := g.Store.OffsetForTimestamp(c.Ctx, g.Cfg.Stream, topic, partition, uint64(ts)*1000)
	if err != nil || !found {
		return -1, -1, err
	}
	t, ok, err := c.timestampAt(topic, partition, off)
	if err != nil {
		return -1, -1, err
	}
	if !ok {
		// Trimmed between the two calls: the offset still answers the
		// question; the timestamp is unknown.
		t = -1
	}
	return int64(off), t, nil
}

// timestampAt reads the Kafka timestamp (ms) of the record at offset.
func (c *Call) timestampAt(topic string, partition int32, offset uint64) (ts int64, ok bool, err error) {
	err = c.scanTimestamps(topic, partition, offset, func(off uint64, t int64) bool {
		if off == offset {
			ts, ok = t, true
		}
		return false
	})
	return ts, ok, err
}

// maxTimestamp scans the partition for the largest timestamp and the first
// offset holding it. Cost: one pass over every stored message, each mapped
// back to a Kafka record so the timestamp is the one a consumer sees.
func (c *Call) maxTimestamp(topic string, partition int32) (offset, timestamp int64, err error) {
	g := c.G
	st, err := g.Store.Partition(c.Ctx, g.Cfg.Stream, topic, partition)
	if err != nil || st.Next == st.Earliest {
		return -1, -1, err
	}
	offset, timestamp = -1, -1
	err = c.scanTimestamps(topic, partition, st.Earliest, func(off uint64, ts int64) bool {
		if offset < 0 || ts > timestamp {
			offset, timestamp = int64(off), ts
		}
		return true
	})
	if err != nil {
		return -1, -1, err
	}
	return offset, timestamp, nil
}

// scanChunk is how many stored bytes one Poll of a scan asks for.
const scanChunk = 1 << 20

// scanTimestamps calls fn with the offset and Kafka timestamp (ms) of every
// stored message of the partition from offset from on, in order, until fn
// returns false or the partition ends. Timestamps are read from the records
// bridge.AppendKafkaBatch builds, so they match what Fetch returns; a
// message the mapping cannot read falls back to its Iggy origin timestamp
// (or the append time when it has none).
func (c *Call) scanTimestamps(topic string, partition int32, from uint64, fn func(offset uint64, ts int64) bool) error {
	g := c.G
	scratch := getBig()
	defer putBig(scratch)
	next := from
	for {
		progressed, stopped := false, false
		var cbErr error
		err := g.Store.Poll(c.Ctx, g.Cfg.Stream, topic, partition, next, scanChunk, func(batch []byte) bool {
			if err := c.Ctx.Err(); err != nil {
				cbErr = err
				return false
			}
			v, err := bridge.ParseIggyBatch(batch)
			if err != nil {
				cbErr = err
				return false
			}
			cur := bridge.FetchCursor{From: next, MaxBytes: math.MaxInt, Uncompressed: true}
			var mapErr error
			scratch.B, mapErr = bridge.AppendKafkaBatch(scratch.B[:0], batch, &cur)
			if !kafkaTimestamps(scratch.B, fn) {
				stopped = true
				return false
			}
			if mapErr != nil {
				resume := max(next, cur.Next)
				it := bridge.NewIggyMessageIter(v)
				for it.Next() {
					m := it.Message()
					if m.Offset < resume {
						continue
					}
					t := m.OriginTimestamp
					if t == 0 {
						t = m.Timestamp
					}
					if !fn(m.Offset, int64(t/1000)) {
						stopped = true
						return false
					}
				}
			}
			if end := v.BaseOffset + uint64(v.Count); end > next {
				next, progressed = end, true
			}
			return true
		})
		switch {
		case err != nil:
			return err
		case cbErr != nil:
			return cbErr
		case stopped || !progressed:
			return nil
		}
	}
}

// kafkaTimestamps walks the Kafka batches in b and calls fn per record; it
// returns false when fn did.
func kafkaTimestamps(b []byte, fn func(offset uint64, ts int64) bool) bool {
	for len(b) > 0 {
		rb, n, err := codec.ParseBatch(b)
		if err != nil {
			return true
		}
		b = b[n:]
		it := codec.NewRecordIter(rb.Records, rb.NumRecords)
		for it.Next() {
			r := it.Record()
			if !fn(uint64(rb.BaseOffset)+uint64(r.OffsetDelta), rb.Timestamp(r)) {
				return false
			}
		}
	}
	return true
}
