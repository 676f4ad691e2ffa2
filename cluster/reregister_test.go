package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/iggy-kafka/gateway/cluster/clustertest"
	"github.com/iggy-kafka/gateway/internal/await"
)

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
			wa, wb := a.BeginWrite("t", p), b.BeginWrite("t", p)
			if wa {
				a.EndWrite()
			}
			if wb {
				b.EndWrite()
			}
			if wa == wb {
				t.Fatalf("round %d partition %d: a writes %v, b writes %v", round, p, wa, wb)
			}
		}
	}
}
