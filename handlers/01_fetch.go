// Fetch: v4-12
//
// Behavior:
//   - Incremental fetch sessions (KIP-227) as on Kafka (fetch_sessions.go):
//     a full request with epoch 0 gets a session (SessionID != 0) when the
//     cache (Cfg.FetchSessionSlots, Kafka's
//     max.incremental.fetch.session.cache.slots) has or can free a slot,
//     else a sessionless reply; an incremental request adds or updates
//     its partitions, drops ForgottenTopics, reads every partition of the
//     session and answers only those with records, an error, or a changed
//     HWM or log start; partitions that returned records move to the back
//     so the budget rotates. Wrong epoch: INVALID_FETCH_SESSION_EPOCH;
//     unknown id: FETCH_SESSION_ID_NOT_FOUND (top level, no partitions).
//     Epoch -1 closes the session named and is answered sessionless. Any
//     connection may use any session, as on Kafka. Rack, replica id/state
//     and leader epochs are ignored.
//   - Per partition: unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION
//     (no auto-creation on Fetch); a fetch offset below the earliest stored
//     offset or above the high watermark is OFFSET_OUT_OF_RANGE, as on Kafka
//     (the Rust gateway reads from the oldest message instead, so
//     auto.offset.reset never fires there).
//   - Records of recent batches come from the tail cache (tail_cache.go):
//     the producer's own batches, stamped with their offsets, sent whole
//     (one holding the fetch offset inside it too, as Kafka sends a
//     stored batch), only while they fit the partition's budget whole
//     and end at or below the high watermark; a response points into the
//     cache's chunks (no copy) and holds them until it is encoded.
//   - Other records come from Store.Poll, mapped back to Kafka v2 batches
//     (bridge.AppendKafkaBatch: per Iggy batch, each batch the producer
//     compressed compressed again with its codec, the rest uncompressed;
//     --fetch-compression none: all uncompressed; docs/MAPPING.md) into
//     one pooled buffer per response. Limits: partition_max_bytes per
//     partition and max_bytes (capped at Cfg.MaxFrameSize) for the whole
//     response, the first partition included, counted in Kafka batch bytes.
//     KIP-74: until some partition has returned data, a partition returns
//     at least one record even above the limits (so the response exceeds
//     max_bytes by at most one record and its batch header, tighter than
//     Kafka's one stored batch); later partitions never overshoot. A
//     partition stops at the first record that does not fit, so no offset
//     is ever skipped. The store is asked for the partition's budget times
//     its learned ratio of stored to Kafka bytes (fetch_ratio.go; 2x until
//     the partition was read once), so a tiny max_bytes reads one stored
//     batch, never the partition.
//   - With Cfg.FetchConcurrency > 1 (the Iggy backend) and partition budgets
//     that fit max_bytes together, every lookup and poll of the request runs
//     at once and the reply is put together in request order with the same
//     answers (fetch_concurrent.go); otherwise partitions are read one after
//     another, each getting what the ones before it left.
//   - The connection's room (Call.ReplyRoom) caps max_bytes further, so a
//     client that pipelines Fetches without reading cannot make the gateway
//     queue more than its outbound cap; with no room at all a Fetch returns
//     no records (parking like any Fetch short of min_bytes) until the
//     client reads.
//   - HighWatermark = LastStableOffset = next offset (no transactions);
//     LogStartOffset = earliest stored offset; no aborted transactions;
//     PreferredReadReplica -1. isolation_level read_committed reads the same.
//   - Transient store failures are NOT_LEADER_OR_FOLLOWER (the Java consumer
//     throws on codes it does not expect; it refreshes metadata and retries
//     on this one); a failed store disk is KAFKA_STORAGE_ERROR, which it
//     handles the same way (FetchCollector's metadata-refresh list). A stored message that cannot be mapped ends the
//     partition's data before it; if it is the first one, the partition gets
//     UNKNOWN_SERVER_ERROR.
//   - Long poll: when fewer than min_bytes are ready, max_wait_ms > 0, no
//     partition failed and the call is not Final, the handler parks on all
//     requested partitions until now + min(max_wait_ms, Cfg.MaxFetchWait)
//     and returns (nil, nil); Produce signals a partition after each append
//     and the loop re-runs the call, or runs it with Final at the deadline.
//     A re-run that parks again keeps the first deadline (Call.Park).
//   - The record bytes live in a pooled buffer released through c.Defer
//     after the loop encoded the response.
//
// Version notes:
//   - v4 adds isolation level and LSO (KIP-98); v5 log start offset
//     (KIP-107); v7 fetch sessions (KIP-227); v9
//     current leader epoch (KIP-320, not checked); v11 rack and preferred read
//     replica (KIP-392); v12 is flexible with last fetched epoch and
//     diverging epoch (KIP-595), which we never set. v13+ address topics by
//     id only and are not served (so FETCH_SESSION_TOPIC_ID_ERROR, which
//     only v13+ sessions can get, is never sent). v0-3 (message format v0/v1) are not served.

