package handlers

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/cluster/clustertest"
	"github.com/iggy-kafka/gateway/internal/await"
)

// joinSettled starts a cluster on a fresh etcd with one member per port,
// ids 1, 2, ... in order, each with a PLAINTEXT listener at
// 127.0.0.1:port, and waits until every member settled on all of them.
func joinSettled(t *testing.T, ports ...int32) []*cluster.Node {
	t.Helper()
	et := clustertest.StartEtcd(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	nodes := make([]*cluster.Node, len(ports))
	for i, port := range ports {
		n, err := cluster.Start(context.Background(), cluster.Options{Endpoints: []string{et.Endpoint}, Prefix: "/h/",
			Self: cluster.Member{ID: int32(i + 1), Listeners: map[string]cluster.Endpoint{"PLAINTEXT": {Host: "127.0.0.1", Port: port}}},
			TTL:  3 * time.Second, Log: log}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		nodes[i] = n
	}
	await.True(t, 10*time.Second, "the nodes settled", func() bool {
		for _, n := range nodes {
			if len(n.View().Members) != len(nodes) || !n.Settled() {
				return false
			}
		}
		return true
	})
	return nodes
}

// In a cluster of two, a gateway writes and serves the partitions it
// leads and answers NOT_LEADER_OR_FOLLOWER for the others (sequential and
// concurrent Fetch alike); Metadata names both brokers and each
// partition's leader with the view's epoch; FindCoordinator names the
// group's coordinator.
func TestClusterModeRoutesByLeader(t *testing.T) {
	t.Parallel()
	nodes := joinSettled(t, 9092, 9093)
	self := nodes[0]
	for _, concurrency := range []int{1, 4} {
		g := newGateway(t, func(c *Config) { c.Cluster, c.FetchConcurrency = self, concurrency })
		createTopic(t, g, "routed", 8)
		v := self.View()
		led, notLed := int32(-1), int32(-1)
		for p := int32(0); p < 8; p++ {
			if v.Leader("routed", p) == 1 {
				led = p
			} else {
				notLed = p
			}
		}
		if led < 0 || notLed < 0 {
			t.Fatalf("8 partitions all on one node: %v", v.IDs())
		}
		if sp := produceOne(t, g, produceReq(9, "routed", led, valueBatch(2))); sp.ErrorCode != 0 {
			t.Fatalf("produce to the led partition: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
		if sp := produceOne(t, g, produceReq(9, "routed", notLed, valueBatch(2))); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("produce to another's partition: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(sp.ErrorCode))
		}
		for p, want := range map[int32]int16{led: 0, notLed: kerr.NotLeaderForPartition.Code} {
			req := fetchReq(12, "routed", p, 0)
			req.MaxWaitMillis = 0
			got := do(t, g, req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
			if got != want {
				t.Fatalf("concurrency %d: fetch partition %d: %v, want %v", concurrency, p, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
			}
		}
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 12
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("routed")
		md.Topics = append(md.Topics, mt)
		mr := onListener(t, g, md).(*kmsg.MetadataResponse)
		if len(mr.Brokers) != 2 || mr.Brokers[1].Port != 9093 {
			t.Fatalf("brokers %+v", mr.Brokers)
		}
		if pm := mr.Topics[0].Partitions[notLed]; pm.Leader != 2 || pm.LeaderEpoch != v.Epoch() || pm.Replicas[0] != 2 {
			t.Fatalf("partition %d: leader %d epoch %d replicas %v", notLed, pm.Leader, pm.LeaderEpoch, pm.Replicas)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version = 3
		fc.CoordinatorKey = "some-group"
		fr := onListener(t, g, fc).(*kmsg.FindCoordinatorResponse)
		if fr.ErrorCode != 0 || fr.NodeID != v.Coordinator("some-group") {
			t.Fatalf("FindCoordinator: %+v, want node %d", fr, v.Coordinator("some-group"))
		}
	}
}

// onListener is do on a connection of the PLAINTEXT listener, whose name
// the members' advertised addresses are kept under.
func onListener(tb testing.TB, g *Gateway, req kmsg.Request) kmsg.Response {
	tb.Helper()
	c := newCall(g, req.Key(), req.GetVersion())
	c.Listener = "PLAINTEXT"
	resp := roundTrip(tb, c, req)
	tb.Cleanup(c.RunDeferred)
	return resp
}

// In cluster mode DescribeCluster lists the gateways as Metadata does,
// DescribeTopicPartitions places partitions as Metadata does, and
// OffsetForLeaderEpoch fences and answers with the view's epoch, which
// grows when a gateway joins (and partitions move).
func TestClusterModeLeaderEpochs(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	join := func(id int32, listener string, port int32) *cluster.Node {
		n, err := cluster.Start(context.Background(), cluster.Options{Endpoints: []string{et.Endpoint}, Prefix: "/e/",
			Self: cluster.Member{ID: id, Listeners: map[string]cluster.Endpoint{listener: {Host: "127.0.0.1", Port: port}}},
			TTL:  3 * time.Second, Log: log}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		return n
	}
	self, other := join(2, "PLAINTEXT", 9092), join(3, "PLAINTEXT", 9093)
	await.True(t, 10*time.Second, "the two nodes settled", func() bool {
		return len(self.View().Members) == 2 && self.Settled() && other.Settled()
	})
	g := newGateway(t, func(c *Config) { c.Cluster = self })
	createTopic(t, g, "epochs", 8)
	v := self.View()
	epoch := v.Epoch()
	led := func(v *cluster.View, id int32) int32 {
		for p := int32(0); p < 8; p++ {
			if v.Leader("epochs", p) == id {
				return p
			}
		}
		t.Fatalf("no partition of 8 led by %d in %v", id, v.IDs())
		return -1
	}
	mine, theirs := led(v, 2), led(v, 3)
	if sp := produceOne(t, g, produceReq(9, "epochs", mine, valueBatch(3))); sp.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(sp.ErrorCode))
	}

	dc := onListener(t, g, describeClusterReq(2, false, 1)).(*kmsg.DescribeClusterResponse)
	if len(dc.Brokers) != 2 || dc.Brokers[0].NodeID != 2 || dc.Brokers[0].Port != 9092 || dc.Brokers[1].NodeID != 3 ||
		dc.Brokers[1].Port != 9093 || dc.ControllerID != 2 {
		t.Fatalf("DescribeCluster: controller %d, brokers %+v", dc.ControllerID, dc.Brokers)
	}
	placed := func(v *cluster.View) {
		t.Helper()
		r := onListener(t, g, describeTopicsReq(100, nil, "epochs")).(*kmsg.DescribeTopicPartitionsResponse)
		for _, p := range r.Topics[0].Partitions {
			if l := v.Leader("epochs", p.Partition); p.LeaderID != l || p.LeaderEpoch != v.Epoch() || len(p.Replicas) != 1 || p.Replicas[0] != l {
				t.Fatalf("partition %d: leader %d epoch %d replicas %v; the view says %d at %d", p.Partition, p.LeaderID, p.LeaderEpoch, p.Replicas, l, v.Epoch())
			}
		}
	}
	placed(v)

	asks := []epochAsk{
		{"epochs", mine, epoch, epoch},
		{"epochs", mine, -1, 0}, // what a consumer of records (all in epoch 0) asks
		{"epochs", mine, epoch - 1, 0},
		{"epochs", mine, epoch + 1, 0},
		{"epochs", mine, epoch, epoch + 1},
		{"epochs", theirs, epoch, 0},
	}
	want := []epochAnswer{
		{0, epoch, 3}, {0, 0, 3},
		{kerr.FencedLeaderEpoch.Code, -1, -1}, {kerr.UnknownLeaderEpoch.Code, -1, -1},
		{0, -1, -1}, {kerr.NotLeaderForPartition.Code, -1, -1},
	}
	got := epochAnswers(do(t, g, leaderEpochReq(4, asks...)))
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("epoch %d, %+v: %+v, want %+v", epoch, asks[i], got[i], want[i])
		}
	}

	// A third gateway joins, without the PLAINTEXT listener: the epoch
	// grows; an epoch the client learned before is fenced now, and the
	// older epochs end where epoch 0 does, at the log end.
	join(1, "OTHER", 9094)
	await.True(t, 10*time.Second, "the three nodes settled", func() bool {
		return len(self.View().Members) == 3 && self.Settled()
	})
	v2 := self.View()
	if v2.Epoch() <= epoch {
		t.Fatalf("epoch %d after a join, %d before", v2.Epoch(), epoch)
	}
	placed(v2)
	mine2 := led(v2, 2)
	end := int64(0)
	if mine2 == mine {
		end = 3
	}
	got = epochAnswers(do(t, g, leaderEpochReq(4,
		epochAsk{"epochs", mine2, epoch, 0}, epochAsk{"epochs", mine2, v2.Epoch(), epoch}, epochAsk{"epochs", mine2, v2.Epoch(), v2.Epoch()})))
	want = []epochAnswer{{kerr.FencedLeaderEpoch.Code, -1, -1}, {0, 0, end}, {0, v2.Epoch(), end}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("after the join, answer %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The controller (the lowest id, 1) has no PLAINTEXT listener: it is
	// not listed, and DescribeCluster names no controller, as Kafka does.
	dc = onListener(t, g, describeClusterReq(2, false, 1)).(*kmsg.DescribeClusterResponse)
	if len(dc.Brokers) != 2 || dc.ControllerID != -1 {
		t.Fatalf("DescribeCluster with the controller elsewhere: controller %d, brokers %+v", dc.ControllerID, dc.Brokers)
	}
}

// In cluster mode a partition answered NOT_LEADER_OR_FOLLOWER names its
// leader and the view's epoch, and the answer carries that leader's
// endpoint on the call's listener, as a Kafka 4 broker's does (KIP-951):
// Produce v10+, Fetch v16+; a partition served here, or an older
// version, names none.
func TestClusterModeLeaderHints(t *testing.T) {
	t.Parallel()
	nodes := joinSettled(t, 9092, 9093)
	g := newGateway(t, func(c *Config) { c.Cluster = nodes[0] })
	createTopic(t, g, "hinted", 8)
	v := nodes[0].View()
	led, notLed := int32(-1), int32(-1)
	for p := int32(0); p < 8; p++ {
		if v.Leader("hinted", p) == 1 {
			led = p
		} else {
			notLed = p
		}
	}
	if led < 0 || notLed < 0 {
		t.Fatalf("8 partitions all on one node: %v", v.IDs())
	}
	want := kmsg.ProduceResponseTopicPartitionCurrentLeader{LeaderID: 2, LeaderEpoch: v.Epoch()}
	for _, version := range []int16{9, 11} {
		r := onListener(t, g, produceReq(version, "hinted", notLed, valueBatch(1))).(*kmsg.ProduceResponse)
		sp := r.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("v%d: %v", version, kerr.ErrorForCode(sp.ErrorCode))
		}
		named := version >= 10
		if got := sp.CurrentLeader; named && (got.LeaderID != want.LeaderID || got.LeaderEpoch != want.LeaderEpoch) || !named && got.LeaderID != -1 {
			t.Fatalf("produce v%d names leader %+v", version, got)
		}
		if named != (len(r.Brokers) == 1) || named && (r.Brokers[0].NodeID != 2 || r.Brokers[0].Port != 9093 || r.Brokers[0].Host != "127.0.0.1") {
			t.Fatalf("produce v%d endpoints %+v", version, r.Brokers)
		}
	}
	if r := onListener(t, g, produceReq(11, "hinted", led, valueBatch(1))).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].CurrentLeader.LeaderID != -1 || len(r.Brokers) != 0 {
		t.Fatalf("produce to a led partition names %+v %+v", r.Topics[0].Partitions[0].CurrentLeader, r.Brokers)
	}
	for _, version := range []int16{12, 16} {
		req := fetchReq(version, "hinted", notLed, 0)
		req.MaxWaitMillis = 0
		if version >= 13 {
			req.Topics[0].TopicID = metadataID(t, g, "hinted")
		}
		r := onListener(t, g, req).(*kmsg.FetchResponse)
		sp := r.Topics[0].Partitions[0]
		named := version >= 16
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code || named && (sp.CurrentLeader.LeaderID != 2 || sp.CurrentLeader.LeaderEpoch != v.Epoch()) || !named && sp.CurrentLeader.LeaderID != -1 {
			t.Fatalf("fetch v%d: %v, leader %+v", version, kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader)
		}
		if named != (len(r.Brokers) == 1) || named && r.Brokers[0].Port != 9093 {
			t.Fatalf("fetch v%d endpoints %+v", version, r.Brokers)
		}
	}
}
