package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/codec"
)

func listOffsetsReq(version int16, topic string, partition int32, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = version
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp = partition, ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func TestListOffsets(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "lo", 2)
	// Offsets 0..4 with timestamps base+0, +10, +50 (max), +20, +50 (tie).
	tss := []int64{0, 10, 50, 20, 50}
	for _, d := range tss {
		produceOne(t, g, produceReq(9, "lo", 0, batch(rec{value: []byte("v"), ts: baseTs + d})))
	}
	cases := []struct {
		name     string
		v        int16
		part     int32
		ts       int64
		off, rts int64
	}{
		{"latest", 1, 0, -1, 5, -1},
		{"earliest", 11, 0, -2, 0, -1},
		{"max timestamp", 7, 0, -3, 2, baseTs + 50},
		{"earliest local", 8, 0, -4, 0, -1},
		{"latest tiered", 9, 0, -5, -1, -1},
		{"earliest pending upload", 11, 0, -6, -1, -1},
		{"by time exact", 11, 0, baseTs + 20, 2, baseTs + 50},
		{"by time between", 4, 0, baseTs + 5, 1, baseTs + 10},
		{"by time first", 4, 0, 0, 0, baseTs},
		{"by time none", 11, 0, baseTs + 51, -1, -1},
		{"empty latest", 11, 1, -1, 0, -1},
		{"empty max timestamp", 11, 1, -3, -1, -1},
		{"empty by time", 11, 1, baseTs, -1, -1},
	}
	for _, tc := range cases {
		resp := do(t, g, listOffsetsReq(tc.v, "lo", tc.part, tc.ts)).(*kmsg.ListOffsetsResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.Offset != tc.off || p.Timestamp != tc.rts {
			t.Errorf("%s: code %d offset %d ts %d, want %d %d", tc.name, p.ErrorCode, p.Offset, p.Timestamp, tc.off, tc.rts)
		}
		if p.ErrorCode == 0 && p.LeaderEpoch != 0 {
			t.Errorf("%s: leader epoch %d", tc.name, p.LeaderEpoch)
		}
	}
	for _, tc := range []struct {
		topic string
		part  int32
	}{{"nope", 0}, {"lo", 2}, {"lo", -1}, {"", 0}} {
		resp := do(t, g, listOffsetsReq(11, tc.topic, tc.part, -1)).(*kmsg.ListOffsetsResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("%q/%d: code %d", tc.topic, tc.part, c)
		}
	}
	// read_committed answers the same.
	req := listOffsetsReq(11, "lo", 0, -1)
	req.IsolationLevel = 1
	if p := do(t, g, req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.Offset != 5 {
		t.Errorf("read_committed latest %d", p.Offset)
	}
}

// ListOffsets by time in a batch whose records span more than the 71.6
// minutes an Iggy batch's u32 µs deltas hold: the later records are stored
// clamped with their real time in kafka.ts (docs/MAPPING.md), and the
// search finds them by that time, as Kafka finds a record by its own, on
// both backends.
func TestListOffsetsClampedBatch(t *testing.T) {
	t.Parallel()
	const minute = int64(60_000)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, backend := range []string{"embedded", "iggy"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var st bridge.Backend = openEmbedded(t, t.TempDir())
			if backend == "iggy" {
				is, err := iggy.Open(context.Background(), iggy.Options{Addr: iggyServer(t).Addr(), PoolSize: 2, CallTimeout: 5 * time.Second, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = is.Close() })
				st = is
			}
			g := newGatewayOn(t, st)
			createTopic(t, g, "wide", 1)
			// Offsets 0..4 at base, +1, +80, +85 and +2 minutes.
			at := []int64{0, 1, 80, 85, 2}
			recs := make([]rec, len(at))
			for i, m := range at {
				recs[i] = rec{value: []byte("v"), ts: baseTs + m*minute}
			}
			recs[0].ts = 0 // the base timestamp itself (rec's rule)
			if p := produceOne(t, g, produceReq(9, "wide", 0, batch(recs...))); p.ErrorCode != 0 {
				t.Fatalf("produce: %d", p.ErrorCode)
			}
			for _, tc := range []struct {
				ts, off, rts int64
			}{
				{baseTs, 0, baseTs},
				{baseTs + minute/2, 1, baseTs + minute},
				{baseTs + 75*minute, 2, baseTs + 80*minute},
				{baseTs + 80*minute, 2, baseTs + 80*minute},
				{baseTs + 80*minute + 1, 3, baseTs + 85*minute},
				{baseTs + 85*minute, 3, baseTs + 85*minute},
				{baseTs + 85*minute + 1, -1, -1},
				{tsMaxTimestamp, 3, baseTs + 85*minute},
			} {
				p := do(t, g, listOffsetsReq(11, "wide", 0, tc.ts)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
				if p.ErrorCode != 0 || p.Offset != tc.off || p.Timestamp != tc.rts {
					t.Errorf("ts base%+d ms: code %d offset %d ts %d, want %d %d", tc.ts-baseTs, p.ErrorCode, p.Offset, p.Timestamp, tc.off, tc.rts)
				}
			}
		})
	}
}

func metadataReq(version int16, names ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.AllowAutoTopicCreation = true
	if names == nil {
		req.Topics = nil
		return req
	}
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, n := range names {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, mt)
	}
	return req
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "b", 2)
	createTopic(t, g, "a", 1)
	for _, v := range []int16{0, 1, 4, 9, 10, 12, 13} {
		req := metadataReq(v)
		if v == 0 {
			req.Topics = []kmsg.MetadataRequestTopic{} // v0: empty = all
		}
		resp := do(t, g, req).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != "127.0.0.1" || resp.Brokers[0].Port != 9092 {
			t.Fatalf("v%d brokers %+v", v, resp.Brokers)
		}
		if v >= 1 && resp.ControllerID != 1 {
			t.Errorf("v%d controller %d", v, resp.ControllerID)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != "iggy-kafka-test") {
			t.Errorf("v%d cluster id", v)
		}
		if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "a" || *resp.Topics[1].Topic != "b" {
			t.Fatalf("v%d topics %d", v, len(resp.Topics))
		}
		tb := resp.Topics[1]
		if len(tb.Partitions) != 2 {
			t.Fatalf("v%d partitions %d", v, len(tb.Partitions))
		}
		for i, p := range tb.Partitions {
			if p.Partition != int32(i) || p.Leader != 1 || len(p.Replicas) != 1 || p.Replicas[0] != 1 || len(p.ISR) != 1 || p.ISR[0] != 1 {
				t.Errorf("v%d partition %+v", v, p)
			}
			if v >= 7 && p.LeaderEpoch != 0 {
				t.Errorf("v%d leader epoch %d", v, p.LeaderEpoch)
			}
		}
		if v >= 10 && tb.TopicID == ([16]byte{}) {
			t.Errorf("v%d: zero topic id", v)
		}
	}
	// v1+: an empty list is no topics.
	if resp := do(t, g, metadataReq(9, []string{}...)).(*kmsg.MetadataResponse); len(resp.Topics) != 0 {
		t.Errorf("empty list: %d topics", len(resp.Topics))
	}
	// Named: unknown, invalid, duplicates.
	resp := do(t, g, metadataReq(12, "a", "nope", "a", "bad/name", "")).(*kmsg.MetadataResponse)
	want := []struct {
		name string
		code int16
	}{{"a", 0}, {"nope", kerr.UnknownTopicOrPartition.Code}, {"bad/name", kerr.InvalidTopicException.Code}, {"", kerr.InvalidTopicException.Code}}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d topics", len(resp.Topics))
	}
	for i, w := range want {
		if resp.Topics[i].ErrorCode != w.code {
			t.Errorf("%q: code %d want %d", w.name, resp.Topics[i].ErrorCode, w.code)
		}
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	// v4+: only when the request allows it.
	req := metadataReq(9, "x")
	req.AllowAutoTopicCreation = false
	if resp := do(t, g, req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("not allowed: %d", resp.Topics[0].ErrorCode)
	}
	resp := do(t, g, metadataReq(9, "x")).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("allowed: code %d, %d partitions", resp.Topics[0].ErrorCode, len(resp.Topics[0].Partitions))
	}
	// Before v4 always allowed.
	req = metadataReq(3, "y")
	req.AllowAutoTopicCreation = false
	if resp := do(t, g, req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("v3: %d", resp.Topics[0].ErrorCode)
	}
	// Invalid names are never created.
	if resp := do(t, g, metadataReq(9, "..")).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("..: %d", resp.Topics[0].ErrorCode)
	}
	// Kafka's internal topic names are never made into ordinary topics,
	// whatever the request allows; CreateTopics refuses them too.
	for _, name := range []string{"__consumer_offsets", "__transaction_state", "__share_group_state"} {
		if resp := do(t, g, metadataReq(3, name)).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("Metadata %s: code %d, want UNKNOWN_TOPIC_OR_PARTITION", name, resp.Topics[0].ErrorCode)
		}
		cresp := do(t, g, createReq(7, ct(name, 1, 1))).(*kmsg.CreateTopicsResponse)
		if cresp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("CreateTopics %s: code %d, want INVALID_REQUEST", name, cresp.Topics[0].ErrorCode)
		}
		if topicExists(g, name) {
			t.Errorf("%s was created", name)
		}
	}
	if resp := do(t, g, metadataReq(3, "__consumer_offsets_not")).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != 0 {
		t.Errorf("a name merely starting like an internal one: code %d", resp.Topics[0].ErrorCode)
	}
	// Config off: never.
	g = newGateway(t, noAutoCreate)
	if resp := do(t, g, metadataReq(3, "z")).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("off: %d", resp.Topics[0].ErrorCode)
	}
}