package handlers

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 1, MinVersion: 4, MaxVersion: 12, Handle: fetch, LargeReply: true})
}

func fetch(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	g := c.G
	// The session is resolved once per call: a parked call re-run by the
	// loop reads the same partitions and does not advance the epoch again.
	if c.fetchPlan == nil {
		c.fetchPlan = g.fetchSessions.planFetch(req)
	}
	plan := c.fetchPlan
	if plan.errCode != 0 {
		resp.ErrorCode = plan.errCode
		return resp, nil
	}
	req = plan.req

	limit := max(int(req.MaxBytes), 0)
	if m := int(g.Cfg.MaxFrameSize); m > 0 && limit > m {
		limit = m
	}
	full := c.ReplyRoom < 0
	if r := c.ReplyRoom; r > 0 && limit > r {
		limit = r
	}

	// Take the watch generation before reading, so data produced after
	// this read but before the park still wakes the call.
	var keys []PartitionKey
	var since uint64
	if req.MaxWaitMillis > 0 && req.MinBytes > 0 && !c.Final {
		keys = fetchKeys(req)
		since = g.Watch.Generation(keys)
	}

	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			sp := &st.Partitions[j]
			sp.Default()
			sp.Partition = rt.Partitions[j].Partition
			sp.HighWatermark = -1
			// Never a null record set: librdkafka rejects size -1
			// ("invalid MessageSetSize -1"), drops the whole reply and
			// retries forever; Kafka brokers always send an empty one.
			sp.RecordBatches = []byte{}
			sp.PreferredReadReplica = -1
		}
	}

	var total int
	var anyErr bool
	var bufs []*bytebufferpool.ByteBuffer
	var held []tailRefs // tail-cache chunks the response points into
	if g.Cfg.FetchConcurrency > 1 && !full && fetchBudgetsFit(req, limit) {
		total, anyErr, bufs, held = c.fetchConcurrently(req, resp, limit)
	} else {
		total, anyErr, bufs, held = c.fetchSequentially(req, resp, limit, full)
	}

	if keys != nil && total < int(req.MinBytes) && !anyErr {
		for _, b := range bufs {
			putBig(b)
		}
		for i := range held {
			g.tail.release(&held[i])
		}
		wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
		if g.Cfg.MaxFetchWait > 0 && wait > g.Cfg.MaxFetchWait {
			wait = g.Cfg.MaxFetchWait
		}
		c.ParkSince(keys, time.Now().Add(wait), since)
		return nil, nil
	}
	g.fetchSessions.finish(plan, resp)
	if len(bufs) > 0 || len(held) > 0 {
		c.Defer(func() {
			for _, b := range bufs {
				putBig(b)
			}
			for i := range held {
				g.tail.release(&held[i])
			}
		})
	}
	return resp, nil
}

// fetchSequentially fills resp's partitions one after another into one
// pooled buffer, each partition's budget what the ones before it left.
// It returns the Kafka bytes returned, whether a partition failed, and the
// buffers and tail-cache chunks the response points into.
func (c *Call) fetchSequentially(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, limit int, full bool) (int, bool, []*bytebufferpool.ByteBuffer, []tailRefs) {
	g := c.G
	buf := getBig()
	// Where each partition's records sit in buf.B; slices are taken only
	// after the last append, since appends may move buf.B. A partition
	// answered from the tail cache has its bytes in direct instead.
	type span struct {
		t, p, start, end int
		direct           []byte
	}
	var spans []span
	var held []tailRefs
	total := 0
	anyErr := false
	for i := range req.Topics {
		rt := &req.Topics[i]
		ti, tcode := c.authorizedTopic(rt.Topic, kmsg.ACLOperationRead, opRead)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &resp.Topics[i].Partitions[j]
			code := tcode
			if code == 0 && (rp.Partition < 0 || rp.Partition >= ti.Partitions) {
				code = kerr.UnknownTopicOrPartition.Code
			}
			if code == 0 && !g.Cfg.Cluster.Leads(rt.Topic, rp.Partition) {
				code = kerr.NotLeaderForPartition.Code
			}
			var state bridge.PartitionState
			if code == 0 {
				var err error
				if state, err = g.Store.Partition(c.Ctx, g.Cfg.Stream, rt.Topic, rp.Partition); err != nil {
					code = errCode(err, opRead)
				}
			}
			if code == 0 {
				sp.HighWatermark = int64(state.Next)
				sp.LastStableOffset = int64(state.Next)
				sp.LogStartOffset = int64(state.Earliest)
				if rp.FetchOffset < 0 || uint64(rp.FetchOffset) < state.Earliest || uint64(rp.FetchOffset) > state.Next {
					code = kerr.OffsetOutOfRange.Code
				}
			}
			if code == 0 && uint64(rp.FetchOffset) < state.Next && !full {
				// Both limits bound every partition, the first one
				// included: max_bytes 1 with a 100 MB partition limit is a
				// 1-byte budget (issue 10). KIP-74: only until the
				// response holds data may a partition go over it, and
				// then by one record.
				room := limit - total
				pmax := min(max(int(rp.PartitionMaxBytes), 0), room)
				key := PartitionKey{Topic: rt.Topic, Partition: rp.Partition}
				want := identityOf(&ti)
				var pieces [tailPieces][]byte
				var refs tailRefs
				if ps, n, _, _, ok := g.tail.get(key, &want, uint64(rp.FetchOffset), state.Next, pmax, pieces[:0], &refs); ok {
					if len(ps) == 1 {
						spans = append(spans, span{t: i, p: j, direct: ps[0]})
						held = append(held, refs)
					} else {
						start := len(buf.B)
						for _, b := range ps {
							buf.B = append(buf.B, b...)
						}
						g.tail.release(&refs)
						spans = append(spans, span{t: i, p: j, start: start, end: len(buf.B)})
					}
					total += n
				} else if total == 0 || room > 0 {
					start := len(buf.B)
					var n int
					n, code, _ = c.fetchPartitionTo(buf, rt.Topic, rp.Partition, uint64(rp.FetchOffset), pmax)
					if total > 0 && n > pmax {
						// Past the first partition with data nothing may
						// go over.
						buf.B = buf.B[:start]
						n = 0
					}
					if n > 0 {
						spans = append(spans, span{t: i, p: j, start: start, end: start + n})
						total += n
					}
				}
			}
			if code != 0 {
				anyErr = true
				sp.ErrorCode = code
			}
		}
	}
	inBuf := false
	for _, s := range spans {
		if s.direct != nil {
			resp.Topics[s.t].Partitions[s.p].RecordBatches = s.direct
			continue
		}
		resp.Topics[s.t].Partitions[s.p].RecordBatches = buf.B[s.start:s.end:s.end]
		inBuf = true
	}
	if !inBuf {
		putBig(buf)
		return total, anyErr, nil, held
	}
	return total, anyErr, []*bytebufferpool.ByteBuffer{buf}, held
}

