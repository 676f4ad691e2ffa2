package handlers

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/share"
)

// shareClient is one share-group member speaking ShareFetch and
// ShareAcknowledge on one partition of one topic, keeping its session
// epoch as a client does.
type shareClient struct {
	t             *testing.T
	g             *Gateway
	group, member string
	topic         [16]byte
	epoch         int32
}

// ackRange is one acknowledgement batch.
type ackRange struct {
	first, last int64
	types       []int8
}

// ackBatches is acks as the acknowledgement batches of a request.
func ackBatches[B any](acks []ackRange, mk func(ackRange) B) []B {
	out := make([]B, len(acks))
	for i, a := range acks {
		out[i] = mk(a)
	}
	return out
}

func (sc *shareClient) next(code int16) {
	switch {
	case code != 0:
	case sc.epoch == -1:
		sc.epoch = 0
	default:
		sc.epoch++
	}
}

// fetch sends a ShareFetch v2 of partition 0 with acks piggy-backed,
// acquiring up to maxRecords (strict: record-limit mode), not waiting.
func (sc *shareClient) fetch(maxRecords int32, strict bool, acks ...ackRange) *kmsg.ShareFetchResponse {
	sc.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr(sc.group), kmsg.StringPtr(sc.member)
	req.ShareSessionEpoch = sc.epoch
	req.MaxBytes, req.MaxRecords, req.BatchSize = 1<<20, maxRecords, maxRecords
	if strict {
		req.ShareAcquireMode = 1
	}
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = sc.topic
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rp.AcknowledgementBatches = ackBatches(acks, func(a ackRange) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types}
	})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := do(sc.t, sc.g, req).(*kmsg.ShareFetchResponse)
	sc.next(resp.ErrorCode)
	return resp
}

// ack sends a ShareAcknowledge v2 of partition 0 in the client's epoch (-1
// to close).
func (sc *shareClient) ack(acks ...ackRange) *kmsg.ShareAcknowledgeResponse {
	sc.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr(sc.group), kmsg.StringPtr(sc.member)
	req.ShareSessionEpoch = sc.epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = sc.topic
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.AcknowledgementBatches = ackBatches(acks, func(a ackRange) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
		return kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types}
	})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := do(sc.t, sc.g, req).(*kmsg.ShareAcknowledgeResponse)
	sc.next(resp.ErrorCode)
	return resp
}

// heartbeat joins (epoch 0) or stays in the group.
func (sc *shareClient) heartbeat(epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	sc.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = sc.group, sc.member, epoch
	req.SubscribedTopicNames = topics
	return do(sc.t, sc.g, req).(*kmsg.ShareGroupHeartbeatResponse)
}