func TestTopicIDs(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "id", 1)
	id1 := do(t, g, metadataReq(12, "id")).(*kmsg.MetadataResponse).Topics[0].TopicID
	if id1 != do(t, g, metadataReq(12, "id")).(*kmsg.MetadataResponse).Topics[0].TopicID {
		t.Fatal("id not stable")
	}
	// By id (v12).
	req := metadataReq(12)
	mt := kmsg.NewMetadataRequestTopic()
	mt.TopicID = id1
	req.Topics = []kmsg.MetadataRequestTopic{mt}
	resp := do(t, g, req).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "id" {
		t.Fatalf("by id: %+v", resp.Topics[0])
	}
	// Recreated: a new id; the old one is unknown.
	if err := g.Store.DeleteTopic(context.Background(), "kafka", "id"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, g, "id", 1)
	if id2 := do(t, g, metadataReq(12, "id")).(*kmsg.MetadataResponse).Topics[0].TopicID; id2 == id1 {
		t.Fatal("recreated topic kept its id")
	}
	if resp := do(t, g, req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("old id: %d", resp.Topics[0].ErrorCode)
	}
}

func createReq(version int16, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = version
	req.Topics = topics
	return req
}

func ct(name string, parts int32, rf int16) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, parts, rf
	return t
}

func withAssign(t kmsg.CreateTopicsRequestTopic, assign ...[]int32) kmsg.CreateTopicsRequestTopic {
	t.NumPartitions, t.ReplicationFactor = -1, -1
	for i, r := range assign {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), r
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	return t
}

