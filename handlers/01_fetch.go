// Fetch: v4-18
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
//     unknown id: FETCH_SESSION_ID_NOT_FOUND; topic ids used (v13+) where
//     the session's request used names or back: FETCH_SESSION_TOPIC_ID_ERROR
//     (top level, no partitions).
//     Epoch -1 closes the session named and is answered sessionless. Any
//     connection may use any session, as on Kafka. Rack, replica id/state
//     and the log-start and high-watermark fields of followers are ignored.
//   - Per partition (fetch_pipeline.go), in Kafka's order: a topic the
//     client may not read is TOPIC_AUTHORIZATION_FAILED; an unknown topic
//     or partition UNKNOWN_TOPIC_OR_PARTITION (no auto-creation on Fetch);
//     one another gateway leads NOT_LEADER_OR_FOLLOWER (cluster mode); a
//     current_leader_epoch (v9+, KIP-320) older than the partition's
//     FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (-1: not checked); a
//     fetch offset below the earliest stored offset or above the high
//     watermark OFFSET_OUT_OF_RANGE, as on Kafka (the Rust gateway reads
//     from the oldest message instead, so auto.offset.reset never fires
//     there).
//   - Records of recent batches come from the tail cache (package
//     fetchcache): the producer's own batches, stamped with their
//     offsets, sent whole (one holding the fetch offset inside it too, as
//     Kafka sends a stored batch), only while they fit the partition's
//     budget whole, end at or below the high watermark and belong to the
//     topic's present life (id and creation time); a response points into
//     the cache's chunks (no copy) and holds them until it is encoded.
//   - Other records come from Store.Poll, mapped back to Kafka v2 batches
//     (Gateway.Format.AppendKafka: per Iggy batch, each batch the producer
//     compressed compressed again with its codec, the rest uncompressed;
//     --fetch-compression none: all uncompressed; docs/MAPPING.md) into
//     a pooled buffer per partition. Limits: partition_max_bytes per
//     partition and max_bytes (capped at Cfg.MaxFrameSize) for the whole
//     response, the first partition included, counted in Kafka batch bytes.
//     KIP-74: until some partition has returned data, a partition returns
//     at least one record even above the limits (so the response exceeds
//     max_bytes by at most one record and its batch header, tighter than
//     Kafka's one stored batch); later partitions never overshoot. A
//     partition stops at the first record that does not fit, so no offset
//     is ever skipped. The store is asked for the partition's budget times
//     its learned ratio of stored to Kafka bytes (fetchcache.Ratios; 2x
//     until the partition was read once), so a tiny max_bytes reads one
//     stored batch, never the partition.
//   - Partitions are read one after another, each getting what the ones
//     before it left; with Cfg.FetchConcurrency > 1 (the Iggy backend) and
//     partition budgets that fit max_bytes together, every lookup, state
//     read and poll of the request runs at once and the reply is put
//     together in request order with the same answers. A store whose
//     Capabilities say TopicStateInOneCall (Iggy) is asked a topic and its
//     partitions' states in one call per topic, and at once a topic's
//     state an earlier Fetch read less than a second ago stands in for
//     that call where every partition read found records from its fetch
//     offset (fetch_state_cache.go); the high watermark is one past the
//     last record returned when a read found records its state did not
//     know yet.
//   - The connection's room (Call.ReplyRoom) caps max_bytes further, so a
//     client that pipelines Fetches without reading cannot make the gateway
//     queue more than its outbound cap; with no room at all a Fetch returns
//     no records (parking like any Fetch short of min_bytes) until the
//     client reads.
//   - HighWatermark = next offset; LastStableOffset = the first offset of
//     the partition's oldest open transaction, else the high watermark
//     (always, without --transactions enabled); isolation_level
//     read_committed returns only whole batches below it and the aborted
//     transactions overlapping what it returns (fetch_pipeline.go,
//     fetchRun.stable; docs/TRANSACTIONS.md); LogStartOffset = earliest
//     stored offset; PreferredReadReplica -1.
//   - Transient store failures are NOT_LEADER_OR_FOLLOWER (the Java consumer
//     throws on codes it does not expect; it refreshes metadata and retries
//     on this one); a failed store disk is KAFKA_STORAGE_ERROR, which it
//     handles the same way (FetchCollector's metadata-refresh list). A
//     stored message that cannot be mapped ends the partition's data
//     before it; if it is the first one, the partition gets
//     UNKNOWN_SERVER_ERROR.
//   - Long poll: when fewer than min_bytes are ready, max_wait_ms > 0, no
//     partition failed and the call is not Final, the handler parks on all
//     requested partitions until now + min(max_wait_ms, Cfg.MaxFetchWait)
//     and returns (nil, nil); Produce signals a partition after each append
//     and the loop re-runs the call, or runs it with Final at the deadline.
//     A re-run that parks again keeps the first deadline (Call.Park).
//   - The record bytes live in pooled buffers and tail-cache chunks
//     released through c.Defer after the loop encoded the response.
//
// Version notes:
//   - v4 adds isolation level and LSO (KIP-98); v5 log start offset
//     (KIP-107); v7 fetch sessions (KIP-227); v9
//     current leader epoch (KIP-320, not checked); v11 rack and preferred read
//     replica (KIP-392); v12 is flexible with last fetched epoch and
//     diverging epoch (KIP-595), which we never set. v13 (KIP-516) names
//     topics by id, here and in forgotten topics: the ids Metadata hands
//     out are resolved to names (topic_ids.go), so sessions, parking and
//     the pipeline work by name; an id that names no topic, or no longer
//     names the topic found by its name, is UNKNOWN_TOPIC_ID per
//     partition. FETCH_SESSION_TOPIC_ID_ERROR is never sent: a session
//     keeps each partition's topic id from the request that added it.
//     v14 adds an error only tiered storage sends; v15 moves the replica
//     id into ReplicaState (KIP-903), v16 adds the node endpoints a broker
//     sends with NOT_LEADER_OR_FOLLOWER (KIP-951, left out: clients refresh
//     Metadata instead), v17 the replica directory id (KIP-853), v18 a
//     follower's high watermark (KIP-1166): fields for followers, ignored
//     here like the replica id. v0-3 (message format v0/v1) are not served.

