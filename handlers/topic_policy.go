package handlers

// What Produce must know of a topic's configs, and the checks and stamps
// it applies to a batch because of them, as Kafka's LogValidator does:
//
//   - cleanup.policy holding compact (compact, or compact,delete): a record
//     without a key is refused, per record (KIP-467 record errors), and
//     nothing of its batch is stored. Tombstones (a key, no value) are
//     fine.
//   - message.timestamp.type=LogAppendTime (the topic's, else the dynamic
//     broker config log.message.timestamp.type, broker_configs.go, read
//     through brokerCache: a change through another gateway applies
//     within two policyMaxAge): the batch gets the append time
//     as its max timestamp and the LogAppendTime attribute, so consumers
//     read that time for every record; the Produce answer carries it.
//
// The configs live in the backend (bridge.TopicConfigStore: the embedded
// catalog, or the gateway's state stream on Iggy, a round trip or two), so
// Produce reads them through a cache beside the topic lookup (policyCache):
// one store read per topic and policyMaxAge at most. A change made through
// this gateway (AlterConfigs, IncrementalAlterConfigs, CreateTopics,
// DeleteTopics) drops the topic's entry at once; a change made through
// another gateway of a cluster sharing the Iggy server applies here within
// policyMaxAge, as a group config does (group.Config.MetadataMaxAge). A
// topic made again under its name has another TopicInfo.ID, so its
// predecessor's entry is never used for it.

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
)

// topicPolicy is what Produce does differently for a topic because of its
// configs.
type topicPolicy struct {
	compacted     bool // cleanup.policy holds compact: every record needs a key
	logAppendTime bool // message.timestamp.type=LogAppendTime
}

// policyOf reads a topic's policy from its configs (values were checked
// when they were set; the defaults are delete and CreateTime, before the
// broker's log.message.timestamp.type, which topicPolicy applies).
func policyOf(cfg bridge.TopicConfigs) topicPolicy {
	var p topicPolicy
	for _, v := range strings.Split(cfg["cleanup.policy"], ",") {
		p.compacted = p.compacted || strings.TrimSpace(v) == "compact"
	}
	p.logAppendTime = cfg["message.timestamp.type"] == timestampLogAppend
	return p
}

// message.timestamp.type values (Kafka's TimestampType names).
const (
	timestampCreate    = "CreateTime"
	timestampLogAppend = "LogAppendTime"
)

// policyMaxAge is how long a policy read from the store is used before it
// is read again: how late a change made through another gateway applies.
const policyMaxAge = time.Second

// policyCache holds the policies read, per topic name. Any goroutine:
// every Produce reads it, so a read takes no lock (a sync.Map whose
// entries are replaced about once a second); nothing is held across a
// store call.
type policyCache struct {
	// gen counts forgetPolicy calls, so a read that raced one is not kept.
	gen atomic.Uint64
	m   sync.Map // topic name -> *policyEntry
}

// policyEntry is one read of a topic's policy; only reading changes.
type policyEntry struct {
	id      uint32 // TopicInfo.ID of the incarnation read
	p       topicPolicy
	read    time.Time
	reading atomic.Bool // a call is reading it again; others use p meanwhile
}

// topicPolicy returns ti's policy: from the cache while it is younger than
// policyMaxAge (or another call is reading it again), else read from the
// store. A failed read keeps serving the last policy read for the topic;
// with none it is the error. A worker.
func (c *Call) topicPolicy(ti *bridge.TopicInfo) (topicPolicy, error) {
	pc := &c.G.policies
	now := time.Now()
	var e *policyEntry
	if v, ok := pc.m.Load(ti.Name); ok && v.(*policyEntry).id == ti.ID {
		e = v.(*policyEntry)
		if now.Sub(e.read) < policyMaxAge || !e.reading.CompareAndSwap(false, true) {
			return e.p, nil
		}
	}
	gen := pc.gen.Load()
	cfg, err := c.G.Store.TopicConfigs(c.Ctx, c.G.Cfg.Stream, ti.Name)
	if err != nil {
		if e != nil {
			e.reading.Store(false)
			return e.p, nil
		}
		return topicPolicy{}, err
	}
	p := policyOf(cfg)
	if _, set := cfg["message.timestamp.type"]; !set {
		p.logAppendTime = c.cachedBrokerView().brokerDefault("log.message.timestamp.type", timestampCreate) == timestampLogAppend
	}
	fresh := &policyEntry{id: ti.ID, p: p, read: now}
	pc.m.Store(ti.Name, fresh)
	if pc.gen.Load() != gen {
		// A change raced the read, which may predate it: keep nothing
		// (forgetPolicy bumps gen before it deletes, so either it or
		// this removes the entry).
		pc.m.CompareAndDelete(ti.Name, fresh)
	}
	return p, nil
}

