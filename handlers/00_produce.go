// Produce: v0-13
//
// Behavior:
//   - Advertised from v0 (KAFKA-18659: librdkafka refuses a broker whose
//     Produce minimum is above 0) but v0-2 carry message format v0/v1, which
//     we do not store: every partition gets UNSUPPORTED_VERSION.
//   - Without --transactions enabled, a non-empty transactional_id gets
//     UNSUPPORTED_VERSION on every partition before anything is stored; so
//     does a batch with the transactional or control bit. With it
//     (docs/TRANSACTIONS.md): WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition); a
//     control batch is INVALID_RECORD (markers are the coordinator's); a
//     transactional batch needs the request's transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers a null one)
//     and a producer id (INVALID_RECORD) and passes the coordinator's check (checkTxnBatch:
//     its producer and epoch, an ongoing transaction holding the
//     partition; Produce v12+ under transaction.version 2 adds the
//     partition itself), then is stored as an idempotent batch, the first
//     of its transaction on the partition recording where the
//     transaction starts there (the last stable offset).
//   - acks must be -1, 0 or 1, else INVALID_REQUIRED_ACKS on every partition.
//   - Cluster mode (docs/CLUSTER.md): a partition another gateway leads,
//     or any partition while this gateway's session is not known live, is
//     NOT_LEADER_OR_FOLLOWER; the write runs inside the cluster's write
//     gate, so a membership change waits for it before handing the
//     partition on.
//   - A partition named more than once in one request (clients never do;
//     Kafka keeps only the last entry and answers it once, silently dropping
//     the others) is answered once, with INVALID_REQUEST, and nothing of it
//     is stored: acknowledging records that were dropped would lie. The
//     other partitions of the request are served as usual.
//     All three write alike: a nil error from Store.Append means as durable
//     as the store's sync policy promises.
//   - Per partition, in order: topic name (INVALID_TOPIC_EXCEPTION), topic
//     lookup with auto-creation when Cfg.AutoCreateTopics (Kafka auto-creates
//     on Produce too; the Rust gateway does not; capped and paced as in
//     Metadata, LEADER_NOT_AVAILABLE past the limits, INVALID_TOPIC_EXCEPTION
//     for a name colliding with an existing topic; Kafka's internal names
//     such as __consumer_offsets are never auto-created), partition range
//     (UNKNOWN_TOPIC_OR_PARTITION), then the records: exactly one v2 batch
//     (none, a second batch or trailing bytes is INVALID_RECORD;
//     magic 0/1 is INVALID_RECORD; a bad length or CRC is CORRUPT_MESSAGE),
//     zstd before v7 is UNSUPPORTED_COMPRESSION_TYPE.
//   - Compressed batches are decompressed under one budget for the whole
//     request, Cfg.MaxFrameSize decompressed bytes; past it MESSAGE_TOO_LARGE
//     (the Java producer then splits the batch and retries the halves).
//     Data that does not decompress is INVALID_RECORD (the CRC held, so a
//     retry would send the same bytes).
//   - The topic's configs decide two things (topic_policy.go, read through
//     a cache: one store read per topic per second at most; a change made
//     through this gateway applies at once, one made through another
//     gateway of the cluster within a second): a compacted topic
//     (cleanup.policy holding compact) refuses a batch holding a record
//     without a key, INVALID_RECORD with one KIP-467 record error per
//     such record and Kafka's partition message, nothing of it stored;
//     a LogAppendTime topic gets the gateway's clock stamped into the
//     batch (max timestamp and timestamp-type attribute, as a Kafka
//     broker does) and answered as log_append_time. A batch the producer
//     marked LogAppendTime is INVALID_TIMESTAMP in a LogAppendTime topic
//     and, with max timestamp -1, in a CreateTime one; otherwise it is
//     made CreateTime, as Kafka does.
//   - The batch becomes one batch in the store's format (Gateway.Format:
//     on both backends an Iggy batch, bridge.IggyFormat) in a pooled buffer
//     and one append; the buffer is back in the pool when the append
//     returns. Record-level failures: MESSAGE_TOO_LARGE over
//     Cfg.MaxMessageSize, INVALID_RECORD for unmappable records.
//   - Store errors: unknown topic/partition 3; a deadline or cancelled
//     context REQUEST_TIMED_OUT (the write may have happened); a full or
//     failed disk KAFKA_STORAGE_ERROR (56); store unavailable or closed
//     NOT_LEADER_OR_FOLLOWER. The Java producer retries all three.
//   - The response carries the base offset, LogAppendTime (the append
//     time in a LogAppendTime topic, else -1; for a duplicate idempotent
//     batch the retained batch's max timestamp, as Kafka answers it) and
//     LogStartOffset -1 (not looked up: one more store round trip per
//     partition, and producers do not use it).
//   - A store that stages appends (bridge.Capabilities.StagedAppends: the
//     embedded store) writes each partition's batch at once and syncs it later:
//     once every partition is written the connection's next request may
//     start (Call.ReleaseOrder), then this one waits for its fsyncs
//     (--fsync always), so pipelined Produces overlap their fsyncs while
//     their records stay in request order. A failed wait is
//     KAFKA_STORAGE_ERROR on its partition.
//   - Once durable, each batch the mapping keeps exactly goes into the
//     tail cache as the producer sent it (package fetchcache), and its
//     partition is signalled so parked Fetches wake.
//   - acks=0: no response when every partition succeeded; any failure closes
//     the connection (a Go error), as Kafka does, so the producer notices.
//   - Idempotent batches (producer id >= 0) are deduplicated per
//     (partition, producer) as a Kafka broker does (handlers/idempotence.go,
//     docs/IDEMPOTENCE.md): a duplicate of one of the last five batches is
//     answered with success and its original base offset, nothing stored;
//     a stale epoch gets INVALID_PRODUCER_EPOCH; a sequence gap or a new
//     epoch not starting at 0 gets OUT_OF_ORDER_SEQUENCE_NUMBER after
//     waiting up to 500 ms for the missing batch (it may be in flight on
//     another connection); an unknown producer is accepted at any sequence
//     (KIP-360). A producer id with a negative epoch or base sequence is
//     INVALID_RECORD. DUPLICATE_SEQUENCE_NUMBER is never sent (no Kafka
//     broker since 1.0 sends it for Produce). timeout_ms is not used; c.Ctx
//     bounds the store calls.
//
// Version notes:
//   - v3 adds transactional_id and requires record batch v2 (KIP-98); v7
//     allows zstd (KIP-110); v8 adds per-record errors and an error message
//     (KIP-467); v9 is flexible; v10/v11 add the current-leader tagged fields
//     (KIP-951), left at their defaults (not sent). v12 (KIP-890 part 2)
//     adds a transactional batch's partition to its transaction. v13 (KIP-516)
//     names topics by id: an id that names no topic, or no longer names the
//     topic of that name (deleted, created again), is UNKNOWN_TOPIC_ID for
//     each of its partitions, and nothing is auto-created by id.

