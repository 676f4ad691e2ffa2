package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/iggy-kafka/gateway/cluster/clustertest"
	"github.com/iggy-kafka/gateway/internal/await"
)

// Two gateways share keys: a write based on an older revision is refused
// (ErrStateConflict), deletes and unconditional writes work, and a scan
// sees the other's writes.
func TestSharedStateCompareAndSet(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	a, b := startTestNode(t, et.Endpoint, "/s/", 1), startTestNode(t, et.Endpoint, "/s/", 2)
	ctx := context.Background()

	if _, err := a.PutState(ctx, "k/1", []byte("a1"), 5); !errors.Is(err, ErrStateConflict) {
		t.Fatalf("a write over a revision the absent key never had: %v", err)
	}
	r1, err := a.PutState(ctx, "k/1", []byte("a1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	v, rev, err := b.GetState(ctx, "k/1")
	if err != nil || string(v) != "a1" || rev != r1 {
		t.Fatalf("b reads %q at %d (%v), want a1 at %d", v, rev, err, r1)
	}
	r2, err := b.PutState(ctx, "k/1", []byte("b2"), r1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.PutState(ctx, "k/1", []byte("a3"), r1); !errors.Is(err, ErrStateConflict) {
		t.Fatalf("a's write over the revision b overwrote: %v, want a conflict", err)
	}
	if _, err := a.PutState(ctx, "k/2", []byte("x"), StateAnyRevision); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	if err := b.ScanState(ctx, "k/", func(key string, v []byte, _ int64) { got[key] = string(v) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["k/1"] != "b2" || got["k/2"] != "x" {
		t.Fatalf("scan: %v", got)
	}
	if _, err := a.PutState(ctx, "k/1", nil, r2); err != nil {
		t.Fatal(err)
	}
	if v, rev, err := b.GetState(ctx, "k/1"); err != nil || v != nil || rev != 0 {
		t.Fatalf("deleted key reads %q at %d (%v)", v, rev, err)
	}
}

// A gateway whose session lease etcd ended writes nothing, even while its
// own clock still counts the session live (a frozen gateway that has just
// resumed, before its renewal notices): the write is fenced in etcd.
func TestSharedStateWriteFencedOnLease(t *testing.T) {
	t.Parallel()
	et := clustertest.StartEtcd(t)
	// A long TTL: the node renews every 5 s, so it does not notice the
	// revoke (and register again) between the revoke and the write; if
	// it did, the round is run again.
	n := startTestNode(t, et.Endpoint, "/f/", 1, func(o *Options) { o.TTL = 20 * time.Second })
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{et.Endpoint}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	for round := 0; ; round++ {
		await.True(t, 10*time.Second, "the node registered", func() bool { return n.lease.Load() != 0 && n.LeaseLive() })
		if _, err := n.PutState(ctx, "k", []byte("before"), StateAnyRevision); err != nil {
			t.Fatal(err)
		}
		old := n.lease.Load()
		if _, err := cli.Revoke(ctx, clientv3.LeaseID(old)); err != nil {
			t.Fatal(err)
		}
		if !n.LeaseLive() {
			t.Fatal("the node noticed the revoke by itself; the test cannot show the fence")
		}
		_, err := n.PutState(ctx, "k", []byte("after"), StateAnyRevision)
		if n.lease.Load() != old {
			if round > 3 {
				t.Fatal("the node registers again under every write")
			}
			continue // it registered again meanwhile: a fair write
		}
		if !errors.Is(err, ErrStateConflict) {
			t.Fatalf("write after the lease ended: %v, want a conflict", err)
		}
		break
	}
	if v, _, err := n.GetState(ctx, "k"); err != nil || string(v) != "before" {
		t.Fatalf("k is %q (%v) after a fenced write", v, err)
	}
}
