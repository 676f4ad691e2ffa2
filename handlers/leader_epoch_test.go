package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// epochAsk is one partition of an OffsetForLeaderEpoch request.
type epochAsk struct {
	topic                string
	partition            int32
	current, leaderEpoch int32
}

func leaderEpochReq(v int16, asks ...epochAsk) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = v, -1
	for _, a := range asks {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != a.topic {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = a.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = a.partition, a.current, a.leaderEpoch
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// epochAnswer is one partition of the answer: error, epoch, end offset.
type epochAnswer struct {
	code  int16
	epoch int32
	end   int64
}

// epochAnswers flattens resp in its order.
func epochAnswers(resp kmsg.Response) []epochAnswer {
	var out []epochAnswer
	for _, t := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, epochAnswer{p.ErrorCode, p.LeaderEpoch, p.EndOffset})
		}
	}
	return out
}

// On one gateway every partition's leader epoch is 0 (as Metadata says)
// and every record is in it: epoch 0 ends at the log end offset. The
// answers were compared with a Kafka 4.1.1 broker's for a new topic.
func TestOffsetForLeaderEpoch(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "oe", 2)
	for range 5 {
		produceOne(t, g, produceReq(9, "oe", 0, batch(rec{value: []byte("v")})))
	}
	undefined := epochAnswer{0, -1, -1}
	unknown := epochAnswer{kerr.UnknownTopicOrPartition.Code, -1, -1}
	asks := []epochAsk{
		{"oe", 0, -1, 0}, // no fencing: epoch 0 ends at the log end
		{"oe", 0, 0, 0},
		{"oe", 0, 1, 0},  // the client knows a newer epoch than this leader
		{"oe", 0, -3, 0}, // an older one (any but -1 is checked)
		{"oe", 0, 0, 1},  // an epoch above the latest: undefined
		{"oe", 0, 0, -1}, // undefined asked, undefined answered
		{"oe", 0, 0, -5}, // older than any epoch: the log start
		{"oe", 1, 0, 0},  // an empty partition
		{"oe", 2, 0, 0},  // no such partition
		{"oe", -1, 0, 0}, // nor this
		{"missing", 0, 0, 0},
		{"bad name!", 0, 0, 0},
	}
	want := []epochAnswer{
		{0, 0, 5}, {0, 0, 5},
		{kerr.UnknownLeaderEpoch.Code, -1, -1}, {kerr.FencedLeaderEpoch.Code, -1, -1},
		undefined, undefined, {0, -5, 0},
		{0, 0, 0}, unknown, unknown, unknown, unknown,
	}
	for v := int16(2); v <= 4; v++ {
		got := epochAnswers(do(t, g, leaderEpochReq(v, asks...)))
		if len(got) != len(want) {
			t.Fatalf("v%d: %d answers, want %d", v, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("v%d %+v: %+v, want %+v", v, asks[i], got[i], want[i])
			}
		}
	}
	// The replica id is not looked at (a follower's, a debug consumer's).
	for _, replica := range []int32{5, -2} {
		req := leaderEpochReq(4, epochAsk{"oe", 0, 0, 0})
		req.ReplicaID = replica
		if got := epochAnswers(do(t, g, req)); got[0] != (epochAnswer{0, 0, 5}) {
			t.Errorf("replica %d: %+v", replica, got[0])
		}
	}
	// The log start moves with DeleteRecords: the oldest epochs end there.
	do(t, g, deleteRecordsReq(2, "oe", map[int32]int64{0: 2}))
	if got := epochAnswers(do(t, g, leaderEpochReq(4, epochAsk{"oe", 0, -1, -7}, epochAsk{"oe", 0, -1, 0}))); got[0] != (epochAnswer{0, -7, 2}) || got[1] != (epochAnswer{0, 0, 5}) {
		t.Fatalf("after DeleteRecords: %+v", got)
	}
	wireGolden(t, "23_offset_for_leader_epoch_v4_resp.hex", do(t, g, leaderEpochReq(4, asks...)))
}

// With ACLs: DESCRIBE on the topic, or CLUSTER_ACTION on the cluster for
// every topic; refused topics are answered after the others.
func TestOffsetForLeaderEpochAuthorization(t *testing.T) {
	t.Parallel()
	g := aliceGateway(t, 1, opDesc)
	grant(t, g, acl(rtCluster, ptLit, ClusterResource, "User:broker", "*", int8(kmsg.ACLOperationClusterAction), allow))
	req := leaderEpochReq(4, epochAsk{"B", 0, -1, 0}, epochAsk{"A", 0, -1, 0}, epochAsk{"A", 1, -1, 0})
	resp := doAs(t, g, "User:alice", req).(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != "A" || resp.Topics[1].Topic != "B" {
		t.Fatalf("topics %+v", resp.Topics)
	}
	got := epochAnswers(resp)
	want := []epochAnswer{{0, 0, 0}, {kerr.UnknownTopicOrPartition.Code, -1, -1}, {kerr.TopicAuthorizationFailed.Code, -1, -1}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("alice, answer %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, a := range epochAnswers(doAs(t, g, "User:broker", req)) {
		if a.code == kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("CLUSTER_ACTION refused a topic: %+v", a)
		}
	}
}

// TestCurrentLeaderEpochFetchListOffsets: Fetch (v9+) and ListOffsets
// (v4+) check the current_leader_epoch a client sends, as a Kafka leader
// does: -1 and the leader's (0) read, a newer one is UNKNOWN_LEADER_EPOCH,
// an older one FENCED_LEADER_EPOCH; an older request version does not
// carry it.
func TestCurrentLeaderEpochFetchListOffsets(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "ce", 1)
	produceOne(t, g, produceReq(9, "ce", 0, batch(rec{value: []byte("v")})))
	for _, tc := range []struct {
		epoch int32
		want  int16
	}{{-1, 0}, {0, 0}, {1, kerr.UnknownLeaderEpoch.Code}, {-2, kerr.FencedLeaderEpoch.Code}} {
		f := fetchReq(12, "ce", 0, 0)
		f.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.epoch
		fr := do(t, g, f).(*kmsg.FetchResponse)
		if got := fr.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("Fetch with current epoch %d: code %d, want %d", tc.epoch, got, tc.want)
		}
		if tc.want != 0 && len(fr.Topics[0].Partitions[0].RecordBatches) != 0 {
			t.Errorf("Fetch with current epoch %d returned records", tc.epoch)
		}
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version = 4
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "ce"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, tc.epoch
		rt.Partitions = append(rt.Partitions, rp)
		lo.Topics = append(lo.Topics, rt)
		lr := do(t, g, lo).(*kmsg.ListOffsetsResponse)
		if got := lr.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("ListOffsets with current epoch %d: code %d, want %d", tc.epoch, got, tc.want)
		}
	}
	f := fetchReq(8, "ce", 0, 0)
	f.Topics[0].Partitions[0].CurrentLeaderEpoch = 5 // not on the wire before v9
	if fr := do(t, g, f).(*kmsg.FetchResponse); fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("Fetch v8: code %d", fr.Topics[0].Partitions[0].ErrorCode)
	}
}