package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/internal/fetchcache"
)

func init() {
	register(Spec{Key: 0, MinVersion: 0, MaxVersion: 13, Handle: typed(produce), NoReply: produceAcksZero})
}

// errAcks0Failed closes an acks=0 connection after a failed partition.
var errAcks0Failed = errors.New("produce: acks=0 request failed on a partition")

// Error messages (v8+), package-level so setting one does not allocate.
var (
	msgOldFormat     = "message format v0/v1 (Produce v0-2) is not supported; use Produce v3+"
	msgTransactional = "transactions are not supported by this gateway"
	msgControl       = "control batches (transaction markers) cannot be produced by clients"
	msgNoTxnID       = "transactional records need the request's transactional id"
	msgAcks          = "acks must be -1, 0 or 1"
	msgOneBatch      = "a partition must carry exactly one record batch"

	msgIdempotentFields = "a batch with a producer id needs a producer epoch and base sequence >= 0"
	msgRepeated         = "partition named more than once in one request; nothing stored for it"
)

// topicPartition keys repeatedPartitions.
type topicPartition struct {
	topic     string
	partition int32
}

// answeredRepeat marks a repeated partition whose answer is written.
const answeredRepeat = -1

// repeatedPartitions returns how often each partition is named when some
// partition is named more than once in req, else nil. Kafka clients never
// repeat one, so the check must cost nothing for them: small requests are
// compared pairwise without allocating, and only a request that does
// repeat (or a large one) builds a map.
func repeatedPartitions(req *kmsg.ProduceRequest) map[topicPartition]int {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	if n < 2 {
		return nil
	}
	if n <= 32 && !smallHasRepeat(req) {
		return nil
	}
	counts := make(map[topicPartition]int, n)
	repeat := false
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			k := topicPartition{rt.Topic, rt.Partitions[j].Partition}
			counts[k]++
			repeat = repeat || counts[k] > 1
		}
	}
	if !repeat {
		return nil
	}
	return counts
}

