package handlers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/internal/await"
)

// Share groups in cluster mode, two gateways over one store and one etcd:
// the partition's leader serves ShareFetch (the other answers
// NOT_LEADER_OR_FOLLOWER naming it), the group's coordinator serves the
// heartbeats and offsets (the other answers NOT_COORDINATOR); an
// AlterShareGroupOffsets at the coordinator reaches the leader's state;
// when the leader leaves, the other gateway takes the partition with its
// state from etcd: what was accepted is not delivered again, what was
// held is, and an acknowledgement sent to the gateway that left is
// refused rather than lost.
func TestShareClusterLeaderHandover(t *testing.T) {
	t.Parallel()
	nodes, g1, g2 := newShareClusterPair(t)
	v := nodes[0].View()
	topic := nameWhere("sc", func(n string) bool { return v.Leader(n, 0) == 1 })
	group := nameWhere("scg", func(n string) bool { return v.Coordinator(n) == 2 })
	id := shareTopic(t, g1, topic, group, []int{10}) // offsets 0-9, one batch

	// The coordinator serves the group, the other gateway refers to it.
	a := &shareClient{t: t, g: g1, group: group, member: "member-a", topic: id}
	if r := a.heartbeat(0, topic); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat at the gateway not coordinating: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := (&shareClient{t: t, g: g2, group: group, member: "member-a"}).heartbeat(0, topic); r.ErrorCode != 0 {
		t.Fatalf("heartbeat at the coordinator: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// The leader serves the partition, the other gateway names it.
	b := &shareClient{t: t, g: g2, group: group, member: "member-b", topic: id}
	if sp := onlyPart(t, b.fetch(10, true)); sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != 1 || sp.CurrentLeader.LeaderEpoch != v.Epoch() {
		t.Fatalf("fetch at the gateway not leading: %v, leader %+v", kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader)
	}
	sfr := kmsg.NewPtrShareFetchRequest()
	sfr.Version = 1
	sfr.GroupID, sfr.MemberID = kmsg.StringPtr(group), kmsg.StringPtr("member-e")
	sfr.MaxBytes = 1 << 20
	sft := kmsg.NewShareFetchRequestTopic()
	sft.TopicID = id
	sft.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}
	sfr.Topics = append(sfr.Topics, sft)
	if r := onListener(t, g2, sfr).(*kmsg.ShareFetchResponse); len(r.NodeEndpoints) != 1 || r.NodeEndpoints[0].NodeID != 1 || r.NodeEndpoints[0].Port != 9092 {
		t.Fatalf("the gateway not leading lists endpoints %+v, want gateway 1's", r.NodeEndpoints)
	}
	if sp := onlyPart(t, a.fetch(10, true)); !slices.Equal(acquiredOf(sp), []acquired{{0, 9, 1}}) {
		t.Fatalf("a acquired %v (%v)", acquiredOf(sp), kerr.ErrorForCode(sp.ErrorCode))
	}
	// a accepts 0-4 and leaves, releasing 5-9.
	if ar := a.ack(ackRange{0, 4, accept}); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("a accepts: %v", kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	a.epoch = -1
	a.ack()
	if r := (&shareClient{t: t, g: g2, group: group, member: "member-a"}).heartbeat(-1); r.ErrorCode != 0 {
		t.Fatalf("a leaves: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if start := shareStartAt(t, g2, group, topic); start != 5 {
		t.Fatalf("the coordinator reads start offset %d from etcd, want 5", start)
	}

	// The coordinator moves the empty group's start to 7; the leader
	// reads its state again when the next member opens its session, so
	// it never hands out 5 and 6.
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 7}}
	alter.Topics = append(alter.Topics, at)
	if r := do(t, g1, alter).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("alter at the gateway not coordinating: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := do(t, g2, alter).(*kmsg.AlterShareGroupOffsetsResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	c := &shareClient{t: t, g: g1, group: group, member: "member-c", topic: id}
	if got := acquiredOf(onlyPart(t, c.fetch(10, true))); !slices.Equal(got, []acquired{{7, 9, 1}}) {
		t.Fatalf("after the alter c acquired %v, want 7-9", got)
	}

	// ListGroups: the coordinator lists the group, the leader does not;
	// a group whose members never met its coordinator is listed from
	// its state in etcd.
	other := nameWhere("scq", func(n string) bool { return v.Coordinator(n) == 2 })
	x := &shareClient{t: t, g: g1, group: other, member: "member-x", topic: id}
	onlyPart(t, x.fetch(1, true))
	if got := shareGroupsListed(t, g2); !slices.Equal(got, []string{group, other}) {
		t.Fatalf("the coordinator lists %v, want [%s %s]", got, group, other)
	}
	if got := shareGroupsListed(t, g1); len(got) != 0 {
		t.Fatalf("the leader lists %v, want none", got)
	}

	// Gateway 1 leaves while c holds 7-9; gateway 2 takes the partition.
	nodes[0].Close()
	await.True(t, 15*time.Second, "gateway 2 leads the partition", func() bool { return nodes[1].Leads(topic, 0) })
	if ar := c.ack(ackRange{7, 9, accept}); ar.ErrorCode == 0 && ar.Topics[0].Partitions[0].ErrorCode == 0 {
		t.Fatal("an acknowledgement to the gateway that left was answered as done")
	}
	var got []acquired
	await.Until(t, 10*time.Second, func() error {
		sp := onlyPart(t, b.fetch(10, true))
		got = acquiredOf(sp)
		if sp.ErrorCode != 0 {
			return fmt.Errorf("fetch at the new leader: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
		return nil
	})
	if len(got) != 1 || got[0].first != 7 || got[0].last != 9 {
		t.Fatalf("the new leader handed out %v, want 7-9 (0-6 are done)", got)
	}
	if ar := b.ack(ackRange{7, 9, accept}); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("b accepts at the new leader: %v", kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	if start := shareStartAt(t, g2, group, topic); start != 10 {
		t.Fatalf("start offset %d after b accepted everything, want 10", start)
	}
}

// shareStartAt is the share-partition start offset of topic's partition 0
// that DescribeShareGroupOffsets at g answers.
func shareStartAt(t *testing.T, g *Gateway, group, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	req.Groups = append(req.Groups, rg)
	r := do(t, g, req).(*kmsg.DescribeShareGroupOffsetsResponse)
	if len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 || len(r.Groups[0].Topics) != 1 || len(r.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("describe offsets: %+v", r.Groups)
	}
	return r.Groups[0].Topics[0].Partitions[0].StartOffset
}

// shareGroupsListed is the share groups ListGroups at g lists, sorted.
func shareGroupsListed(t *testing.T, g *Gateway) []string {
	t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	req.TypesFilter = []string{"share"}
	var out []string
	for _, lg := range do(t, g, req).(*kmsg.ListGroupsResponse).Groups {
		out = append(out, lg.Group)
	}
	slices.Sort(out)
	return out
}

// The offset admin of a share group in cluster mode acts at the group's
// coordinator on state its partitions' leader wrote to etcd:
// DeleteShareGroupOffsets forgets it (the leader's next session starts
// over by share.auto.offset.reset) and DeleteGroups deletes the group
// with its state; the gateway that does not coordinate the group answers
// NOT_COORDINATOR.
func TestShareClusterAdminAtTheCoordinator(t *testing.T) {
	t.Parallel()
	nodes, leader, coord := newShareClusterPair(t)
	v := nodes[0].View()
	topic := nameWhere("sa", func(n string) bool { return v.Leader(n, 0) == 1 })
	group := nameWhere("sag", func(n string) bool { return v.Coordinator(n) == 2 })
	id := shareTopic(t, leader, topic, group, []int{4})
	a := &shareClient{t: t, g: leader, group: group, member: "member-a", topic: id}
	onlyPart(t, a.fetch(10, true))
	if ar := a.ack(ackRange{0, 3, accept}); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept: %v", kerr.ErrorForCode(ar.Topics[0].Partitions[0].ErrorCode))
	}
	a.epoch = -1
	a.ack()
	if start := shareStartAt(t, coord, group, topic); start != 4 {
		t.Fatalf("start %d at the coordinator, want 4", start)
	}

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = group
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
	if r := do(t, leader, del).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("delete offsets at the leader: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := do(t, coord, del).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete offsets at the coordinator: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	b := &shareClient{t: t, g: leader, group: group, member: "member-b", topic: id}
	if got := acquiredOf(onlyPart(t, b.fetch(10, true))); !slices.Equal(got, []acquired{{0, 3, 1}}) {
		t.Fatalf("after the offsets were deleted b acquired %v, want 0-3 again (earliest)", got)
	}
	b.epoch = -1
	b.ack()

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version = 2
	dg.Groups = []string{group}
	if r := do(t, coord, dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete group at the coordinator: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	if got := shareGroupsListed(t, coord); len(got) != 0 {
		t.Fatalf("listed after the delete: %v", got)
	}
	if r := do(t, coord, dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete again: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
}

// newShareClusterPair is gateways 1 and 2 of one settled cluster over one
// embedded store, share groups started, each advertising 127.0.0.1:9091+id
// on its PLAINTEXT listener.
func newShareClusterPair(t *testing.T) (nodes []*cluster.Node, g1, g2 *Gateway) {
	t.Helper()
	nodes = joinSettled(t, 9092, 9093)
	st := openEmbedded(t, t.TempDir())
	gw := func(i int) *Gateway {
		g := newGatewayOn(t, st, func(c *Config) { c.Cluster, c.NodeID, c.AdvertisedPort = nodes[i], int32(i+1), 9092+int32(i) })
		if err := g.StartShareGroups(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.CloseShareGroups)
		return g
	}
	return nodes, gw(0), gw(1)
}

// nameWhere is prefix followed by the first number from 0 whose name ok
// accepts (a topic led, or a group coordinated, by a given gateway).
func nameWhere(prefix string, ok func(string) bool) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("%s%d", prefix, i); ok(name) {
			return name
		}
	}
}
