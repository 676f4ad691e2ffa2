package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// Online migration (Kafka 4's BIDIRECTIONAL policy): a classic group of
// two Java consumers is restarted one member at a time with
// group.protocol=consumer. The first consumer-protocol member upgrades the
// live group (the remaining classic member keeps consuming as a classic
// member of a consumer group), the second replaces the last classic one;
// then one classic member comes back and the consumer-protocol members
// stop, which downgrades the group to classic again. Committed offsets carry
// over every step, partitions never have two owners, and every record is
// consumed exactly once (members commit after each poll).
func TestConsumerProtocolJavaOnlineMigration(t *testing.T) {
	t.Parallel()
	needJava(t)
	src := javaSource(t, "java/src/GroupMember.java")
	gw := startGateway(t, withConsumerHeartbeat(300*time.Millisecond))
	const topic, group = "kip848-migrate", "kip848-migrate-grp"
	clientWithTopic(t, gw.Addr, topic, 6)
	var all []*javaMember
	start := func(name string, extra ...string) *javaMember {
		args := append([]string{gw.Addr, group, topic, "-", "client.id=" + name}, extra...)
		m := &javaMember{name: name, p: javaStart(t, name, src, args...)}
		all = append(all, m)
		return m
	}
	var want []string
	consumed := func() {
		t.Helper()
		if err := await.Poll(2*time.Minute, 300*time.Millisecond, func() error { return allConsumed(all, want) }); err != nil {
			t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
		}
	}
	// covered waits until the members own the 6 partitions between them,
	// each some, none twice.
	covered := func(ms ...*javaMember) {
		t.Helper()
		await.Until(t, 2*time.Minute, func() error {
			sizes, total, err := ownedApart(ms)
			if err != nil {
				return err
			}
			for i, n := range sizes {
				if n == 0 {
					return fmt.Errorf("%s owns nothing", ms[i].name)
				}
			}
			if total != 6 {
				return fmt.Errorf("%d of 6 partitions owned", total)
			}
			return nil
		})
	}
	classic := "group.protocol=classic"
	admin := newClient(t, gw.Addr)
	// groupType is the group's GroupType in ListGroups v5 and, for a
	// consumer group, its member types (0 classic, 1 consumer).
	groupType := func() (string, []int8) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		lr, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		gt := ""
		for _, g := range lr.Groups {
			if g.Group == group {
				gt = g.GroupType
			}
		}
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		dr, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		var types []int8
		for _, m := range dr.Groups[0].Members {
			types = append(types, m.MemberType)
		}
		slices.Sort(types)
		return gt, types
	}

	want = append(want, produceTagged(t, gw.Addr, topic, "a", 6, 10)...)
	c1, c2 := start("c1", classic), start("c2", classic)
	covered(c1, c2)
	consumed()

	// c1 comes back speaking the consumer protocol: the live group is
	// upgraded, c2 stays a classic member of it.
	c1.p.stop(t, time.Minute)
	n1 := start("n1")
	covered(n1, c2)
	if gt, types := groupType(); gt != "consumer" || !slices.Equal(types, []int8{0, 1}) {
		t.Fatalf("after the upgrade: group type %q, member types %v", gt, types)
	}
	want = append(want, produceTagged(t, gw.Addr, topic, "b", 6, 10)...)
	consumed()

	// c2 too: only consumer-protocol members left.
	c2.p.stop(t, time.Minute)
	n2 := start("n2")
	covered(n1, n2)
	want = append(want, produceTagged(t, gw.Addr, topic, "c", 6, 10)...)
	consumed()

	// And back: a classic member joins the consumer group, then the
	// consumer-protocol members stop, which makes the group classic again.
	c3 := start("c3", classic)
	covered(n1, n2, c3)
	n1.p.stop(t, time.Minute)
	n2.p.stop(t, time.Minute)
	covered(c3)
	if gt, _ := groupType(); gt != "classic" {
		t.Fatalf("after the consumer-protocol members left: group type %q", gt)
	}
	want = append(want, produceTagged(t, gw.Addr, topic, "d", 6, 10)...)
	consumed()
	c3.p.stop(t, time.Minute)

	n := recordCounts(all)
	for _, v := range want {
		if n[v] != 1 {
			t.Errorf("record %s consumed %d times", v, n[v])
		}
	}
}