// produceTopic finds the topic a Produce writes to (partitions up to
// maxPartition), or the code that refuses it: by name (auto-created when
// allowed), or byID (v13+, name then from nameByID), where an id that
// names no topic, or no longer names this one, is UNKNOWN_TOPIC_ID and
// nothing is created.
func (c *Call) produceTopic(name string, id [16]byte, byID bool, maxPartition int32) (bridge.TopicInfo, int16) {
	var ti bridge.TopicInfo
	switch {
	case byID && !validTopicName(name):
		return ti, kerr.UnknownTopicID.Code
	case !c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, name):
		return ti, kerr.TopicAuthorizationFailed.Code
	case !validTopicName(name):
		return ti, kerr.InvalidTopicException.Code
	}
	ti, err := c.produceTopicInfo(name, !byID, maxPartition, id, byID)
	code := errCode(err, opWrite)
	if byID && (code == kerr.UnknownTopicOrPartition.Code || code == 0 && !c.sameTopicID(ti, id)) {
		code = kerr.UnknownTopicID.Code
	}
	return ti, code
}

// maxPartition is the highest partition rt writes to (-1 for none).
func maxPartition(rt *kmsg.ProduceRequestTopic) int32 {
	m := int32(-1)
	for i := range rt.Partitions {
		m = max(m, rt.Partitions[i].Partition)
	}
	return m
}

// smallHasRepeat compares every partition entry of req with the ones
// before it.
func smallHasRepeat(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		a := &req.Topics[i]
		for j := range a.Partitions {
			p := a.Partitions[j].Partition
			for k := 0; k <= i; k++ {
				b := &req.Topics[k]
				if k < i && b.Topic != a.Topic {
					continue
				}
				end := len(b.Partitions)
				if k == i {
					end = j
				}
				for l := 0; l < end; l++ {
					if b.Partitions[l].Partition == p {
						return true
					}
				}
			}
		}
	}
	return false
}

