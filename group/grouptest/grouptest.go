// Package grouptest drives a group coordinator the way Kafka clients do,
// for tests at two levels: package group calls its Coordinator directly,
// package handlers goes through the key handlers and the parking the loop
// does. Both implement Runner, so one scenario (StableTwo, say) checks the
// same behaviour at each level. Test code only.
package grouptest

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group is the group id the helpers use.
const Group = "grp"

// Runner runs group requests as a gateway would.
type Runner interface {
	// Do runs req once and returns its response; nil if it parked.
	Do(tb testing.TB, req kmsg.Request) kmsg.Response
	// Async runs req, re-running a parked call when it is woken or at its
	// deadline (then as the final run); the response arrives on the
	// channel.
	Async(tb testing.TB, req kmsg.Request) <-chan kmsg.Response
}

// Await returns the response on ch, failing the test after 10s.
func Await[T kmsg.Response](tb testing.TB, ch <-chan kmsg.Response) T {
	tb.Helper()
	select {
	case r := <-ch:
		v, ok := r.(T)
		if !ok {
			tb.Fatalf("response %T", r)
		}
		return v
	case <-time.After(10 * time.Second):
		tb.Fatal("no response in 10s")
	}
	var zero T
	return zero
}

// Pending reports whether ch has no response yet after a short wait.
func Pending(ch <-chan kmsg.Response) bool {
	select {
	case r := <-ch:
		_ = r
		return false
	case <-time.After(100 * time.Millisecond):
		return true
	}
}

// JoinReq is a v9 JoinGroup of Group with one "range" protocol.
func JoinReq(member, instance string, session time.Duration, meta string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = Group
	r.SessionTimeoutMillis = int32(session / time.Millisecond)
	r.RebalanceTimeoutMillis = 2000
	r.MemberID = member
	if instance != "" {
		r.InstanceID = kmsg.StringPtr(instance)
	}
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte(meta)
	r.Protocols = append(r.Protocols, p)
	return r
}

// SyncReq is a v5 SyncGroup of Group; assign maps member ids to their
// assignments (the leader's).
func SyncReq(member, instance string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation = Group, member, gen
	if instance != "" {
		r.InstanceID = kmsg.StringPtr(instance)
	}
	r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

// NewMember does the KIP-394 first step and returns the member id ("" for
// a static member, which skips it).
func NewMember(tb testing.TB, r Runner, instance string) string {
	tb.Helper()
	if instance != "" {
		return ""
	}
	j := r.Do(tb, JoinReq("", "", time.Second, "m")).(*kmsg.JoinGroupResponse)
	if j.ErrorCode != kerr.MemberIDRequired.Code || j.MemberID == "" {
		tb.Fatalf("first join: code %d id %q", j.ErrorCode, j.MemberID)
	}
	return j.MemberID
}

// HeartbeatCode sends a v4 Heartbeat and returns its error code.
func HeartbeatCode(tb testing.TB, r Runner, member, instance string, gen int32) int16 {
	tb.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = Group, member, gen
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	return r.Do(tb, req).(*kmsg.HeartbeatResponse).ErrorCode
}

// Describe describes Group (v5).
func Describe(tb testing.TB, r Runner) kmsg.DescribeGroupsResponseGroup {
	tb.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{Group}
	return r.Do(tb, req).(*kmsg.DescribeGroupsResponse).Groups[0]
}

// StableTwo builds a Stable group of members a and b (generation 2) and
// returns their ids and the generation.
func StableTwo(tb testing.TB, r Runner) (a, b string, gen int32) {
	tb.Helper()
	a = NewMember(tb, r, "")
	ja := Await[*kmsg.JoinGroupResponse](tb, r.Async(tb, JoinReq(a, "", time.Second, "ma")))
	if ja.ErrorCode != 0 || ja.Generation != 1 || ja.LeaderID != a || len(ja.Members) != 1 {
		tb.Fatalf("a alone: %+v", ja)
	}
	sa := Await[*kmsg.SyncGroupResponse](tb, r.Async(tb, SyncReq(a, "", 1, map[string]string{a: "A1"})))
	if sa.ErrorCode != 0 || string(sa.MemberAssignment) != "A1" {
		tb.Fatalf("a sync: %+v", sa)
	}
	if d := Describe(tb, r); d.State != "Stable" {
		tb.Fatalf("state %s", d.State)
	}

	// b joins: the group rebalances; a learns through its heartbeat.
	b = NewMember(tb, r, "")
	chB := r.Async(tb, JoinReq(b, "", time.Second, "mb"))
	if !Pending(chB) {
		tb.Fatal("b's join did not wait for a")
	}
	if d := Describe(tb, r); d.State != "PreparingRebalance" {
		tb.Fatalf("state %s", d.State)
	}
	if code := HeartbeatCode(tb, r, a, "", 1); code != kerr.RebalanceInProgress.Code {
		tb.Fatalf("heartbeat during rebalance: %d", code)
	}
	ja = Await[*kmsg.JoinGroupResponse](tb, r.Async(tb, JoinReq(a, "", time.Second, "ma")))
	jb := Await[*kmsg.JoinGroupResponse](tb, chB)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 2 || jb.Generation != 2 {
		tb.Fatalf("rejoin: a %+v b %+v", ja, jb)
	}
	if ja.LeaderID != a || len(ja.Members) != 2 || len(jb.Members) != 0 {
		tb.Fatalf("leader %s, %d/%d members", ja.LeaderID, len(ja.Members), len(jb.Members))
	}
	// The follower's sync waits for the leader's.
	chSB := r.Async(tb, SyncReq(b, "", 2, nil))
	if !Pending(chSB) {
		tb.Fatal("follower sync did not wait")
	}
	sa = Await[*kmsg.SyncGroupResponse](tb, r.Async(tb, SyncReq(a, "", 2, map[string]string{a: "A2", b: "B2"})))
	sb := Await[*kmsg.SyncGroupResponse](tb, chSB)
	if string(sa.MemberAssignment) != "A2" || string(sb.MemberAssignment) != "B2" {
		tb.Fatalf("assignments %q %q", sa.MemberAssignment, sb.MemberAssignment)
	}
	return a, b, 2
}

// Commit commits off for Group on topic/part (v9) and returns the
// partition's error code.
func Commit(tb testing.TB, r Runner, member string, gen int32, topic string, part int32, off int64) int16 {
	tb.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = Group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.Metadata = part, off, kmsg.StringPtr("meta")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return r.Do(tb, req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// FetchCommitted fetches Group's offset of topic/part at version and
// returns it with the error code (group-level first).
func FetchCommitted(tb testing.TB, r Runner, version int16, topic string, part int32) (int64, int16) {
	tb.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = version
	if version >= 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = Group
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, []int32{part}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		resp := r.Do(tb, req).(*kmsg.OffsetFetchResponse)
		gr := resp.Groups[0]
		if gr.ErrorCode != 0 {
			return 0, gr.ErrorCode
		}
		return gr.Topics[0].Partitions[0].Offset, gr.Topics[0].Partitions[0].ErrorCode
	}
	req.Group = Group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{part}
	req.Topics = append(req.Topics, rt)
	resp := r.Do(tb, req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		return 0, resp.ErrorCode
	}
	return resp.Topics[0].Partitions[0].Offset, resp.Topics[0].Partitions[0].ErrorCode
}