package handlers

import (
	"iter"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 1, MinVersion: 4, MaxVersion: 18, Handle: typed(fetch), LargeReply: true})
}

func fetch(c *Call, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) (kmsg.Response, error) {
	g := c.G
	// The session is resolved once per call: a parked call re-run by the
	// loop reads the same partitions and does not advance the epoch again.
	if c.fetchPlan == nil {
		if req.Version >= 13 {
			c.nameFetchTopics(req)
		}
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
	if q := c.fetchQuotaBytes(); q > 0 && limit > q {
		limit = q // client quotas (quotas.go)
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
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
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

	fr := fetchRun{c: c, req: req, resp: resp, limit: limit,
		batched: g.Store.Capabilities().TopicStateInOneCall, cluster: g.Cfg.Cluster}
	if g.Cfg.FetchConcurrency > 1 && !full && fetchBudgetsFit(req, limit) {
		fr = fr.atOnce()
	} else {
		fr.inOrder(full)
	}

	if keys != nil && fr.total < int(req.MinBytes) && !fr.anyErr {
		releaseFetched(g.tail, fr.bufs, fr.held)
		wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
		if g.Cfg.MaxFetchWait > 0 && wait > g.Cfg.MaxFetchWait {
			wait = g.Cfg.MaxFetchWait
		}
		c.ParkSince(keys, time.Now().Add(wait), since)
		return nil, nil
	}
	if req.Version >= 16 {
		c.fetchLeaderHints(req, resp)
	}
	if !c.fetchThrottled(plan, resp) { // client quotas (quotas.go)
		g.fetchSessions.finish(plan, resp)
	}
	c.inPlace = inPlace{}
	if bufs, held := fr.bufs, fr.held; len(bufs) > 0 || len(held) > 0 {
		if len(bufs) == 1 {
			c.inPlace.slot = &bufs[0] // the loop may take it (fetch_reply.go)
		}
		c.Defer(func() { releaseFetched(g.tail, bufs, held) })
	}
	return resp, nil
}

// nameFetchTopics fills in the names of the topics a v13+ request names by
// id only (its topics and its forgotten topics), so sessions, the watch
// and the pipeline key partitions by name as for older versions; an id
// that names no topic gets a placeholder name, which the pipeline answers
// UNKNOWN_TOPIC_ID (so does a store that cannot list its topics just now:
// the client looks the topic up again, as it must).
func (c *Call) nameFetchTopics(req *kmsg.FetchRequest) {
	for i := range req.Topics {
		req.Topics[i].Topic = c.nameByID(req.Topics[i].TopicID)
	}
	for i := range req.ForgottenTopics {
		req.ForgottenTopics[i].Topic = c.nameByID(req.ForgottenTopics[i].TopicID)
	}
}

// fetchKeys lists the requested partitions for Call.Park.
func fetchKeys(req *kmsg.FetchRequest) []PartitionKey {
	keys := make([]PartitionKey, 0, partitionCount(req))
	for k := range requested(req) {
		keys = append(keys, k)
	}
	return keys
}

// requested yields each partition req asks for, with its key, in request
// order.
func requested(req *kmsg.FetchRequest) iter.Seq2[PartitionKey, *kmsg.FetchRequestTopicPartition] {
	return func(yield func(PartitionKey, *kmsg.FetchRequestTopicPartition) bool) {
		for i := range req.Topics {
			rt := &req.Topics[i]
			for j := range rt.Partitions {
				rp := &rt.Partitions[j]
				if !yield(PartitionKey{Topic: rt.Topic, Partition: rp.Partition}, rp) {
					return
				}
			}
		}
	}
}

// partitionCount is how many partitions req asks for.
func partitionCount(req *kmsg.FetchRequest) int {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	return n
}

// fetchLeaderHints names the leader of each partition answered
// NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, and their endpoints
// (cluster mode, v16+, KIP-951). resp's topics are req's, in order.
func (c *Call) fetchLeaderHints(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	h := c.newLeaderHints()
	if h == nil || len(req.Topics) != len(resp.Topics) {
		return
	}
	for i := range resp.Topics {
		st := &resp.Topics[i]
		for j := range st.Partitions {
			sp := &st.Partitions[j]
			if id, epoch, ok := h.of(req.Topics[i].Topic, sp.Partition, sp.ErrorCode); ok {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch
			}
		}
	}
	h.endpoints(func(id int32, host string, port int32) {
		resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker{NodeID: id, Host: host, Port: port})
	})
}
