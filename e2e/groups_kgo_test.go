package e2e

// Consumer groups (the classic protocol) with real clients: franz-go group
// consumers (range and cooperative-sticky) committing and resuming, also
// across a restart of the gateway binary. `kcat -G` consumers are in
// groups_kcat_test.go, the Java console consumer and Kafka's
// kafka-consumer-groups tool (docs/CONSUMER_GROUPS.md) in groups_java_test.go.

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

func TestGroupsFranzGoCommitResume(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	for _, bal := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
		t.Run(bal.name, func(t *testing.T) {
			topic, group := "g-kgo-"+bal.name, "grp-kgo-"+bal.name
			clientWithTopic(t, gw.Addr, topic, 3)
			produceParts(t, gw.Addr, topic, 3, 10)
			first, n := groupConsume(t, gw.Addr, group, topic, 30, map[int32]int64{0: 4, 1: 5, 2: 6}, kgo.Balancers(bal.b))
			if n != 30 || first[0] != 0 || first[1] != 0 || first[2] != 0 {
				t.Fatalf("first run: %d records, first offsets %v", n, first)
			}
			first, n = groupConsume(t, gw.Addr, group, topic, 30-15, nil, kgo.Balancers(bal.b))
			if first[0] != 4 || first[1] != 5 || first[2] != 6 {
				t.Fatalf("resumed at %v, want 4/5/6 (%d records)", first, n)
			}
		})
	}
}

// Two franz-go members of one group split the partitions between them.
func TestGroupsFranzGoSplit(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	const topic, group = "g-split", "grp-split"
	clientWithTopic(t, gw.Addr, topic, 4)
	var mu sync.Mutex
	assigned := map[string][]int32{}
	member := func(name string) *kgo.Client {
		return newClient(t, gw.Addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.RangeBalancer()), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				assigned[name] = append([]int32(nil), m[topic]...)
				mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				assigned[name] = nil
				mu.Unlock()
			}))
	}
	poll := func(ctx context.Context, cl *kgo.Client) {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := member("a"), member("b")
	go poll(ctx, a)
	go poll(ctx, b)
	await.Until(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(assigned["a"]) != 2 || len(assigned["b"]) != 2 {
			return fmt.Errorf("assignments %v", assigned)
		}
		all := append(append([]int32(nil), assigned["a"]...), assigned["b"]...)
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		if fmt.Sprint(all) != "[0 1 2 3]" {
			return fmt.Errorf("assignments %v", assigned)
		}
		return nil
	})
}

// Committed offsets survive a restart of the gateway binary; membership
// does not, and the member rejoins.
func TestGroupsFranzGoAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := spawnGateway(t, dir, "--auto-create-topics=true")
	const topic, group = "g-restart", "grp-restart"
	clientWithTopic(t, p.Addr, topic, 2)
	produceParts(t, p.Addr, topic, 2, 10)
	groupConsume(t, p.Addr, group, topic, 20, map[int32]int64{0: 3, 1: 7}, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	p.Stop()
	p = spawnGateway(t, dir, "--auto-create-topics=true")
	first, _ := groupConsume(t, p.Addr, group, topic, 10, nil, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	if first[0] != 3 || first[1] != 7 {
		t.Fatalf("after restart resumed at %v, want 3/7", first)
	}
}
