package group

import (
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In cluster mode a group another gateway coordinates is answered
// NOT_COORDINATOR by every operation and left out of ListGroups; Forget
// drops its membership, so when it comes back its old members are unknown
// and rejoin.
func TestPlacementAndForget(t *testing.T) {
	t.Parallel()
	c := newCoord(t)
	var elsewhere atomic.Bool
	c.placement = func(g string) int16 {
		if g == "moving" && elsewhere.Load() {
			return kerr.NotCoordinator.Code
		}
		return 0
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 3
	join.Group, join.ProtocolType = "moving", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1}
	join.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	jr := c.Do(t, join).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "moving", jr.MemberID, jr.Generation

	elsewhere.Store(true)
	if got := c.Do(t, hb).(*kmsg.HeartbeatResponse).ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat elsewhere: %v", kerr.ErrorForCode(got))
	}
	if got := c.Do(t, join).(*kmsg.JoinGroupResponse).ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("join elsewhere: %v", kerr.ErrorForCode(got))
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation, commit.MemberID = 7, "moving", jr.Generation, jr.MemberID
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if got := c.Do(t, commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("commit elsewhere: %v", kerr.ErrorForCode(got))
	}
	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.Groups = []string{"moving"}
	if got := c.Do(t, desc).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode; got != kerr.NotCoordinator.Code {
		t.Fatalf("describe elsewhere: %v", kerr.ErrorForCode(got))
	}
	list := c.Do(t, kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	if len(list.Groups) != 0 {
		t.Fatalf("ListGroups lists %v, coordinated elsewhere", list.Groups)
	}

	if n := c.Forget(func(g string) bool { return g == "moving" }); n != 1 {
		t.Fatalf("Forget dropped %d groups, want 1", n)
	}
	elsewhere.Store(false)
	if got := c.Do(t, hb).(*kmsg.HeartbeatResponse).ErrorCode; got != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after the group came back: %v, want UNKNOWN_MEMBER_ID (rejoin)", kerr.ErrorForCode(got))
	}
}