func withConfig(t kmsg.CreateTopicsRequestTopic, kv ...string) kmsg.CreateTopicsRequestTopic {
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = kv[i]
		if kv[i+1] != "<null>" {
			c.Value = kmsg.StringPtr(kv[i+1])
		}
		t.Configs = append(t.Configs, c)
	}
	return t
}

func TestCreateTopics(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "exists", 1)
	cases := []struct {
		name  string
		topic kmsg.CreateTopicsRequestTopic
		code  int16
		parts int32
	}{
		{"plain", ct("c1", 4, 1), 0, 4},
		{"defaults", ct("c2", -1, -1), 0, 3},
		{"exists", ct("exists", 1, 1), kerr.TopicAlreadyExists.Code, 0},
		{"bad name", ct("a*b", 1, 1), kerr.InvalidTopicException.Code, 0},
		{"long name", ct(strings.Repeat("x", 250), 1, 1), kerr.InvalidTopicException.Code, 0},
		{"zero partitions", ct("c3", 0, 1), kerr.InvalidPartitions.Code, 0},
		{"-2 partitions", ct("c3", -2, 1), kerr.InvalidPartitions.Code, 0},
		{"1001 partitions", ct("c3", 1001, 1), kerr.InvalidPartitions.Code, 0},
		{"rf 3", ct("c3", 1, 3), kerr.InvalidReplicationFactor.Code, 0},
		{"rf 0", ct("c3", 1, 0), kerr.InvalidReplicationFactor.Code, 0},
		{"assignment", withAssign(ct("c4", 0, 0), []int32{1}, []int32{1}), 0, 2},
		{"assignment other broker", withAssign(ct("c5", 0, 0), []int32{2}), kerr.InvalidReplicaAssignment.Code, 0},
		{"assignment two replicas", withAssign(ct("c5", 0, 0), []int32{1, 1}), kerr.InvalidReplicaAssignment.Code, 0},
		{"assignment and count", func() kmsg.CreateTopicsRequestTopic {
			x := withAssign(ct("c5", 0, 0), []int32{1})
			x.NumPartitions = 1
			return x
		}(), kerr.InvalidRequest.Code, 0},
		{"assignment gap", func() kmsg.CreateTopicsRequestTopic {
			x := withAssign(ct("c5", 0, 0), []int32{1}, []int32{1})
			x.ReplicaAssignment[1].Partition = 5
			return x
		}(), kerr.InvalidReplicaAssignment.Code, 0},
		{"harmless configs", withConfig(ct("c6", 1, 1), "segment.bytes", "1073741824", "cleanup.policy", "delete", "retention.ms", "-1", "min.insync.replicas", "<null>"), 0, 1},
		{"compact", withConfig(ct("c7", 1, 1), "cleanup.policy", "compact"), 0, 1},
		{"compact,delete and retention", withConfig(ct("c8", 1, -1), "cleanup.policy", "compact,delete", "retention.ms", "604800000", "retention.bytes", "-1"), 0, 1},
		{"unknown config", withConfig(ct("c9", 1, 1), "made.up", "1"), kerr.InvalidConfig.Code, 0},
		{"bad retention", withConfig(ct("c9", 1, 1), "retention.ms", "-2"), kerr.InvalidConfig.Code, 0},
		{"bad policy", withConfig(ct("c9", 1, 1), "cleanup.policy", "compact,compact"), kerr.InvalidConfig.Code, 0},
		{"log append time", withConfig(ct("c10", 1, 1), "message.timestamp.type", "LogAppendTime"), 0, 1},
		{"bad timestamp type", withConfig(ct("c9", 1, 1), "message.timestamp.type", "logappendtime"), kerr.InvalidConfig.Code, 0},
		{"not a number", withConfig(ct("c9", 1, 1), "segment.bytes", "big"), kerr.InvalidConfig.Code, 0},
		// Existence is checked before configs, as Kafka 4.1.1 does.
		{"exists with bad configs", withConfig(ct("exists", 1, 1), "made.up", "1", "cleanup.policy", "compact"), kerr.TopicAlreadyExists.Code, 0},
	}
	for _, v := range []int16{2, 5, 7} {
		for _, tc := range cases {
			tp := tc.topic
			if tc.code == 0 {
				tp.Topic = fmt.Sprintf("%s-v%d", tp.Topic, v)
			}
			resp := do(t, g, createReq(v, tp)).(*kmsg.CreateTopicsResponse)
			st := resp.Topics[0]
			if st.ErrorCode != tc.code {
				t.Errorf("v%d %s: code %d want %d", v, tc.name, st.ErrorCode, tc.code)
				continue
			}
			if tc.code != 0 {
				if _, err := g.Store.Topic(context.Background(), "kafka", tp.Topic); tc.code != kerr.TopicAlreadyExists.Code && err == nil {
					t.Errorf("v%d %s: created despite error", v, tc.name)
				}
				continue
			}
			ti, err := g.Store.Topic(context.Background(), "kafka", tp.Topic)
			if err != nil || ti.Partitions != tc.parts {
				t.Errorf("v%d %s: store %+v %v", v, tc.name, ti, err)
			}
			if v >= 5 && (st.NumPartitions != tc.parts || st.ReplicationFactor != 1) {
				t.Errorf("v%d %s: response %d partitions rf %d", v, tc.name, st.NumPartitions, st.ReplicationFactor)
			}
			if v >= 7 && st.TopicID != topicID(ti) {
				t.Errorf("v%d %s: topic id", v, tc.name)
			}
		}
	}
	// Duplicates: every entry of the name is refused; others proceed.
	resp := do(t, g, createReq(7, ct("dup", 1, 1), ct("solo", 1, 1), ct("dup", 2, 1))).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[2].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[1].ErrorCode != 0 {
		t.Fatalf("duplicates: %d %d %d", resp.Topics[0].ErrorCode, resp.Topics[1].ErrorCode, resp.Topics[2].ErrorCode)
	}
	if topicExists(g, "dup") {
		t.Fatal("duplicate created")
	}
	// validate_only creates nothing but reports errors.
	req := createReq(7, ct("vo", 2, 1), ct("exists", 1, 1))
	req.ValidateOnly = true
	resp = do(t, g, req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].NumPartitions != 2 || resp.Topics[1].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("validate only: %+v", resp.Topics)
	}
	if topicExists(g, "vo") {
		t.Fatal("validate_only created the topic")
	}
}