// forgetPolicy drops topic's cached policy: its configs changed, or it was
// made or deleted, through this gateway. Any goroutine.
func (g *Gateway) forgetPolicy(topic string) {
	g.policies.gen.Add(1)
	g.policies.m.Delete(topic)
}

// Kafka's messages for records a topic refuses (LogValidator).
const (
	msgNoKeyCompacted        = "Compacted topic cannot accept message without key in topic partition "
	msgRecordsRejected       = "One or more records have been rejected due to "
	msgTimestampsRejected    = "One or more records have been rejected due to invalid timestamp"
	msgProducerLogAppendTime = ". Producer should not set timestamp type to LogAppendTime."
)

// rejectRecords checks a batch's records against the topic's policy as
// Kafka's LogValidator does, before anything is stored: in a compacted
// topic every record needs a key (INVALID_RECORD); a batch the producer
// marked LogAppendTime is refused (INVALID_TIMESTAMP) in a LogAppendTime
// topic, and in a CreateTime one when its max timestamp is -1 (Kafka then
// has no CreateTime to give its records). Every failing record gets a
// record error (KIP-467) and the partition Kafka's error message, which
// shows the first three. records is the batch's uncompressed records
// section. code 0: the batch passes. A malformed records section passes
// here: the mapping refuses it.
func rejectRecords(pol topicPolicy, rb *codec.RecordBatch, records []byte, topic string, partition int32) (int16, *string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	producerLAT := rb.LogAppendTime() && (pol.logAppendTime || rb.MaxTimestamp == -1)
	if !pol.compacted && !producerLAT {
		return 0, nil, nil
	}
	var noKey *string // one string for all the key errors of the batch
	var errs []kmsg.ProduceResponseTopicPartitionErrorRecord
	badTime := false
	it := codec.NewRecordIter(records, rb.NumRecords)
	for i := int32(0); it.Next(); i++ {
		r := it.Record()
		var msg *string
		switch {
		case pol.compacted && r.Key == nil:
			if noKey == nil {
				noKey = strp(msgNoKeyCompacted + topic + "-" + strconv.Itoa(int(partition)))
			}
			msg = noKey
		case producerLAT:
			badTime = true
			msg = strp("Invalid timestamp type in message " + kafkaRecordString(rb, r) + msgProducerLogAppendTime)
		default:
			continue
		}
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset, e.ErrorMessage = i, msg
		errs = append(errs, e)
	}
	if it.Err() != nil || len(errs) == 0 {
		return 0, nil, nil
	}
	if badTime {
		return kerr.InvalidTimestamp.Code, strp(msgTimestampsRejected), errs
	}
	var b strings.Builder
	b.WriteString(msgRecordsRejected)
	b.WriteString(strconv.Itoa(len(errs)))
	b.WriteString(" record errors in total, and only showing the first three errors at most: [")
	for i, e := range errs[:min(len(errs), 3)] {
		if i > 0 {
			b.WriteString(", ")
		}
		// Kafka's RecordError.toString.
		b.WriteString("RecordError(batchIndex=")
		b.WriteString(strconv.Itoa(int(e.RelativeOffset)))
		b.WriteString(", message='")
		b.WriteString(*e.ErrorMessage)
		b.WriteString("')")
	}
	b.WriteString("]")
	return kerr.InvalidRecord.Code, strp(b.String()), errs
}

// kafkaRecordString is a record as Kafka's DefaultRecord.toString prints
// it: offset as the producer numbered it, timestamp as a consumer reads it.
func kafkaRecordString(rb *codec.RecordBatch, r *codec.Record) string {
	return "DefaultRecord(offset=" + strconv.FormatInt(rb.BaseOffset+int64(r.OffsetDelta), 10) +
		", timestamp=" + strconv.FormatInt(rb.Timestamp(r), 10) +
		", key=" + strconv.Itoa(len(r.Key)) + " bytes, value=" + strconv.Itoa(len(r.Value)) + " bytes)"
}

// stampBatch sets the batch's timestamp type and max timestamp in place,
// as Kafka does once the records passed: a LogAppendTime topic's batch
// gets now, the append time; a batch the producer marked LogAppendTime in
// a CreateTime topic becomes CreateTime (its records keep their own
// timestamps). It returns the Produce answer's log_append_time: the
// append time in a LogAppendTime topic, else -1.
func stampBatch(pol topicPolicy, rb *codec.RecordBatch) int64 {
	switch {
	case pol.logAppendTime:
		now := time.Now().UnixMilli()
		rb.SetMaxTimestamp(true, now)
		return now
	case rb.LogAppendTime():
		rb.SetMaxTimestamp(false, rb.MaxTimestamp)
	}
	return -1
}