func produce(c *Call, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) (kmsg.Response, error) {

	var refuse int16
	var refuseMsg *string
	switch {
	case req.Version < 3:
		refuse, refuseMsg = kerr.UnsupportedVersion.Code, &msgOldFormat
	case req.TransactionID != nil && *req.TransactionID != "" && c.G.Txn == nil:
		refuse, refuseMsg = kerr.UnsupportedVersion.Code, &msgTransactional
	case req.TransactionID != nil && *req.TransactionID != "" &&
		!c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID):
		refuse = kerr.TransactionalIDAuthorizationFailed.Code
	case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
		refuse, refuseMsg = kerr.InvalidRequiredAcks.Code, &msgAcks
	}

	budget := int(c.G.Cfg.MaxFrameSize)
	var tx txnWrite
	if req.TransactionID != nil {
		tx.id = *req.TransactionID
		tx.implicit = req.Version >= 12 && c.G.Cfg.Transactions.Version >= 2
	}
	failed := false
	// Writes done whose durability is still to wait for (a staged store),
	// finished after every partition was written (finishWrites).
	var pending []pendingWrite
	// repeats counts the partitions named more than once (nil: none, the
	// normal case); a repeated partition is answered once, refused, and
	// nothing of it is stored.
	if req.Version >= 13 {
		for i := range req.Topics {
			req.Topics[i].Topic = c.nameByID(req.Topics[i].TopicID)
		}
	}
	repeats := repeatedPartitions(req)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))

		code, msg := refuse, refuseMsg
		var ti bridge.TopicInfo
		var pol topicPolicy
		if code == 0 {
			ti, code = c.produceTopic(rt.Topic, rt.TopicID, req.Version >= 13, maxPartition(rt))
		}
		if code == 0 {
			var err error
			if pol, err = c.topicPolicy(&ti); err != nil {
				code = errCode(err, opWrite)
			}
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			pcode, pmsg := code, msg
			repeated := false
			if repeats != nil {
				k := topicPartition{rt.Topic, rp.Partition}
				switch repeats[k] {
				case 0, 1:
				case answeredRepeat:
					continue // answered at its first entry
				default:
					repeats[k] = answeredRepeat
					repeated = true
					pcode, pmsg = kerr.InvalidRequest.Code, &msgRepeated
				}
			}
			st.Partitions = append(st.Partitions, kmsg.NewProduceResponseTopicPartition())
			sp := &st.Partitions[len(st.Partitions)-1]
			sp.Partition = rp.Partition
			if pcode == 0 && !repeated {
				switch {
				case rp.Partition < 0 || rp.Partition >= ti.Partitions:
					pcode = kerr.UnknownTopicOrPartition.Code
				default:
					var pw pendingWrite
					pcode, pmsg = c.produceLed(req.Version, tx, &ti, pol, rp.Partition, rp.Records, &budget, &pw)
					sp.BaseOffset = int64(pw.base)
					if pcode == 0 {
						sp.LogAppendTime = pw.appendTime
						pw.at = [2]int{i, len(st.Partitions) - 1}
						pending = append(pending, pw)
					} else if req.Version >= 8 {
						sp.ErrorRecords = pw.rejected
					}
				}
			}
			if pcode != 0 {
				failed = true
				sp.ErrorCode = pcode
				sp.BaseOffset = -1
				if req.Version >= 8 {
					sp.ErrorMessage = pmsg
				}
			}
		}
	}
	if c.finishWrites(pending, resp, req.Version) {
		failed = true
	}
	if repeats != nil {
		// Drop topic entries whose every partition was answered earlier.
		kept := resp.Topics[:0]
		for i := range resp.Topics {
			if len(resp.Topics[i].Partitions) > 0 || len(req.Topics[i].Partitions) == 0 {
				kept = append(kept, resp.Topics[i])
			}
		}
		resp.Topics = kept
	}
	if req.Version >= 10 {
		c.produceLeaderHints(resp)
	}
	resp.ThrottleMillis = c.produceThrottle() // client quotas (quotas.go)
	if req.Acks == 0 {
		if failed {
			return nil, errAcks0Failed
		}
		return nil, nil
	}
	return resp, nil
}

// produceLed is producePartition while this gateway leads the partition
// (cluster mode; always in a one-node cluster). Otherwise, or while its
// session is not known live, NOT_LEADER_OR_FOLLOWER: the client refreshes
// its metadata and sends to the leader.
func (c *Call) produceLed(version int16, tx txnWrite, ti *bridge.TopicInfo, pol topicPolicy, partition int32, records []byte, budget *int, pw *pendingWrite) (int16, *string) {
	cl := c.G.Cfg.Cluster
	if !cl.BeginWrite(ti.Name, partition) {
		return kerr.NotLeaderForPartition.Code, nil
	}
	defer cl.EndWrite()
	return c.producePartition(version, tx, ti, pol, partition, records, budget, pw)
}

