package handlers

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/cluster"
)

// The operations keys Kafka's own tools send: ElectLeaders (43),
// AlterPartitionReassignments (45), ListPartitionReassignments (46) and
// DescribeQuorum (55).

func electReq(v int16, typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = v, typ
	if topics == nil {
		return req // null: all partitions
	}
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	slices.Sort(names)
	req.Topics = []kmsg.ElectLeadersRequestTopic{}
	for _, name := range names {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = name, topics[name]
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// electCodes flattens an answer to "topic-partition" -> code and message.
func electCodes(resp *kmsg.ElectLeadersResponse) map[string]string {
	out := map[string]string{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			msg := "<null>"
			if p.ErrorMessage != nil {
				msg = *p.ErrorMessage
			}
			out[t.Topic+"-"+itoa(p.Partition)] = kerr.ErrorForCode(p.ErrorCode).Error() + ": " + msg
		}
	}
	return out
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func TestElectLeaders(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "el", 3)
	createTopic(t, g, "el2", 1)

	notNeeded := kerr.ElectionNotNeeded.Error() + ": Leader election not needed for topic partition."
	for _, v := range []int16{0, 1, 2} {
		for _, typ := range []int8{0, 1} {
			if v == 0 && typ == 1 {
				continue // v0 elects the preferred replica only
			}
			resp := do(t, g, electReq(v, typ, map[string][]int32{"el": {0, 2, 5}, "nope": {0}})).(*kmsg.ElectLeadersResponse)
			want := map[string]string{
				"el-0":   notNeeded,
				"el-2":   notNeeded,
				"el-5":   kerr.UnknownTopicOrPartition.Error() + ": No such partition as el-5",
				"nope-0": kerr.UnknownTopicOrPartition.Error() + ": No such topic as nope",
			}
			if got := electCodes(resp); resp.ErrorCode != 0 || !maps.Equal(got, want) {
				t.Errorf("v%d type %d: top %d, %v, want %v", v, typ, resp.ErrorCode, got, want)
			}
		}
	}

	// All partitions: every topic, no partition needs an election.
	resp := do(t, g, electReq(2, 0, nil)).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 2 || resp.Topics[0].Topic != "el" || resp.Topics[1].Topic != "el2" ||
		len(resp.Topics[0].Partitions)+len(resp.Topics[1].Partitions) != 0 {
		t.Fatalf("all partitions: %+v", resp)
	}

	// An election type Kafka does not know: INVALID_REQUEST everywhere.
	resp = do(t, g, electReq(2, 2, map[string][]int32{"el": {1}})).(*kmsg.ElectLeadersResponse)
	if got := electCodes(resp); resp.ErrorCode != kerr.InvalidRequest.Code || got["el-1"] != kerr.InvalidRequest.Error()+": Unknown election type 2" {
		t.Fatalf("type 2: top %d, %v", resp.ErrorCode, got)
	}
}

func TestElectLeadersNeedsAlterOnCluster(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	createTopic(t, g, "el", 1)
	refused := kerr.ClusterAuthorizationFailed.Error() + ": Cluster authorization failed."
	resp := doAs(t, g, "User:alice", electReq(2, 0, map[string][]int32{"el": {0}})).(*kmsg.ElectLeadersResponse)
	if got := electCodes(resp); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || got["el-0"] != refused {
		t.Fatalf("alice: top %d, %v", resp.ErrorCode, got)
	}
	if resp := doAs(t, g, "User:alice", electReq(2, 0, nil)).(*kmsg.ElectLeadersResponse); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Topics) != 0 {
		t.Fatalf("alice, all partitions: %+v", resp)
	}
	grant(t, g, acl(rtCluster, ptLit, ClusterResource, "User:alice", "*", int8(kmsg.ACLOperationAlter), allow))
	resp = doAs(t, g, "User:alice", electReq(2, 0, map[string][]int32{"el": {0}})).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("alice with ALTER: %+v", resp)
	}
}

