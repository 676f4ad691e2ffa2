package e2e

// The KIP-848 consumer protocol (group.protocol=consumer) with real
// clients: the Java 4.1 consumer (e2e/java/src/GroupMember.java) here and in
// consumer_protocol_migration_test.go, franz-go's next-gen group consumer in
// consumer_protocol_kgo_test.go.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/loop"
)

// withConsumerHeartbeat shortens the heartbeat interval the coordinator
// hands out, so reconciliation steps (one heartbeat each) take
// milliseconds rather than Kafka's 5 s.
func withConsumerHeartbeat(d time.Duration) gwOption {
	return func(h *handlers.Config, _ *loop.Config) { h.Groups.ConsumerHeartbeatInterval = d }
}

// withConsumerSession sets the consumer protocol's session timeout.
func withConsumerSession(d time.Duration) gwOption {
	return func(h *handlers.Config, _ *loop.Config) { h.Groups.ConsumerSessionTimeout = d }
}

// Java 4.1 consumers with group.protocol=consumer on 12 partitions: three
// members share them 4/4/4; one stops (its partitions go to the others)
// and comes back; a fourth joins (3 each); a static member restarted
// within its session gets exactly its partitions back; every record is
// consumed exactly once over all of it (each member commits after every
// poll, and the coordinator hands a partition on only after its owner
// released it). kafka-consumer-groups describes the group.
func TestConsumerProtocolJava(t *testing.T) {
	t.Parallel()
	needJava(t)
	src := javaSource(t, "java/src/GroupMember.java")
	// A 25 s session: the static member's restart fits in it, and its
	// place is freed soon after the last stop below.
	gw := startGateway(t, withConsumerHeartbeat(300*time.Millisecond), withConsumerSession(25*time.Second))
	const topic, group = "kip848-java", "kip848-java-grp"
	clientWithTopic(t, gw.Addr, topic, 12)
	var want []string
	want = append(want, produceTagged(t, gw.Addr, topic, "a", 12, 20)...)

	var all []*javaMember // every process started, for the record count
	start := func(name, instance string) *javaMember {
		m := &javaMember{name: name, p: javaStart(t, name, src, gw.Addr, group, topic, instance, "client.id="+name)}
		all = append(all, m)
		return m
	}
	// spread waits until the members own disjoint sets of the given sizes
	// covering all 12 partitions.
	spread := func(sizes []int, ms ...*javaMember) {
		t.Helper()
		await.Until(t, 2*time.Minute, func() error {
			got, total, err := ownedApart(ms)
			if err == nil && (!slices.Equal(got, sizes) || total != 12) {
				err = fmt.Errorf("owned counts %v, want %v", got, sizes)
			}
			return err
		})
	}
	consumed := func() {
		t.Helper()
		if err := await.Poll(2*time.Minute, 300*time.Millisecond, func() error { return allConsumed(all, want) }); err != nil {
			t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
		}
	}

	m1, m2, m3 := start("m1", "-"), start("m2", "-"), start("m3", "inst-3")
	spread([]int{4, 4, 4}, m1, m2, m3)
	consumed()

	tool := consumerGroupsTool(t, gw.Addr)
	// The committed offsets of a live consumer group, with lag 0.
	if err := await.Poll(time.Minute, time.Second, func() error {
		out := tool("--describe", "--group", group)
		for p := range 12 {
			if !describeRow(out, topic, strconv.Itoa(p), "20", "20", "0") {
				return fmt.Errorf("--describe lacks partition %d at 20/20:\n%s", p, out)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	if out := tool("--describe", "--group", group, "--members"); !strings.Contains(out, "m1") || !strings.Contains(out, "m3") {
		t.Fatalf("--describe --members:\n%s", out)
	}
	if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Stable") {
		t.Fatalf("--describe --state:\n%s", out)
	}
	if out := tool("--list", "--type", "consumer"); !strings.Contains(out, group) {
		t.Fatalf("--list --type consumer:\n%s", out)
	}

	// m2 stops: m1 and m3 take its partitions.
	m2.p.stop(t, time.Minute)
	spread([]int{6, 6}, m1, m3)
	want = append(want, produceTagged(t, gw.Addr, topic, "b", 12, 10)...)
	consumed()

	// m2 comes back, then a fourth member joins.
	m2 = start("m2-again", "-")
	spread([]int{4, 4, 4}, m1, m2, m3)
	m4 := start("m4", "-")
	spread([]int{3, 3, 3, 3}, m1, m2, m3, m4)
	want = append(want, produceTagged(t, gw.Addr, topic, "c", 12, 10)...)
	consumed()

	// The static member restarts within its session: its partitions wait
	// for it and come back to it, nobody else owns them in between.
	mine := m3.owned()
	seenBefore := map[*javaMember]int{m1: len(m1.ownedHistory()), m2: len(m2.ownedHistory()), m4: len(m4.ownedHistory())}
	m3.p.stop(t, time.Minute)
	want = append(want, produceTagged(t, gw.Addr, topic, "d", 12, 10)...)
	m3 = start("m3-again", "inst-3")
	await.Until(t, 2*time.Minute, func() error {
		if got := m3.owned(); !slices.Equal(got, mine) {
			return fmt.Errorf("restarted static member owns %v, had %v", got, mine)
		}
		return nil
	})
	for m, n := range seenBefore {
		for _, o := range m.ownedHistory()[n:] {
			for _, p := range o {
				if slices.Contains(mine, p) {
					t.Fatalf("%s took partition %d of the absent static member", m.name, p)
				}
			}
		}
	}
	consumed()

	for _, m := range []*javaMember{m1, m2, m3, m4} {
		m.p.stop(t, time.Minute)
	}
	for _, m := range all {
		if strings.Contains(m.p.out.String(), "COMMIT-FAILED") || strings.Contains(m.p.out.String(), "LOST") {
			t.Errorf("%s:\n%s", m.name, tail(m.p.out.String(), 20))
		}
	}
	n := recordCounts(all)
	for _, v := range want {
		if n[v] != 1 {
			t.Errorf("record %s consumed %d times", v, n[v])
		}
	}
	if len(n) != len(want) {
		t.Errorf("%d distinct records consumed, %d produced", len(n), len(want))
	}

	// The static member's place is kept until its session ends (as on
	// Kafka); then the group is Empty: offsets reset, group deleted.
	if err := await.Poll(time.Minute, time.Second, func() error {
		if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Empty") {
			return fmt.Errorf("--describe --state after every member stopped:\n%s", out)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	if out := tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"); !strings.Contains(out, topic) {
		t.Fatalf("--reset-offsets:\n%s", out)
	}
	if out := tool("--describe", "--group", group); !describeRow(out, topic, "0", "0", "50", "50") {
		t.Fatalf("--describe after the reset:\n%s", out)
	}
	if out := tool("--delete", "--group", group); !strings.Contains(out, "deleted") && !strings.Contains(out, "Deletion") {
		t.Fatalf("--delete:\n%s", out)
	}
	if out := tool("--list"); strings.Contains(out, group) {
		t.Fatalf("--list after --delete:\n%s", out)
	}
}