// pendingWrite is one partition's records, written by producePartition:
// what is left is to wait until they are durable (durable, nil when there
// is nothing to wait for), then to cache them and wake their readers.
type pendingWrite struct {
	at         [2]int // topic and partition index in the response
	key        PartitionKey
	ident      fetchcache.Identity
	base       uint64
	appendTime int64 // the answer's log_append_time: -1 but in a LogAppendTime topic or for a duplicate
	count      int
	records    []byte // the producer's batch, for the tail cache; nil: not cached
	durable    func(context.Context) error
	// rejected: the record errors (KIP-467) of a batch the topic refused
	// (rejectRecords); set only with a failing code.
	rejected []kmsg.ProduceResponseTopicPartitionErrorRecord
}

// written is where a batch went: its base offset and the wait for its
// durability (nil: none), or, for a duplicate of a batch the producer
// state retained (dup), that batch's base offset and max timestamp,
// which Kafka answers as log_append_time.
type written struct {
	base     uint64
	durable  func(context.Context) error
	dup      bool
	dupMaxTs int64
}

// finishWrites waits for the durability of the request's writes, then
// caches them and signals their partitions. When some must wait (a staged
// store under --fsync always), the connection's next request starts first:
// every record of this one is written, in order, so its successors' go
// after them, and its fsync overlaps their work. A write whose wait fails
// is answered with the store's error. It reports whether one failed.
func (c *Call) finishWrites(pending []pendingWrite, resp *kmsg.ProduceResponse, version int16) bool {
	for i := range pending {
		if pending[i].durable != nil {
			c.ReleaseOrder()
			break
		}
	}
	g, failed := c.G, false
	for i := range pending {
		pw := &pending[i]
		if pw.durable != nil {
			if err := pw.durable(c.Ctx); err != nil {
				sp := &resp.Topics[pw.at[0]].Partitions[pw.at[1]]
				sp.ErrorCode, sp.BaseOffset, sp.LogAppendTime, failed = errCode(err, opWrite), -1, -1, true
				if version >= 8 {
					sp.ErrorMessage = nil
				}
				continue
			}
		}
		if pw.records != nil {
			g.tail.Put(fetchcache.Key(pw.key), pw.ident, pw.base, pw.count, pw.records)
		}
		g.raiseFetchState(pw.key.Topic, pw.key.Partition, pw.base+uint64(pw.count))
		if g.Watch != nil {
			g.Watch.Signal(pw.key)
		}
	}
	return failed
}