func TestDeleteTopics(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	for _, n := range []string{"d1", "d2", "d3", "keep"} {
		createTopic(t, g, n, 1)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 5
	req.TopicNames = []string{"d1", "nope", "d2", "d2", "bad name"}
	resp := do(t, g, req).(*kmsg.DeleteTopicsResponse)
	want := []int16{0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code}
	for i, w := range want {
		if resp.Topics[i].ErrorCode != w {
			t.Errorf("entry %d: code %d want %d", i, resp.Topics[i].ErrorCode, w)
		}
	}
	if _, err := g.Store.Topic(context.Background(), "kafka", "d1"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Errorf("d1 still there: %v", err)
	}
	if _, err := g.Store.Topic(context.Background(), "kafka", "d2"); err != nil {
		t.Errorf("duplicate-named d2 deleted: %v", err)
	}

	// v6 by id.
	id := do(t, g, metadataReq(12, "d3")).(*kmsg.MetadataResponse).Topics[0].TopicID
	req = kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = id
	unknown := kmsg.NewDeleteTopicsRequestTopic()
	unknown.TopicID = [16]byte{1}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID, unknown}
	resp = do(t, g, req).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "d3" || resp.Topics[0].TopicID != id {
		t.Fatalf("by id: %+v", resp.Topics[0])
	}
	if resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id: %d", resp.Topics[1].ErrorCode)
	}
	// The stream and the other topics stay.
	ts, err := g.Store.Topics(context.Background(), "kafka")
	if err != nil || len(ts) != 2 {
		t.Fatalf("left: %+v %v", ts, err)
	}
}

