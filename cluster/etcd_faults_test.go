package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/iggy-kafka/gateway/cluster/clustertest"
	"github.com/iggy-kafka/gateway/internal/await"
)

// A member whose acknowledgement of a new view did not reach etcd (a
// timeout, etcd restarting) settles anyway on the others' acknowledgements
// and its own local one; the others wait for its acknowledgement in etcd.
// It must send it again with a later renewal, or the partitions and groups
// the others gained answer NOT_LEADER_OR_FOLLOWER and
// COORDINATOR_LOAD_IN_PROGRESS until the next membership change.
func TestLostAckIsSentAgain(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	var failAcks atomic.Bool
	start := func(id int32, fault func() error) *Node {
		return startTestNode(t, et.Endpoint, "/lostack/", id, func(o *Options) { o.ackFault = fault })
	}
	settledOn := func(members int, nodes ...*Node) func() bool {
		return func() bool {
			for _, n := range nodes {
				if len(n.View().Members) != members || !n.Settled() {
					return false
				}
			}
			return true
		}
	}
	a := start(1, nil)
	b := start(2, func() error {
		if failAcks.Load() {
			return errors.New("injected: etcd did not answer")
		}
		return nil
	})
	await.True(t, 15*time.Second, "a and b settled", settledOn(2, a, b))

	// c joins while b's acknowledgements are lost: b settles on a's and
	// c's, a and c cannot.
	failAcks.Store(true)
	c := start(3, nil)
	await.True(t, 15*time.Second, "b settled on the three", settledOn(3, b))
	if a.Settled() || c.Settled() {
		t.Fatalf("a (%v) or c (%v) settled without b's acknowledgement in etcd", a.Settled(), c.Settled())
	}
	// Until then c writes none of the partitions it gained: b may not
	// have stopped writing them (the handover rule).
	gained := 0
	for p := int32(0); p < 64; p++ {
		if c.View().Leader("t", p) != 3 {
			continue
		}
		gained++
		if c.BeginWrite("t", p) {
			c.EndWrite()
			t.Fatalf("c writes partition %d before the view it gained it in settled", p)
		}
		if c.Serves("t", p) {
			t.Fatalf("c serves the state of partition %d before the view it gained it in settled", p)
		}
	}
	if gained == 0 {
		t.Fatal("c gained no partition of 64")
	}
	// etcd answers b again: its next renewal sends the acknowledgement.
	failAcks.Store(false)
	await.True(t, 15*time.Second, "a, b and c settled on the three", settledOn(3, a, b, c))
	for p := int32(0); p < 64; p++ {
		if c.View().Leader("t", p) == 3 && !c.Serves("t", p) {
			t.Fatalf("c does not serve partition %d once settled", p)
		}
	}
}

// Listing the members again after a watch failure never takes the epoch
// back: when the view came from a deletion (a member left), the live keys
// are all older than it, and a reload of the same members keeps the view.
func TestReloadKeepsTheEpoch(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	// b is closed by the test: its key is deleted then.
	a, b := startTestNode(t, et.Endpoint, "/reload/", 1), startNode(t, et.Endpoint, "/reload/", 2)
	await.True(t, 15*time.Second, "a sees b", func() bool { return len(a.View().Members) == 2 })
	b.Close() // its key is deleted: a's view comes from the deletion
	await.True(t, 15*time.Second, "a sees b leave", func() bool { return len(a.View().Members) == 1 })
	before := a.View()
	if _, err := a.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := a.View(); after.Rev < before.Rev {
		t.Fatalf("the epoch went back from %d to %d on a reload of the same members", before.Rev, after.Rev)
	}
}

