package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/cluster/clustertest"
	"github.com/iggy-kafka/gateway/internal/await"
)

func startNode(t *testing.T, endpoint string, id int32, ttl time.Duration) *cluster.Node {
	t.Helper()
	n, err := cluster.Start(context.Background(), cluster.Options{
		Endpoints: []string{endpoint},
		Prefix:    "/test/" + t.Name() + "/",
		Self:      cluster.Member{ID: id, Listeners: map[string]cluster.Endpoint{"PLAINTEXT": {Host: "127.0.0.1", Port: 9000 + id}}},
		TTL:       ttl,
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, 30*time.Second)
	if err != nil {
		t.Fatalf("node %d: %v", id, err)
	}
	return n
}

// waitMembers waits until every node sees exactly want and has settled.
func waitMembers(t *testing.T, nodes []*cluster.Node, want ...int32) {
	t.Helper()
	await.Until(t, 20*time.Second, func() error {
		for _, n := range nodes {
			v := n.View()
			ok := len(v.Members) == len(want) && n.Settled()
			for i := 0; ok && i < len(want); i++ {
				ok = v.Members[i].ID == want[i]
			}
			if !ok {
				return fmt.Errorf("members not %v on every node: node %d has view %v, settled %v", want, v.Self, v.Members, n.Settled())
			}
		}
		return nil
	})
}

// writers returns which nodes may write topic/partition now.
func writers(nodes []*cluster.Node, topic string, p int32) []int32 {
	var out []int32
	for _, n := range nodes {
		if n.BeginWrite(topic, p) {
			out = append(out, n.View().Self)
			n.EndWrite()
		}
	}
	return out
}

// soleWriters is the one node that may write each partition ("topic/p")
// of topics t0.. with parts partitions each; more than one, or none, fails
// the test.
func soleWriters(t *testing.T, nodes []*cluster.Node, topics, parts int, when string) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for ti := 0; ti < topics; ti++ {
		topic := fmt.Sprintf("t%d", ti)
		for p := int32(0); p < int32(parts); p++ {
			w := writers(nodes, topic, p)
			if len(w) != 1 {
				t.Fatalf("%s%s/%d: writers %v, want exactly one", when, topic, p, w)
			}
			out[fmt.Sprint(topic, "/", p)] = w[0]
		}
	}
	return out
}

// Three gateways agree on one writer per partition and one coordinator per
// group, spread evenly; when one leaves, only its partitions move, and
// each still has exactly one writer.
func TestNodesAgreeOnOneWriter(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	nodes := []*cluster.Node{startNode(t, et.Endpoint, 1, 3*time.Second), startNode(t, et.Endpoint, 2, 3*time.Second), startNode(t, et.Endpoint, 3, 3*time.Second)}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	waitMembers(t, nodes, 1, 2, 3)

	const topics, parts = 20, 30
	share := map[int32]int{}
	before := soleWriters(t, nodes, topics, parts, "")
	for _, w := range before {
		share[w]++
	}
	for id, n := range share {
		// 600 partitions over 3: each within 20 % of 200.
		if n < 160 || n > 240 {
			t.Errorf("node %d leads %d of %d partitions: %v", id, n, topics*parts, share)
		}
	}
	for g := 0; g < 100; g++ {
		name := fmt.Sprintf("group-%d", g)
		serving := 0
		for _, n := range nodes {
			if n.GroupCode(name) == 0 {
				serving++
			}
		}
		if serving != 1 {
			t.Fatalf("%s: %d coordinators", name, serving)
		}
	}

	// Node 2 leaves cleanly: its lease is revoked, the others take over.
	nodes[1].Close()
	nodes = []*cluster.Node{nodes[0], nodes[2]}
	waitMembers(t, nodes, 1, 3)
	moved := 0
	for tp, w := range soleWriters(t, nodes, topics, parts, "after leave ") {
		was := before[tp]
		if was != 2 && w != was {
			t.Fatalf("%s moved from %d to %d, though %d is still live", tp, was, w, was)
		}
		if was == 2 {
			moved++
		}
	}
	if moved != share[2] {
		t.Fatalf("moved %d, want node 2's %d", moved, share[2])
	}
	// The epoch grew with the change.
	if nodes[0].View().Epoch() <= 0 {
		t.Fatalf("epoch %d", nodes[0].View().Epoch())
	}
}

// A node id held by a live session cannot be registered twice.
func TestNodeIDInUse(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	a := startNode(t, et.Endpoint, 7, 3*time.Second)
	defer a.Close()
	_, err := cluster.Start(context.Background(), cluster.Options{
		Endpoints: []string{et.Endpoint}, Prefix: "/test/" + t.Name() + "/",
		Self: cluster.Member{ID: 7}, TTL: 3 * time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, 0)
	if err != cluster.ErrIDInUse {
		t.Fatalf("second registration of id 7: %v, want ErrIDInUse", err)
	}
}

// With etcd gone, a node stops writing within its session TTL (before
// etcd could have handed its partitions to another).
func TestEtcdLostStopsWrites(t *testing.T) {
	// Not parallel: it bounds how long a lost lease stays live (2s), which load from parallel tests would stretch.
	et := clustertest.StartEtcd(t)
	n := startNode(t, et.Endpoint, 1, 2*time.Second)
	defer n.Close()
	waitMembers(t, []*cluster.Node{n}, 1)
	if !n.BeginWrite("t", 0) {
		t.Fatal("a settled one-member cluster refuses its own write")
	}
	n.EndWrite()
	et.Stop()
	await.True(t, 2*time.Second, "lease no longer counted live within 2s (the TTL) of etcd stopping", func() bool { return !n.LeaseLive() })
	if n.BeginWrite("t", 0) {
		n.EndWrite()
		t.Fatal("write allowed with no live session")
	}
	if n.GroupCode("g") == 0 {
		t.Fatal("group served with no live session")
	}
}