// onlyPart is the one partition of a ShareFetch answer.
func onlyPart(t *testing.T, resp *kmsg.ShareFetchResponse) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode == 0 && len(resp.Topics) == 0 {
		return kmsg.NewShareFetchResponseTopicPartition() // nothing to say of it
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("share fetch: %v %q, %d topics", kerr.ErrorForCode(resp.ErrorCode), strOr(resp.ErrorMessage), len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

type acquired struct {
	first, last int64
	deliveries  int16
}

func acquiredOf(sp kmsg.ShareFetchResponseTopicPartition) []acquired {
	var out []acquired
	for _, a := range sp.AcquiredRecords {
		out = append(out, acquired{a.FirstOffset, a.LastOffset, a.DeliveryCount})
	}
	return out
}

// shareTopic makes topic (one partition) holding batches of the sizes
// given, sets the group's configs (share.auto.offset.reset earliest plus
// kv) and returns the topic's id.
func shareTopic(t *testing.T, g *Gateway, topic, group string, sizes []int, kv ...string) [16]byte {
	t.Helper()
	createTopic(t, g, topic, 1)
	for _, n := range sizes {
		if p := produceOne(t, g, produceReq(9, topic, 0, valueBatch(n))); p.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}
	cfg := bridge.GroupConfigs{share.CfgAutoOffsetReset: "earliest"}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	if err := g.Store.SetGroupConfigs(context.Background(), g.Cfg.Stream, group, cfg); err != nil {
		t.Fatal(err)
	}
	return metadataID(t, g, topic)
}

var accept = []int8{share.AckAccept}

// Two members of a share group read one partition through ShareFetch:
// each record is acquired by one, the record batches holding it come
// whole, released records return with their delivery count raised,
// accepted ones never; acknowledgements for records a member does not
// hold are INVALID_RECORD_STATE; -1 closes the session.
func TestShareFetchAcknowledge(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	id := shareTopic(t, g, "sq", "sg", []int{3, 2, 4}) // offsets 0-2, 3-4, 5-8
	a := &shareClient{t: t, g: g, group: "sg", member: "member-a", topic: id}
	b := &shareClient{t: t, g: g, group: "sg", member: "member-b", topic: id}
	for _, c := range []*shareClient{a, b} {
		r := c.heartbeat(0, "sq")
		if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 || r.Assignment.TopicPartitions[0].TopicID != id {
			t.Fatalf("%s joins: %v %+v", c.member, kerr.ErrorForCode(r.ErrorCode), r.Assignment)
		}
	}

	// Batch mode: 4 records asked, the second batch is finished.
	sp := onlyPart(t, a.fetch(4, false))
	if got := acquiredOf(sp); !slices.Equal(got, []acquired{{0, 4, 1}}) || sp.ErrorCode != 0 {
		t.Fatalf("a acquired %v (%v)", got, kerr.ErrorForCode(sp.ErrorCode))
	}
	if offs := offsetsOf(t, sp.Records); !slices.Equal(offs, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("a's records: %v", offs)
	}
	// Record-limit mode: exactly 2, from the batch that holds them.
	sp = onlyPart(t, b.fetch(2, true))
	if got := acquiredOf(sp); !slices.Equal(got, []acquired{{5, 6, 1}}) {
		t.Fatalf("b acquired %v", got)
	}
	if offs := offsetsOf(t, sp.Records); !slices.Equal(offs, []int64{5, 6, 7, 8}) {
		t.Fatalf("b's records (the whole batch): %v", offs)
	}

	// a accepts 0-2 and releases 3-4.
	ar := a.ack(ackRange{0, 2, accept}, ackRange{3, 4, []int8{share.AckRelease}})
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("a acknowledges: %v %v", kerr.ErrorForCode(ar.ErrorCode), kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	// b accepts 5-6 on its next fetch and gets the released 3-4 (second
	// delivery) and the rest of the log.
	sp = onlyPart(t, b.fetch(100, false, ackRange{5, 6, accept}))
	if sp.AcknowledgeErrorCode != 0 {
		t.Fatalf("b's piggy-backed acks: %v", kerr.ErrorForCode(sp.AcknowledgeErrorCode))
	}
	if got := acquiredOf(sp); !slices.Equal(got, []acquired{{3, 4, 2}, {7, 8, 1}}) {
		t.Fatalf("b acquired %v", got)
	}

	// Hostile: a acknowledges records b holds, records never acquired,
	// records past the log: each refused, nothing changes.
	for _, bad := range []ackRange{{3, 4, accept}, {0, 0, accept}, {100, 200, accept}, {7, 8, []int8{share.AckReject}}} {
		sp := onlyPart(t, a.fetch(100, false, bad))
		if sp.AcknowledgeErrorCode != kerr.InvalidRecordState.Code {
			t.Fatalf("a acknowledges %v: %v", bad, kerr.ErrorForCode(sp.AcknowledgeErrorCode))
		}
		if len(sp.AcquiredRecords) != 0 {
			t.Fatalf("a acquired %v with all held by b", acquiredOf(sp))
		}
	}
	ar = a.ack(ackRange{7, 7, accept})
	if code := ar.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidRecordState.Code {
		t.Fatalf("a's ShareAcknowledge of b's record: %v", kerr.ErrorForCode(code))
	}
	// Malformed: types neither 1 nor one per offset.
	if sp := onlyPart(t, a.fetch(100, false, ackRange{3, 4, []int8{1, 1, 1}})); sp.AcknowledgeErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("malformed batch: %v", kerr.ErrorForCode(sp.AcknowledgeErrorCode))
	}

	// b closes, accepting what it holds.
	sessions := g.Share.Sessions()
	b.epoch = -1
	ar = b.ack(ackRange{3, 4, accept}, ackRange{7, 8, accept})
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 || g.Share.Sessions() != sessions-1 {
		t.Fatalf("b closes: %v %v, %d sessions", kerr.ErrorForCode(ar.ErrorCode), kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode), g.Share.Sessions())
	}
	b.epoch = 5
	if r := b.fetch(100, false); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("b fetches after closing: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Everything is accepted: nothing more to acquire, the start is past it.
	if sp := onlyPart(t, a.fetch(100, false)); len(sp.AcquiredRecords) != 0 {
		t.Fatalf("acquired again: %v", acquiredOf(sp))
	}
	if offs, _ := g.Share.Offsets(context.Background(), "sg"); offs[share.TP{Topic: "sq", Partition: 0}].Start != 9 {
		o := offs[share.TP{Topic: "sq", Partition: 0}]
		t.Fatalf("share-partition start %d", o.Start)
	}
	// Closing with ShareFetch releases what is held.
	if p := produceOne(t, g, produceReq(9, "sq", 0, valueBatch(2))); p.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(p.ErrorCode))
	}
	if got := acquiredOf(onlyPart(t, a.fetch(100, false))); !slices.Equal(got, []acquired{{9, 10, 1}}) {
		t.Fatalf("a acquired %v", got)
	}
	a.epoch = -1
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr(a.member), -1
	if r := do(t, g, req).(*kmsg.ShareFetchResponse); r.ErrorCode != 0 {
		t.Fatalf("a closes: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	c := &shareClient{t: t, g: g, group: "sg", member: "member-c", topic: id}
	if got := acquiredOf(onlyPart(t, c.fetch(100, false))); !slices.Equal(got, []acquired{{9, 10, 2}}) {
		t.Fatalf("after a closed, c acquired %v", got)
	}
}

// offsetsOf lists the offsets of the records in record batches.
func offsetsOf(t *testing.T, b []byte) []int64 {
	t.Helper()
	var out []int64
	for _, r := range readRecords(t, b) {
		out = append(out, r.offset)
	}
	return out
}

// Thousands of share sessions opened under distinct member ids: past
// --share-max-sessions each is SHARE_SESSION_LIMIT_REACHED and the count
// stays at the bound.
func TestShareSessionLimit(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(c *Config) {
		c.Shares.Limits = share.DefaultConfig()
		c.Shares.Limits.MaxSessions = 100
	})
	id := shareTopic(t, g, "lq", "lg", []int{1})
	codes := map[int16]int{}
	for i := range 5000 {
		sc := &shareClient{t: t, g: g, group: "lg", member: fmt.Sprintf("member-%d", i), topic: id}
		codes[sc.fetch(1, false).ErrorCode]++
	}
	if codes[0] != 100 || codes[kerr.ShareSessionLimitReached.Code] != 4900 || g.Share.Sessions() != 100 {
		t.Fatalf("codes %v, %d sessions", codes, g.Share.Sessions())
	}
}

// A member that acquires records and never acknowledges them: after
// share.record.lock.duration.ms another member gets them, delivery count
// raised.
func TestShareLockExpires(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64 // how far the share coordinator's clock is ahead
	g := newGateway(t, func(c *Config) {
		c.Shares.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	if err := g.StartShareGroups(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.CloseShareGroups)
	id := shareTopic(t, g, "xq", "xg", []int{3}, share.CfgLockDuration, "15000")
	silent := &shareClient{t: t, g: g, group: "xg", member: "silent", topic: id}
	other := &shareClient{t: t, g: g, group: "xg", member: "other", topic: id}
	if got := acquiredOf(onlyPart(t, silent.fetch(10, false))); !slices.Equal(got, []acquired{{0, 2, 1}}) {
		t.Fatalf("silent acquired %v", got)
	}
	if sp := onlyPart(t, other.fetch(10, false)); len(sp.AcquiredRecords) != 0 {
		t.Fatalf("other acquired locked records: %v", acquiredOf(sp))
	}
	skew.Add(int64(15*time.Second - time.Millisecond))
	if sp := onlyPart(t, other.fetch(10, false)); len(sp.AcquiredRecords) != 0 {
		t.Fatalf("other acquired records before the lock ended: %v", acquiredOf(sp))
	}
	skew.Add(int64(time.Millisecond))
	var got []acquired
	await.True(t, 10*time.Second, "the expired records acquired by another member", func() bool {
		got = acquiredOf(onlyPart(t, other.fetch(10, false)))
		return len(got) > 0
	})
	if !slices.Equal(got, []acquired{{0, 2, 2}}) {
		t.Fatalf("other acquired %v", got)
	}
	// The silent member's late acknowledgement is refused.
	if sp := onlyPart(t, silent.fetch(10, false, ackRange{0, 2, accept})); sp.AcknowledgeErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("late acknowledgement: %v", kerr.ErrorForCode(sp.AcknowledgeErrorCode))
	}
}

// shareBatches tells Partition.Acquire which stored batches have nothing to
// deliver: control batches always; under read_committed the batches of
// aborted transactions, until their producer's marker.
func TestShareBatches(t *testing.T) {
	t.Parallel()
	at := func(b []byte, base, pid int64) []byte {
		b = append([]byte(nil), b...)
		binary.BigEndian.PutUint64(b, uint64(base))
		binary.BigEndian.PutUint64(b[hProducerID:], uint64(pid))
		return b
	}
	const txn, control = 0x10, 0x20
	var log []byte
	log = append(log, at(valueBatch(2), 0, -1)...)                        // 0-1 plain
	log = append(log, at(withAttrs(valueBatch(2), txn), 2, 7)...)         // 2-3 pid 7, aborted
	log = append(log, at(withAttrs(valueBatch(1), txn), 4, 8)...)         // 4 pid 8, committed
	log = append(log, at(withAttrs(valueBatch(1), txn|control), 5, 7)...) // 5 abort marker of 7
	log = append(log, at(withAttrs(valueBatch(1), txn), 6, 7)...)         // 6 pid 7, next transaction
	aborted := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 2}}
	b := func(base, last int64, skip bool) share.Batch { return share.Batch{Base: base, Last: last, Skip: skip} }
	if got, want := shareBatches(log, aborted, true), []share.Batch{b(0, 1, false), b(2, 3, true), b(4, 4, false), b(5, 5, true), b(6, 6, false)}; !slices.Equal(got, want) {
		t.Errorf("read_committed: %v, want %v", got, want)
	}
	if got, want := shareBatches(log, aborted, false), []share.Batch{b(0, 1, false), b(2, 3, false), b(4, 4, false), b(5, 5, true), b(6, 6, false)}; !slices.Equal(got, want) {
		t.Errorf("read_uncommitted: %v, want %v", got, want)
	}
	if got := shareBatches(log[:len(log)-5], nil, false); len(got) != 4 {
		t.Errorf("a cut batch at the end: %v", got)
	}
	if got := batchesHolding(log, 3, 4); len(got) == 0 || binary.BigEndian.Uint64(got) != 2 || len(shareBatches(got, nil, false)) != 2 {
		t.Errorf("batches holding 3-4: %v", shareBatches(got, nil, false))
	}
}