func TestInitProducerID(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	seen := map[int64]bool{}
	for _, v := range []int16{0, 2, 3, 5} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = v
		resp := do(t, g, req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerEpoch != 0 || resp.ProducerID < 0 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if resp.ProducerID>>producerCounterBits != 7 {
			t.Errorf("v%d: instance bits %d", v, resp.ProducerID>>producerCounterBits)
		}
		if seen[resp.ProducerID] {
			t.Errorf("v%d: id %d reissued", v, resp.ProducerID)
		}
		seen[resp.ProducerID] = true
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionalID = kmsg.StringPtr("tx")
	resp := do(t, g, req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Fatalf("transactional: %+v", resp)
	}
	req.TransactionalID = kmsg.StringPtr("")
	if resp := do(t, g, req).(*kmsg.InitProducerIDResponse); resp.ErrorCode != 0 {
		t.Fatalf("empty transactional id: %d", resp.ErrorCode)
	}
}

func TestErrCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		o    op
		code int16
	}{
		{nil, opWrite, 0},
		{bridge.ErrTopicNotFound, opRead, kerr.UnknownTopicOrPartition.Code},
		{fmt.Errorf("x: %w", bridge.ErrPartitionNotFound), opWrite, kerr.UnknownTopicOrPartition.Code},
		{bridge.ErrTopicExists, opAdmin, kerr.TopicAlreadyExists.Code},
		{fmt.Errorf("iggy: %w", bridge.ErrNotPermitted), opWrite, kerr.TopicAuthorizationFailed.Code},
		{bridge.ErrNotPermitted, opAdmin, kerr.TopicAuthorizationFailed.Code},
		{bridge.ErrRecordTooLarge, opWrite, kerr.MessageTooLarge.Code},
		{codec.ErrBudget, opWrite, kerr.MessageTooLarge.Code},
		{codec.ErrBatchCRC, opWrite, kerr.CorruptMessage.Code},
		{bridge.ErrRecordInvalid, opWrite, kerr.InvalidRecord.Code},
		{bridge.ErrUnavailable, opWrite, kerr.NotLeaderForPartition.Code},
		{context.DeadlineExceeded, opWrite, kerr.RequestTimedOut.Code},
		{context.DeadlineExceeded, opRead, kerr.NotLeaderForPartition.Code},
		{bridge.ErrClosed, opRead, kerr.NotLeaderForPartition.Code},
		{bridge.ErrUnavailable, opOffsets, kerr.NotLeaderForPartition.Code},
		{context.Canceled, opOffsets, kerr.RequestTimedOut.Code},
		{bridge.ErrUnavailable, opMeta, kerr.LeaderNotAvailable.Code},
		{bridge.ErrUnavailable, opAdmin, kerr.RequestTimedOut.Code},
		{fmt.Errorf("%w: disk full", bridge.ErrStorage), opWrite, kerr.KafkaStorageError.Code},
		{bridge.ErrStorage, opRead, kerr.KafkaStorageError.Code},
		{bridge.ErrStorage, opOffsets, kerr.KafkaStorageError.Code},
		{bridge.ErrStorage, opMeta, kerr.LeaderNotAvailable.Code},
		{bridge.ErrStorage, opAdmin, kerr.RequestTimedOut.Code},
		{errors.New("other"), opWrite, kerr.UnknownServerError.Code},
	}
	for _, tc := range cases {
		if got := errCode(tc.err, tc.o); got != tc.code {
			t.Errorf("%v op %d: %d want %d", tc.err, tc.o, got, tc.code)
		}
	}
}

func TestValidTopicName(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"a": true, "A-b_c.9": true, strings.Repeat("x", 249): true, "...": true,
		"": false, ".": false, "..": false, strings.Repeat("x", 250): false,
		"a b": false, "a/b": false, "é": false, "a\x00": false,
	} {
		if validTopicName(name) != ok {
			t.Errorf("%q: %v", name, !ok)
		}
	}
}
