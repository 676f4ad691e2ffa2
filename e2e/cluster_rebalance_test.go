package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// The coordinator of a group is killed while the group rebalances (a
// third member is joining): the members find the new coordinator, the
// group settles with every partition assigned once, and records produced
// afterwards are all consumed.
func TestClusterCoordinatorMovesDuringRebalance(t *testing.T) {
	t.Parallel()
	cg, ctx, cancel := newCluster(t, 3, 2*time.Minute)
	defer cancel()
	const topic, groupID = "cluster-rebalance", "cluster-moving-group"
	admin := cg.adminWithTopic(topic, kgo.SeedBrokers(cg.seeds()...))

	var mu sync.Mutex
	consumed := map[string]bool{}
	owned := map[int]map[int32]bool{} // member -> partitions assigned now
	member := func(i int) {
		cl := cg.client(kgo.ConsumerGroup(groupID),
			kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(300*time.Millisecond), kgo.SessionTimeout(6*time.Second),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				if owned[i] == nil {
					owned[i] = map[int32]bool{}
				}
				for _, p := range a[topic] {
					owned[i][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r[topic] {
					delete(owned[i], p)
				}
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range r[topic] {
					delete(owned[i], p)
				}
			}))
		go func() {
			for ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					consumed[string(r.Value)] = true
					mu.Unlock()
				})
			}
		}()
	}
	assignedOnce := func(members int) error {
		mu.Lock()
		defer mu.Unlock()
		count := map[int32]int{}
		with := 0
		for _, ps := range owned {
			if len(ps) > 0 {
				with++
			}
			for p := range ps {
				count[p]++
			}
		}
		if with != members {
			return fmt.Errorf("%d members hold partitions, want %d: %v", with, members, owned)
		}
		for p := int32(0); p < 12; p++ {
			if count[p] != 1 {
				return fmt.Errorf("partition %d held by %d members: %v", p, count[p], owned)
			}
		}
		return nil
	}
	member(0)
	member(1)
	await.Until(t, time.Minute, func() error { return assignedOnce(2) })

	// Who coordinates the group now: kill it as a third member joins.
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = groupID
	fc, err := req.RequestWith(ctx, admin)
	if err != nil || fc.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %v", err, fc)
	}
	member(2)
	// A moment for the third member's join to reach the coordinator (no
	// client event tells), so the kill falls in the rebalance.
	time.Sleep(100 * time.Millisecond)
	cg.procs[int(fc.NodeID)].Kill()

	// The survivors do not refuse the group: within the TTL it moves.
	await.Until(t, time.Minute, func() error { return assignedOnce(3) })
	var recs []*kgo.Record
	for i := 0; i < 600; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("m%04d", i))})
	}
	prod := newClient(t, cg.procs[1].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if fc.NodeID == 1 {
		prod = newClient(t, cg.procs[2].Addr, kgo.SeedBrokers(cg.seeds()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	}
	produceAll(t, prod, recs)
	await.Until(t, time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if !consumed[string(r.Value)] {
				return fmt.Errorf("%s not consumed", r.Value)
			}
		}
		return nil
	})
}