// A node cut off from etcd (a network partition: etcd and the others go
// on) stops writing and serving groups by its own clock, while its view
// still names it leader, before etcd expires its lease and the others take
// over; so no partition ever has two writers. When the partition heals it
// registers again and both settle with one writer per partition.
func TestPartitionedNodeFencesItself(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	proxy := et.Proxy(t)
	a, b := startTestNode(t, et.Endpoint, "/partition/", 1), startTestNode(t, proxy.Endpoint, "/partition/", 2)
	both := func() bool {
		return len(a.View().Members) == 2 && a.Settled() && len(b.View().Members) == 2 && b.Settled()
	}
	oneWriter := func(when string) {
		t.Helper()
		for p := int32(0); p < 64; p++ {
			wa, wb := mayWrite(a, b, p)
			if wa && wb {
				t.Fatalf("%s: partition %d written by both", when, p)
			}
		}
	}
	await.True(t, 15*time.Second, "a and b settled", both)
	var led []int32
	for p := int32(0); p < 64; p++ {
		if b.View().Leader("t", p) == 2 {
			led = append(led, p)
		}
	}
	group := ""
	for i := 0; group == ""; i++ {
		if g := "g" + strconv.Itoa(i); b.View().Coordinator(g) == 2 {
			group = g
		}
	}

	proxy.Cut()
	await.True(t, 15*time.Second, "b's session no longer known live", func() bool { return !b.LeaseLive() })
	// b heard nothing since the cut: its view still has it leading.
	if v := b.View(); !v.Has(2) || v.Leader("t", led[0]) != 2 {
		t.Fatalf("b's view changed while cut off: %v", v.IDs())
	}
	for _, p := range led {
		if b.BeginWrite("t", p) {
			b.EndWrite()
			t.Fatalf("b writes partition %d with its session not known live", p)
		}
	}
	if code := b.GroupCode(group); code == 0 {
		t.Fatalf("b serves group %s with its session not known live", group)
	}
	oneWriter("b cut off")
	// etcd expires b's lease; a takes everything.
	await.True(t, 15*time.Second, "a alone", func() bool { return len(a.View().Members) == 1 && a.Settled() })
	for _, p := range led {
		if !a.BeginWrite("t", p) {
			t.Fatalf("a does not take partition %d over", p)
		}
		a.EndWrite()
	}
	oneWriter("b's lease expired")

	proxy.Heal()
	await.True(t, 15*time.Second, "a and b settled again", both)
	oneWriter("healed")
}

// A node whose session lease is revoked behind its back (what etcd does
// to a gateway frozen past its TTL) stops writing, registers again, and
// the membership with its new session settles on both nodes, so it takes
// its partitions back, in several rounds. (The race ackMu closes, a
// re-registration acknowledging an older view after the watch acknowledged
// the newer one, needs the lease loss and the watch event to be noticed at
// the same moment, as after SIGCONT; TestClusterFrozenGatewayIsFenced hit
// it once in five runs before the fix. This test keeps the path honest but
// does not force that interleaving.)
func TestLostLeaseRegistersAndSettlesAgain(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	a, b := startTestNode(t, et.Endpoint, "/t/", 1), startTestNode(t, et.Endpoint, "/t/", 2)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{et.Endpoint}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	settledWithBoth := func() bool {
		for _, n := range []*Node{a, b} {
			if v := n.View(); len(v.Members) != 2 || !n.Settled() {
				return false
			}
		}
		return true
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		await.Until(t, 15*time.Second, func() error {
			if cond() {
				return nil
			}
			return fmt.Errorf("%s (a: %v settled %v; b: %v settled %v)", what, a.View().IDs(), a.Settled(), b.View().IDs(), b.Settled())
		})
	}
	for round := 0; round < 3; round++ {
		waitFor("both members, settled", settledWithBoth)
		old := b.lease.Load()
		if _, err := cli.Revoke(context.Background(), clientv3.LeaseID(old)); err != nil {
			t.Fatal(err)
		}
		waitFor("b on a new session", func() bool { l := b.lease.Load(); return l != 0 && l != old })
		waitFor("both members settled again", settledWithBoth)
		// b writes what it leads again; exactly one of them writes each.
		for p := int32(0); p < 32; p++ {
			wa, wb := mayWrite(a, b, p)
			if wa == wb {
				t.Fatalf("round %d partition %d: a writes %v, b writes %v", round, p, wa, wb)
			}
		}
	}
}
