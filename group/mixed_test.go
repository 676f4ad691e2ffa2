package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func subscription(owned map[string][]int32, topics ...string) []byte {
	var m kmsg.ConsumerMemberMetadata
	m.Version = 1
	m.Topics = topics
	for t, ps := range owned {
		m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t, Partitions: ps})
	}
	return m.AppendTo(nil)
}

func assignmentBlob(topic string, ps ...int32) []byte {
	var a kmsg.ConsumerMemberAssignment
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: ps}}
	return a.AppendTo(nil)
}

func classicJoin(t *testing.T, c *coord848, member string, meta []byte) *kmsg.JoinGroupResponse {
	t.Helper()
	j := kmsg.NewPtrJoinGroupRequest()
	j.Version, j.Group, j.MemberID, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = 3, "g", member, 10000, 10000, "consumer"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta}}
	resp, w := c.Join(j, "classic-client", "/127.0.0.1")
	if w.Ticket != 0 {
		t.Fatal("classic join parked")
	}
	return resp.(*kmsg.JoinGroupResponse)
}

func classicSync(t *testing.T, c *coord848, member string, gen int32, assign map[string][]byte) *kmsg.SyncGroupResponse {
	t.Helper()
	s := kmsg.NewPtrSyncGroupRequest()
	s.Version, s.Group, s.MemberID, s.Generation = 3, "g", member, gen
	for id, b := range assign {
		s.GroupAssignment = append(s.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: b})
	}
	resp, w := c.Sync(s)
	if w.Ticket != 0 {
		t.Fatal("classic sync parked")
	}
	return resp.(*kmsg.SyncGroupResponse)
}

func classicBeat(c *coord848, member string, gen int32) int16 {
	h := kmsg.NewPtrHeartbeatRequest()
	h.Group, h.MemberID, h.Generation = "g", member, gen
	return c.Heartbeat(h).ErrorCode
}

func decodeAssignment(t *testing.T, b []byte) []int32 {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, tp := range a.Topics {
		out = append(out, tp.Partitions...)
	}
	slices.Sort(out)
	return out
}

// A live classic group upgraded by a consumer-protocol member, then
// downgraded when it leaves (Kafka's BIDIRECTIONAL migration).
func TestMixedGroupUpgradeDowngrade(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "orders", 4)
	// A classic member, alone and Stable with all four partitions.
	jr := classicJoin(t, c, "", subscription(nil, "orders"))
	if jr.ErrorCode != 0 {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(jr.ErrorCode))
	}
	cid, gen := jr.MemberID, jr.Generation
	if sr := classicSync(t, c, cid, gen, map[string][]byte{cid: assignmentBlob("orders", 0, 1, 2, 3)}); sr.ErrorCode != 0 {
		t.Fatalf("classic sync: %v", kerr.ErrorForCode(sr.ErrorCode))
	}

	// A consumer-protocol member joins: the group is upgraded; the new
	// member gets nothing until the classic one released partitions.
	n := c.joined(t, "g", "n", "orders")
	if len(n.owned) != 0 {
		t.Fatalf("new member got %d partitions the classic member holds", len(n.owned))
	}
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Version, d.Groups = 1, []string{"g"}
	g := c.ConsumerDescribe(d).Groups[0]
	if g.ErrorCode != 0 || len(g.Members) != 2 || g.Members[0].MemberType != 0 || g.Members[1].MemberType != 1 {
		t.Fatalf("mixed group described: %+v", g)
	}
	// The classic member is told to rejoin; an eager member rejoins owning
	// nothing, gets two, and the new member then gets the other two.
	if code := classicBeat(c, cid, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after the upgrade: %v", kerr.ErrorForCode(code))
	}
	jr = classicJoin(t, c, cid, subscription(nil, "orders"))
	if jr.ErrorCode != 0 || jr.LeaderID != "" || jr.Generation <= gen {
		t.Fatalf("classic rejoin in the mixed group: %v leader %q gen %d", kerr.ErrorForCode(jr.ErrorCode), jr.LeaderID, jr.Generation)
	}
	gen = jr.Generation
	sr := classicSync(t, c, cid, gen, nil)
	mine := decodeAssignment(t, sr.MemberAssignment)
	if sr.ErrorCode != 0 || len(mine) != 2 {
		t.Fatalf("classic sync in the mixed group: %v %v", kerr.ErrorForCode(sr.ErrorCode), mine)
	}
	if code := classicBeat(c, cid, gen); code != 0 {
		t.Fatalf("classic heartbeat, reconciled: %v", kerr.ErrorForCode(code))
	}
	n.mustBeat()
	if len(n.owned) != 2 {
		t.Fatalf("new member after the classic one rejoined: %d partitions", len(n.owned))
	}
	for p := range n.owned {
		if slices.Contains(mine, p.part) {
			t.Fatalf("partition %d owned by both", p.part)
		}
	}
	// Commits: the classic member with its generation, the new one with
	// its epoch.
	commit := func(member string, epoch int32, ver int16) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = ver, "g", member, epoch
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}}}
		return c.CommitOffsets(t.Context(), r).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(cid, gen, 8); code != 0 {
		t.Fatalf("classic member commit: %v", kerr.ErrorForCode(code))
	}
	if code := commit(cid, gen-1, 8); code != kerr.IllegalGeneration.Code {
		t.Fatalf("classic member stale commit: %v", kerr.ErrorForCode(code))
	}
	if code := commit("n", n.epoch, 9); code != 0 {
		t.Fatalf("consumer member commit: %v", kerr.ErrorForCode(code))
	}

	// The consumer-protocol member leaves: the group is classic again and
	// rebalances; the classic member rejoins through the classic protocol.
	leave := n.request()
	leave.MemberEpoch = epochLeave
	if r := n.send(leave); r.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	c.mu.Lock()
	classic := c.groups["g"].consumer == nil
	c.mu.Unlock()
	if !classic {
		t.Fatal("group not downgraded after its last consumer-protocol member left")
	}
	if code := classicBeat(c, cid, gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after the downgrade: %v", kerr.ErrorForCode(code))
	}
	jr = classicJoin(t, c, cid, subscription(nil, "orders"))
	if jr.ErrorCode != 0 || jr.LeaderID != cid {
		t.Fatalf("classic rejoin after the downgrade: %v leader %q", kerr.ErrorForCode(jr.ErrorCode), jr.LeaderID)
	}
}