// producePartition writes one partition's records and fills pw (its base
// offset, and what finishWrites does next), or returns an error code and
// an optional message. budget is what is left of the request's
// decompression budget.
func (c *Call) producePartition(version int16, tx txnWrite, ti *bridge.TopicInfo, pol topicPolicy, partition int32, records []byte, budget *int, pw *pendingWrite) (int16, *string) {
	topic := ti.Name
	if len(records) == 0 {
		return kerr.InvalidRecord.Code, &msgOneBatch
	}
	rb, n, err := codec.ParseBatch(records)
	if err != nil {
		return errCode(err, opWrite), nil
	}
	if n != len(records) {
		return kerr.InvalidRecord.Code, &msgOneBatch
	}
	if rb.IsTransactional() || rb.IsControl() {
		if code, msg := c.checkTxnBatch(tx, &rb); code != 0 {
			return code, msg
		}
	}
	if rb.ProducerID >= 0 && (rb.ProducerEpoch < 0 || rb.BaseSequence < 0) {
		return kerr.InvalidRecord.Code, &msgIdempotentFields
	}

	recs := rb.Records
	if comp := rb.Compression(); comp != codec.CompressionNone {
		if comp == codec.CompressionZstd && version < 7 {
			return kerr.UnsupportedCompressionType.Code, nil
		}
		db := getBig()
		defer putBig(db)
		out, err := codec.Decompress(db.B, comp, recs, *budget)
		if err != nil {
			if errors.Is(err, codec.ErrBudget) {
				return kerr.MessageTooLarge.Code, nil
			}
			if !errors.Is(err, codec.ErrBatchCompression) {
				err = fmt.Errorf("%w: %w", bridge.ErrRecordInvalid, err)
			}
			return errCode(err, opWrite), nil
		}
		db.B = out
		*budget -= len(out)
		recs = out
	}
	if code, msg, errs := rejectRecords(pol, &rb, recs, topic, partition); code != 0 {
		pw.rejected = errs
		return code, msg
	}
	appendTime := stampBatch(pol, &rb)

	eb := getBig()
	keep := false // true: a hung Append may still read eb (see below)
	defer func() {
		if !keep {
			putBig(eb)
		}
	}()
	g := c.G
	var stats bridge.ProduceStats
	eb.B, stats, err = g.Format.Encode(eb.B, rb, recs, g.Cfg.MaxMessageSize)
	if err != nil {
		return errCode(err, opWrite), nil
	}
	var w written
	if rb.ProducerID >= 0 {
		var code int16
		w, code, err = c.produceIdempotent(tx, ti, partition, &rb, eb.B, stats.Prepared)
		if code != 0 {
			return code, nil
		}
	} else {
		w.base, w.durable, err = c.appendLed(topic, partition, eb.B, stats.Prepared, rb.NumRecords)
	}
	if err != nil {
		// The guard gave up on a hung Append that may still read eb:
		// leave the buffer to the garbage collector, never to the pool.
		keep = errors.Is(err, bridge.ErrAbandoned)
		if errors.Is(err, bridge.ErrTopicNotFound) || errors.Is(err, bridge.ErrPartitionNotFound) {
			g.forgetTopicHeaders(topic) // deleted or shrunk by someone else: read it again next time
		}
		return errCode(err, opWrite), nil
	}
	*pw = pendingWrite{key: PartitionKey{Topic: topic, Partition: partition}, ident: identityOf(ti),
		base: w.base, appendTime: appendTime, count: int(rb.NumRecords), durable: w.durable}
	if w.dup {
		pw.appendTime = w.dupMaxTs
	}
	if stats.Exact && (rb.Compression() == codec.CompressionNone || !g.Cfg.FetchUncompressed) {
		pw.records = records
	}
	return 0, nil
}

// txnWrite is what a Produce's transactional batches are checked against:
// the request's transactional id, and whether a partition not yet in the
// transaction joins it (Produce v12+ under transaction.version 2,
// KIP-890).
type txnWrite struct {
	id       string
	implicit bool
}

// checkTxnBatch checks a transactional or control batch: refused as
// before without transactions; with them a control batch is
// INVALID_RECORD (markers are the coordinator's), a transactional one
// needs the request's transactional id. The coordinator's check (its
// producer and epoch, an ongoing transaction holding the partition) is
// made by produceIdempotent, against the markers written meanwhile.
func (c *Call) checkTxnBatch(tx txnWrite, rb *codec.RecordBatch) (int16, *string) {
	switch {
	case c.G.Txn == nil:
		return kerr.UnsupportedVersion.Code, &msgTransactional
	case rb.IsControl():
		return kerr.InvalidRecord.Code, &msgControl
	case tx.id == "":
		return kerr.TransactionalIDAuthorizationFailed.Code, &msgNoTxnID // as Kafka answers a null transactional id
	case rb.ProducerID < 0:
		return kerr.InvalidRecord.Code, &msgNoTxnID
	}
	return 0, nil // the coordinator's check: produceIdempotent
}

// produceLeaderHints names the leader of each partition answered
// NOT_LEADER_OR_FOLLOWER (cluster mode, KIP-951).
func (c *Call) produceLeaderHints(resp *kmsg.ProduceResponse) {
	h := c.newLeaderHints()
	if h == nil {
		return
	}
	for i := range resp.Topics {
		st := &resp.Topics[i]
		for j := range st.Partitions {
			sp := &st.Partitions[j]
			if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue // the one code Kafka names the leader for here
			}
			if id, epoch, ok := h.of(st.Topic, sp.Partition, sp.ErrorCode); ok {
				sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch
			}
		}
	}
	h.endpoints(func(id int32, host string, port int32) {
		resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: id, Host: host, Port: port})
	})
}
