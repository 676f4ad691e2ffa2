package e2e

// Consumer groups (the classic protocol) with real clients: franz-go group
// consumers (range and cooperative-sticky) committing and resuming, also
// across a restart of the gateway binary, and the Java console consumer
// with Kafka's kafka-consumer-groups tool (docs/CONSUMER_GROUPS.md).
// `kcat -G` consumers are in groups_kcat_test.go.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
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

// The Java console consumer (classic protocol, auto commit) commits what it
// consumed and the next run of the group resumes there.
func TestGroupsJavaConsumerCommitResume(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	const topic, group = "g-java", "grp-java"
	clientWithTopic(t, gw.Addr, topic, 1)
	produceParts(t, gw.Addr, topic, 1, 30)
	run := func(n int, extra ...string) []string {
		args := append([]string{"--bootstrap-server", gw.Addr, "--topic", topic, "--group", group,
			"--max-messages", strconv.Itoa(n), "--timeout-ms", "30000",
			// One record per poll: the position (what is committed on
			// close) is then exactly what was printed.
			"--command-property", "max.poll.records=1"}, extra...)
		out, errOut, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", args...)
		if err != nil {
			t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, errOut)
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	got := run(10, "--from-beginning")
	if len(got) != 10 || got[0] != "p0-0" || got[9] != "p0-9" {
		t.Fatalf("first run: %q", got)
	}
	got = run(20)
	if len(got) != 20 || got[0] != "p0-10" || got[19] != "p0-29" {
		t.Fatalf("resumed run: %q", got)
	}

	// kafka-consumer-groups on the same group.
	tool := consumerGroupsTool(t, gw.Addr)
	if out := tool("--list"); !strings.Contains(out, group) {
		t.Fatalf("--list:\n%s", out)
	}
	// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
	out := tool("--describe", "--group", group)
	if !describeRow(out, topic, "0", "30", "30", "0") {
		t.Fatalf("--describe:\n%s", out)
	}
	if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Empty") {
		t.Fatalf("--state:\n%s", out)
	}
	out = tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	if !strings.Contains(out, topic) {
		t.Fatalf("--reset-offsets:\n%s", out)
	}
	// Reset to 0 reads back as 0 on every backend (on Iggy from the group
	// log, as the native offset cannot hold it).
	out = tool("--describe", "--group", group)
	if !describeRow(out, topic, "0", "0", "30", "30") {
		t.Fatalf("--describe after reset (lag 30):\n%s", out)
	}

	// A live member seen by --describe --members.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := newClient(t, gw.Addr, kgo.ConsumerGroup("grp-live"), kgo.ConsumeTopics(topic), kgo.ClientID("live-client"))
	go func() {
		for ctx.Err() == nil {
			live.PollFetches(ctx)
		}
	}()
	if err := await.Poll(60*time.Second, time.Second, func() error {
		out := tool("--describe", "--group", "grp-live", "--members")
		// The HOST column is the member's peer address, as on Kafka.
		if !strings.Contains(out, "live-client") || !strings.Contains(out, "/127.0.0.1") {
			return fmt.Errorf("--members:\n%s", out)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 60*time.Second, err)
	}
	// The first rebalance of a group waits out the initial delay (3s).
	if err := await.Poll(60*time.Second, time.Second, func() error {
		if out := tool("--describe", "--group", "grp-live", "--state"); !strings.Contains(out, "Stable") {
			return fmt.Errorf("--state of a live group:\n%s", out)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 60*time.Second, err)
	}

	out = tool("--delete", "--group", group)
	if !strings.Contains(out, "deleted") && !strings.Contains(out, "Deletion") {
		t.Fatalf("--delete:\n%s", out)
	}
	if out := tool("--list"); strings.Contains(out, group+"\n") || strings.HasSuffix(out, group) {
		t.Fatalf("--list after delete:\n%s", out)
	}
}