// fetchKeys lists the requested partitions for Call.Park.
func fetchKeys(req *kmsg.FetchRequest) []PartitionKey {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	keys := make([]PartitionKey, 0, n)
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			keys = append(keys, PartitionKey{Topic: t.Topic, Partition: t.Partitions[j].Partition})
		}
	}
	return keys
}

// fetchPartitionTo appends Kafka batches of topic/partition from offset
// from to buf, within pmax bytes but at least one record even above pmax
// (KIP-74; the caller drops the data when its partition is not the first
// with data). It returns the bytes appended, an error code (0 also when a
// stored message cannot be mapped after some records were appended: those
// are returned and the next fetch reports it) and one past the last offset
// appended. Any goroutine (concurrent fetches call it at once with their
// own buffers).
func (c *Call) fetchPartitionTo(buf *bytebufferpool.ByteBuffer, topic string, partition int32, from uint64, pmax int) (int, int16, uint64) {
	g := c.G
	start := len(buf.B)
	cur := bridge.FetchCursor{From: from, MaxBytes: pmax, Uncompressed: g.Cfg.FetchUncompressed}
	var mapErr error
	// Iggy messages are larger than the Kafka records they map to (a
	// 64-byte frame header against a few bytes of record framing), by a
	// factor that depends on the record size: ask the store for the
	// partition's learned ratio (fetch_ratio.go); the callback stops early.
	key := PartitionKey{Topic: topic, Partition: partition}
	pollMax := pmax
	if pollMax < math.MaxInt32/2 {
		pollMax = g.fetchRatios.storeBudget(key, pollMax) + bridge.BatchHeaderSize
	}
	// Bytes of the stored batches mapped whole, and of what they became:
	// a batch cut by from or by the budget would skew the ratio.
	stored, kafka := 0, 0
	err := g.Store.Poll(c.Ctx, g.Cfg.Stream, topic, partition, from, pollMax, func(batch []byte) bool {
		var err error
		var sb bridge.StoredBatch
		records, size := cur.Records, len(buf.B)
		buf.B, sb, err = g.Format.AppendKafka(buf.B, batch, &cur)
		if err != nil {
			mapErr = err
			return false
		}
		if cur.Records == 0 {
			return true // the whole batch lay below from
		}
		if cur.Records-records == int(sb.Count) {
			stored += len(batch)
			kafka += len(buf.B) - size
		}
		// Stop at the first record that did not fit: continuing with the
		// next batch could skip it.
		return cur.Next >= sb.End() && cur.Bytes < cur.MaxBytes
	})
	g.fetchRatios.learn(key, stored, kafka)
	n := len(buf.B) - start
	switch {
	case err != nil && n == 0:
		return 0, errCode(err, opRead), from
	case mapErr != nil && n == 0:
		if g.Log != nil {
			g.Log.Warn("fetch: stored message cannot be mapped", "topic", topic, "partition", partition, "offset", cur.Next, "err", mapErr)
		}
		return 0, kerr.UnknownServerError.Code, from
	}
	return n, 0, cur.Next
}
