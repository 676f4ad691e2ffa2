package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/cluster/clustertest"
)

// A member whose acknowledgement of a new view did not reach etcd (a
// timeout, etcd restarting) settles anyway on the others' acknowledgements
// and its own local one; the others wait for its acknowledgement in etcd.
// It must send it again with a later renewal, or the partitions and groups
// the others gained answer NOT_LEADER_OR_FOLLOWER and
// COORDINATOR_LOAD_IN_PROGRESS until the next membership change.
func TestLostAckIsSentAgain(t *testing.T) {
	et := clustertest.StartEtcd(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var failAcks atomic.Bool
	start := func(id int32, fault func() error) *Node {
		n, err := Start(context.Background(), Options{Endpoints: []string{et.Endpoint}, Prefix: "/lostack/",
			Self: Member{ID: id}, TTL: 2 * time.Second, Log: log, ackFault: fault}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not within 15s: %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
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
	waitFor("a and b settled", settledOn(2, a, b))

	// c joins while b's acknowledgements are lost: b settles on a's and
	// c's, a and c cannot.
	failAcks.Store(true)
	c := start(3, nil)
	waitFor("b settled on the three", settledOn(3, b))
	if a.Settled() || c.Settled() {
		t.Fatalf("a (%v) or c (%v) settled without b's acknowledgement in etcd", a.Settled(), c.Settled())
	}
	// etcd answers b again: its next renewal sends the acknowledgement.
	failAcks.Store(false)
	waitFor("a, b and c settled on the three", settledOn(3, a, b, c))
}

// Listing the members again after a watch failure never takes the epoch
// back: when the view came from a deletion (a member left), the live keys
// are all older than it, and a reload of the same members keeps the view.
func TestReloadKeepsTheEpoch(t *testing.T) {
	et := clustertest.StartEtcd(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(id int32) *Node {
		n, err := Start(context.Background(), Options{Endpoints: []string{et.Endpoint}, Prefix: "/reload/",
			Self: Member{ID: id}, TTL: 2 * time.Second, Log: log}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := start(1), start(2)
	t.Cleanup(a.Close)
	deadline := time.Now().Add(15 * time.Second)
	for len(a.View().Members) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("a never saw b")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close() // its key is deleted: a's view comes from the deletion
	for len(a.View().Members) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a never saw b leave")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := a.View()
	if _, err := a.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := a.View(); after.Rev < before.Rev {
		t.Fatalf("the epoch went back from %d to %d on a reload of the same members", before.Rev, after.Rev)
	}
}