func reassignReq(v int16, allowRF bool, topic string, parts map[int32][]int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = v, allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	ps := make([]int32, 0, len(parts))
	for p := range parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, parts[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// reassignOne sends one partition's target and returns its code and
// message.
func reassignOne(t *testing.T, g *Gateway, v int16, allowRF bool, topic string, p int32, replicas []int32) (int16, string) {
	t.Helper()
	resp := onListener(t, g, reassignReq(v, allowRF, topic, map[int32][]int32{p: replicas})).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != p {
		t.Fatalf("%s-%d %v: %+v", topic, p, replicas, resp)
	}
	if v >= 1 && resp.AllowReplicationFactorChange != allowRF {
		t.Fatalf("AllowReplicationFactorChange %v not echoed", allowRF)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorMessage == nil {
		return sp.ErrorCode, ""
	}
	return sp.ErrorCode, *sp.ErrorMessage
}

func TestAlterPartitionReassignments(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate) // node 1
	createTopic(t, g, "ra", 2)
	const noMove = "Replicas cannot move here: Iggy holds the data and a gateway only leads a partition, so ra-1 has one replica, its leader 1 (the only broker)."
	cases := []struct {
		name     string
		v        int16
		allowRF  bool
		topic    string
		p        int32
		replicas []int32
		code     int16
		msg      string
	}{
		{"current", 0, true, "ra", 1, []int32{1}, 0, ""},
		{"current v1", 1, false, "ra", 1, []int32{1}, 0, ""},
		{"cancel", 1, true, "ra", 1, nil, kerr.NoReassignmentInProgress.Code, "No partition reassignment is in progress."},
		{"unknown broker", 1, true, "ra", 1, []int32{2}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker 2, but no such broker is registered. " + noMove},
		{"unknown broker added", 0, true, "ra", 1, []int32{1, 3}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker 3, but no such broker is registered. " + noMove},
		{"twice", 1, false, "ra", 1, []int32{1, 1}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes the broker 1 more than once. " + noMove},
		{"empty", 1, true, "ra", 1, []int32{}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes an empty replica list. " + noMove},
		{"unknown partition", 1, true, "ra", 2, []int32{1}, kerr.UnknownTopicOrPartition.Code, "Unable to find partition ra:2."},
		{"unknown topic", 1, true, "nope", 0, nil, kerr.UnknownTopicOrPartition.Code, "Unable to find a topic named nope."},
		{"bad name", 0, true, "a/b", 0, []int32{1}, kerr.UnknownTopicOrPartition.Code, "Unable to find a topic named a/b."},
	}
	for _, tc := range cases {
		code, msg := reassignOne(t, g, tc.v, tc.allowRF, tc.topic, tc.p, tc.replicas)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s: %v %q, want %v %q", tc.name, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}

	// Two entries of one topic are answered in request order.
	req := reassignReq(1, true, "ra", map[int32][]int32{0: {1}})
	req.Topics = append(req.Topics, reassignReq(1, true, "ra", map[int32][]int32{1: {2}}).Topics...)
	resp := do(t, g, req).(*kmsg.AlterPartitionAssignmentsResponse)
	if len(resp.Topics) != 2 || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[1].Partitions[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("two entries: %+v", resp)
	}
}

func TestReassignmentsNeedClusterACLs(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	createTopic(t, g, "ra", 1)
	alter := doAs(t, g, "User:alice", reassignReq(1, true, "ra", map[int32][]int32{0: {1}})).(*kmsg.AlterPartitionAssignmentsResponse)
	if alter.ErrorCode != kerr.ClusterAuthorizationFailed.Code || alter.ErrorMessage == nil ||
		alter.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice alters: %+v", alter)
	}
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lt := kmsg.NewListPartitionReassignmentsRequestTopic()
	lt.Topic, lt.Partitions = "ra", []int32{0, 4}
	list.Topics = append(list.Topics, lt)
	lr := doAs(t, g, "User:alice", list).(*kmsg.ListPartitionReassignmentsResponse)
	if lr.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 2 ||
		lr.Topics[0].Partitions[1].Partition != 4 || len(lr.Topics[0].Partitions[1].Replicas) != 0 {
		t.Fatalf("alice lists: %+v", lr)
	}
	// DESCRIBE lists, ALTER (which implies DESCRIBE) also alters.
	grant(t, g, acl(rtCluster, ptLit, ClusterResource, "User:alice", "*", int8(kmsg.ACLOperationDescribe), allow))
	if lr := doAs(t, g, "User:alice", list).(*kmsg.ListPartitionReassignmentsResponse); lr.ErrorCode != 0 {
		t.Fatalf("alice with DESCRIBE lists: %+v", lr)
	}
	if alter := doAs(t, g, "User:alice", reassignReq(1, true, "ra", map[int32][]int32{0: {1}})).(*kmsg.AlterPartitionAssignmentsResponse); alter.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice with DESCRIBE alters: %+v", alter)
	}
	grant(t, g, acl(rtCluster, ptLit, ClusterResource, "User:alice", "*", int8(kmsg.ACLOperationAlter), allow))
	if alter := doAs(t, g, "User:alice", reassignReq(1, true, "ra", map[int32][]int32{0: {1}})).(*kmsg.AlterPartitionAssignmentsResponse); alter.ErrorCode != 0 || alter.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alice with ALTER: %+v", alter)
	}
}

func TestListPartitionReassignmentsNone(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "lr", 2)
	all := kmsg.NewPtrListPartitionReassignmentsRequest()
	named := kmsg.NewPtrListPartitionReassignmentsRequest()
	for _, name := range []string{"lr", "nope"} {
		lt := kmsg.NewListPartitionReassignmentsRequestTopic()
		lt.Topic, lt.Partitions = name, []int32{0, 1, 7}
		named.Topics = append(named.Topics, lt)
	}
	for _, req := range []*kmsg.ListPartitionReassignmentsRequest{all, named} {
		resp := do(t, g, req).(*kmsg.ListPartitionReassignmentsResponse)
		if resp.ErrorCode != 0 || resp.ErrorMessage != nil || resp.Topics == nil || len(resp.Topics) != 0 {
			t.Fatalf("%+v: %+v", req.Topics, resp)
		}
	}
	if !Lookup(46).Inline || !Lookup(55).Inline {
		t.Fatal("ListPartitionReassignments and DescribeQuorum touch no store: inline")
	}
}

func quorumReq(v int16, topic string, partitions ...int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = v
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// onWire encodes resp and decodes it back at its version: what a client
// reads.
func onWire(t *testing.T, resp kmsg.Response) kmsg.Response {
	t.Helper()
	back := resp.RequestKind().ResponseKind()
	back.SetVersion(resp.GetVersion())
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	return back
}

// quorumPart is the one partition of a DescribeQuorum answer.
func quorumPart(t *testing.T, resp *kmsg.DescribeQuorumResponse) kmsg.DescribeQuorumResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Topic != "__cluster_metadata" || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.Partition != 0 {
		t.Fatalf("partition %+v", p)
	}
	return p
}

func TestDescribeQuorumOneGateway(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(c *Config) { c.NodeID = 5 })
	before := time.Now().UnixMilli()
	for v := int16(0); v <= 2; v++ {
		resp := onWire(t, onListener(t, g, quorumReq(v, "__cluster_metadata", 0))).(*kmsg.DescribeQuorumResponse)
		p := quorumPart(t, resp)
		if p.LeaderID != 5 || p.LeaderEpoch != 0 || p.HighWatermark != 0 || len(p.Observers) != 0 || len(p.CurrentVoters) != 1 {
			t.Fatalf("v%d: %+v", v, p)
		}
		voter := p.CurrentVoters[0]
		if voter.ReplicaID != 5 || voter.LogEndOffset != 0 || voter.ReplicaDirectoryID != [16]byte{} {
			t.Fatalf("v%d voter %+v", v, voter)
		}
		if v >= 1 && (voter.LastFetchTimestamp < before || voter.LastCaughtUpTimestamp != voter.LastFetchTimestamp) {
			t.Fatalf("v%d: the leader's timestamps are now (%d): %+v", v, before, voter)
		}
		wantNodes := 0
		if v >= 2 {
			wantNodes = 1
		}
		if len(resp.Nodes) != wantNodes {
			t.Fatalf("v%d nodes %+v", v, resp.Nodes)
		}
		if v >= 2 {
			n := resp.Nodes[0]
			if n.NodeID != 5 || len(n.Listeners) != 1 || n.Listeners[0].Name != "PLAINTEXT" || n.Listeners[0].Host != "127.0.0.1" || n.Listeners[0].Port != 9092 {
				t.Fatalf("node %+v", n)
			}
		}
	}

	// Anything but __cluster_metadata-0 is unknown, per partition.
	for _, req := range []*kmsg.DescribeQuorumRequest{quorumReq(2, "__cluster_metadata", 1), quorumReq(2, "other", 0, 3), quorumReq(2, "__cluster_metadata", 0, 0)} {
		resp := do(t, g, req).(*kmsg.DescribeQuorumResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(req.Topics[0].Partitions) {
			t.Fatalf("%+v: %+v", req.Topics, resp)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.UnknownTopicOrPartition.Code || p.ErrorMessage == nil || *p.ErrorMessage != "This server does not host this topic-partition." {
				t.Fatalf("%+v: %+v", req.Topics, p)
			}
		}
	}

	a := newGateway(t, withAuthz)
	resp := doAs(t, a, "User:alice", quorumReq(2, "__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Topics) != 0 || resp.ErrorMessage == nil || *resp.ErrorMessage != "Cluster authorization failed." {
		t.Fatalf("alice: %+v", resp)
	}
	grant(t, a, acl(rtCluster, ptLit, ClusterResource, "User:alice", "*", int8(kmsg.ACLOperationDescribe), allow))
	quorumPart(t, doAs(t, a, "User:alice", quorumReq(2, "__cluster_metadata", 0)).(*kmsg.DescribeQuorumResponse))
}

// In a cluster of two gateways each answers the same: partitions need no
// election and keep their computed leader as their one replica, which
// another live gateway cannot replace; the controller (lowest id) is the
// quorum's leader and one voter, the other gateway an observer.
func TestOpsKeysClusterMode(t *testing.T) {
	t.Parallel()
	nodes := joinSettled(t, 9092, 9093)
	n1, n2 := nodes[0], nodes[1]
	st := openEmbedded(t, t.TempDir())
	for _, self := range []*cluster.Node{n1, n2} {
		g := newGatewayOn(t, st, func(c *Config) { c.Cluster, c.NodeID = self, self.View().Self })
		if !topicExists(g, "cl") {
			createTopic(t, g, "cl", 8)
		}
		v := self.View()
		byLeader := map[int32]int32{} // leader -> a partition it leads
		for p := int32(0); p < 8; p++ {
			byLeader[v.Leader("cl", p)] = p
		}
		if len(byLeader) != 2 {
			t.Fatalf("8 partitions all on one node: %v", byLeader)
		}

		er := do(t, g, electReq(2, 0, map[string][]int32{"cl": {byLeader[1], byLeader[2]}})).(*kmsg.ElectLeadersResponse)
		for _, p := range er.Topics[0].Partitions {
			if p.ErrorCode != kerr.ElectionNotNeeded.Code {
				t.Fatalf("node %d: elect %+v", v.Self, er)
			}
		}

		for leader, p := range byLeader {
			other := 3 - leader
			if code, msg := reassignOne(t, g, 1, false, "cl", p, []int32{leader}); code != 0 || msg != "" {
				t.Fatalf("node %d: partition %d to its leader %d: %v %s", v.Self, p, leader, kerr.ErrorForCode(code), msg)
			}
			code, msg := reassignOne(t, g, 1, true, "cl", p, []int32{other})
			if code != kerr.InvalidReplicaAssignment.Code || !strings.HasPrefix(msg, "Replicas cannot move here") || !strings.Contains(msg, "its leader "+itoa(leader)+" (placed by rendezvous hashing") {
				t.Fatalf("node %d: partition %d (leader %d) to %d: %v %s", v.Self, p, leader, other, kerr.ErrorForCode(code), msg)
			}
			if code, msg := reassignOne(t, g, 1, false, "cl", p, []int32{1, 2}); code != kerr.InvalidReplicationFactor.Code || !strings.HasPrefix(msg, "The replication factor is changed from 1 to 2. Replicas cannot move here") {
				t.Fatalf("node %d: partition %d to [1 2] keeping the factor: %v %s", v.Self, p, kerr.ErrorForCode(code), msg)
			}
			if code, _ := reassignOne(t, g, 1, true, "cl", p, []int32{1, 2}); code != kerr.InvalidReplicaAssignment.Code {
				t.Fatalf("node %d: partition %d to [1 2]: %v", v.Self, p, kerr.ErrorForCode(code))
			}
			if code, msg := reassignOne(t, g, 1, true, "cl", p, []int32{3}); code != kerr.InvalidReplicaAssignment.Code || !strings.HasPrefix(msg, "The manual partition assignment includes broker 3, but no such broker is registered.") {
				t.Fatalf("node %d: partition %d to [3]: %v %s", v.Self, p, kerr.ErrorForCode(code), msg)
			}
		}

		resp := onWire(t, onListener(t, g, quorumReq(2, "__cluster_metadata", 0))).(*kmsg.DescribeQuorumResponse)
		p := quorumPart(t, resp)
		if p.LeaderID != 1 || p.LeaderEpoch != v.Epoch() || p.HighWatermark != v.Rev || v.Rev <= 0 ||
			len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != 1 || p.CurrentVoters[0].LogEndOffset != v.Rev {
			t.Fatalf("node %d: quorum %+v (view rev %d)", v.Self, p, v.Rev)
		}
		if len(p.Observers) != 1 || p.Observers[0].ReplicaID != 2 || p.Observers[0].LogEndOffset != v.Rev || p.Observers[0].LastFetchTimestamp != -1 {
			t.Fatalf("node %d: observers %+v", v.Self, p.Observers)
		}
		if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != 1 || len(resp.Nodes[0].Listeners) != 1 || resp.Nodes[0].Listeners[0].Port != 9092 {
			t.Fatalf("node %d: nodes %+v", v.Self, resp.Nodes)
		}
	}
}

// The four keys' response bodies are pinned byte for byte at their highest
// version (the leader's clock readings zeroed). Regenerate with: go test
// ./handlers -run Golden -update
func TestGoldenOpsKeys(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate)
	createTopic(t, g, "gold", 2)
	reassign := reassignReq(1, false, "gold", map[int32][]int32{0: {1}, 1: {1, 2}})
	reassign.Topics = append(reassign.Topics, reassignReq(1, false, "gold", map[int32][]int32{0: nil, 2: {1}}).Topics...)
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	lt := kmsg.NewListPartitionReassignmentsRequestTopic()
	lt.Topic, lt.Partitions = "gold", []int32{0}
	list.Topics = append(list.Topics, lt)
	cases := []struct {
		file string
		req  kmsg.Request
	}{
		{"43_elect_leaders_v2_resp.hex", electReq(2, 0, map[string][]int32{"gold": {0, 5}, "nope": {0}})},
		{"43_elect_leaders_v2_all_resp.hex", electReq(2, 1, nil)},
		{"45_alter_partition_reassignments_v1_resp.hex", reassign},
		{"46_list_partition_reassignments_v0_resp.hex", list},
		{"55_describe_quorum_v2_resp.hex", quorumReq(2, "__cluster_metadata", 0)},
	}
	for _, tc := range cases {
		resp := onListener(t, g, tc.req)
		if r, ok := resp.(*kmsg.DescribeQuorumResponse); ok {
			for i := range r.Topics[0].Partitions[0].CurrentVoters {
				v := &r.Topics[0].Partitions[0].CurrentVoters[i]
				v.LastFetchTimestamp, v.LastCaughtUpTimestamp = 0, 0
			}
		}
		if !wireGolden(t, tc.file, resp) {
			t.Logf("%s: %+v", tc.file, resp)
		}
	}
}
