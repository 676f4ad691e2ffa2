package handlers

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataID is the topic id Metadata hands out for topic.
func metadataID(t *testing.T, g *Gateway, topic string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := do(t, g, req).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata %s: %v", topic, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	}
	return resp.Topics[0].TopicID
}

// produceByID and fetchByID are one-topic requests that name the topic by
// id only, as v13+ does.
func produceByID(version int16, id [16]byte, records []byte) *kmsg.ProduceRequest {
	req := produceReq(version, "", 0, records)
	req.Topics[0].TopicID = id
	return req
}

func fetchByID(version int16, id [16]byte, offset int64) *kmsg.FetchRequest {
	req := fetchReq(version, "", 0, offset)
	req.Topics[0].TopicID = id
	return req
}

// Produce v13 and Fetch v13-v18 name topics by the ids Metadata hands
// out: records go in and come back by id, the answers carry the id; an id
// no topic has is UNKNOWN_TOPIC_ID and creates nothing; the id of a topic
// deleted and created again under its name is UNKNOWN_TOPIC_ID, while the
// new id works.
func TestTopicIDsInProduceAndFetch(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "by-id", 1)
	id := metadataID(t, g, "by-id")
	if p := produceOne(t, g, produceByID(13, id, valueBatch(3))); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce v13 by id: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	for _, v := range []int16{13, 15, 16, 17, 18} {
		resp := do(t, g, fetchByID(v, id, 0)).(*kmsg.FetchResponse)
		st := resp.Topics[0]
		sp := st.Partitions[0]
		if st.TopicID != id || sp.ErrorCode != 0 || len(readRecords(t, sp.RecordBatches)) != 3 || sp.HighWatermark != 3 {
			t.Fatalf("fetch v%d by id: topic id %x, %v, hwm %d", v, st.TopicID, kerr.ErrorForCode(sp.ErrorCode), sp.HighWatermark)
		}
	}

	unknown := [16]byte{1, 2, 3}
	if p := produceOne(t, g, produceByID(13, unknown, valueBatch(1))); p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("produce to an unknown id: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	resp := do(t, g, fetchByID(13, unknown, 0)).(*kmsg.FetchResponse)
	if st := resp.Topics[0]; st.TopicID != unknown || st.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("fetch of an unknown id: %x %v", st.TopicID, kerr.ErrorForCode(st.Partitions[0].ErrorCode))
	}

	if err := g.Store.DeleteTopic(context.Background(), g.Cfg.Stream, "by-id"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, g, "by-id", 1)
	if p := produceOne(t, g, produceByID(13, id, valueBatch(1))); p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("produce to the id of the deleted topic: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	resp = do(t, g, fetchByID(13, id, 0)).(*kmsg.FetchResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicID.Code {
		t.Fatalf("fetch of the id of the deleted topic: %v", kerr.ErrorForCode(code))
	}
	newID := metadataID(t, g, "by-id")
	if newID == id {
		t.Fatal("the topic created again has its old id")
	}
	if p := produceOne(t, g, produceByID(13, newID, valueBatch(1))); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce to the new id: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}

// An incremental fetch session made by a v13 request keeps each
// partition's topic id: its replies name the topic by id, and a topic
// forgotten by id leaves the session.
func TestFetchSessionByTopicID(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "sess-a", 1)
	createTopic(t, g, "sess-b", 1)
	a, b := metadataID(t, g, "sess-a"), metadataID(t, g, "sess-b")
	produceOne(t, g, produceByID(13, a, valueBatch(2)))
	req := fetchByID(13, a, 0)
	req.SessionEpoch = 0
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = b
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := do(t, g, req).(*kmsg.FetchResponse)
	if resp.SessionID == 0 || len(resp.Topics) != 2 {
		t.Fatalf("full v13 fetch: session %d, %d topics", resp.SessionID, len(resp.Topics))
	}

	produceOne(t, g, produceByID(13, b, valueBatch(1)))
	inc := kmsg.NewPtrFetchRequest()
	inc.Version, inc.MaxBytes, inc.SessionID, inc.SessionEpoch = 13, 1<<20, resp.SessionID, 1
	forget := kmsg.NewFetchRequestForgottenTopic()
	forget.TopicID, forget.Partitions = a, []int32{0}
	inc.ForgottenTopics = append(inc.ForgottenTopics, forget)
	resp = do(t, g, inc).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != b ||
		len(readRecords(t, resp.Topics[0].Partitions[0].RecordBatches)) != 1 {
		t.Fatalf("incremental v13 fetch: %v, topics %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
}

// OffsetCommit v10 and OffsetFetch v10 name topics by id: a commit by id
// is read back by id and by name (v9), an unknown id is UNKNOWN_TOPIC_ID
// and keeps nothing, and all topics (null) come back with their ids.
func TestOffsetsByTopicID(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "offs-id", 2)
	id := metadataID(t, g, "offs-id")
	unknown := [16]byte{9, 9, 9}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "g-id", -1
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		for p := range int32(2) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, int64(10+p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		commit.Topics = append(commit.Topics, rt)
	}
	cr := do(t, g, commit).(*kmsg.OffsetCommitResponse)
	codes := map[[16]byte][]int16{}
	for _, st := range cr.Topics {
		for _, sp := range st.Partitions {
			codes[st.TopicID] = append(codes[st.TopicID], sp.ErrorCode)
		}
	}
	if fmt.Sprint(codes[id]) != "[0 0]" || fmt.Sprint(codes[unknown]) != fmt.Sprint([]int16{kerr.UnknownTopicID.Code, kerr.UnknownTopicID.Code}) {
		t.Fatalf("commit v10 codes by topic id: %v", codes)
	}

	fetchOffsets := func(version int16, topics []kmsg.OffsetFetchRequestGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = version
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.Topics = "g-id", topics
		req.Groups = append(req.Groups, rg)
		resp := do(t, g, req).(*kmsg.OffsetFetchResponse)
		if resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("offset fetch v%d: %v", version, kerr.ErrorForCode(resp.Groups[0].ErrorCode))
		}
		return resp.Groups[0].Topics
	}
	asked := func(tid [16]byte, name string) kmsg.OffsetFetchRequestGroupTopic {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.TopicID, rt.Topic, rt.Partitions = tid, name, []int32{0, 1}
		return rt
	}
	got := fetchOffsets(10, []kmsg.OffsetFetchRequestGroupTopic{asked(id, ""), asked(unknown, "")})
	if len(got) != 2 || got[0].TopicID != id || got[0].Partitions[1].Offset != 11 || got[0].Partitions[1].ErrorCode != 0 ||
		got[1].TopicID != unknown || got[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("offset fetch v10 by id: %+v", got)
	}
	if got := fetchOffsets(9, []kmsg.OffsetFetchRequestGroupTopic{asked([16]byte{}, "offs-id")}); got[0].Partitions[0].Offset != 10 {
		t.Fatalf("offset fetch v9 by name after a commit by id: %+v", got)
	}
	if got := fetchOffsets(10, nil); len(got) != 1 || got[0].TopicID != id || len(got[0].Partitions) != 2 {
		t.Fatalf("offset fetch v10 of all topics: %+v", got)
	}
}
