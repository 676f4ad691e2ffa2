package e2e

// Consumer-group offsets on the real Iggy server across a gateway that
// starts fresh (docs/CONSUMER_GROUPS.md, "the group log"): what a franz-go
// group committed, a commit of 0 and metadata included, is listed and read
// back exactly by a new gateway on the same streams, seen natively as Iggy
// consumer offsets, and honoured by a consumer with auto.offset.reset=latest.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge/iggy"
)

type wantOffset struct {
	offset int64
	epoch  int32
	meta   string
}

func TestIggyGroupOffsetsFreshGateway(t *testing.T) {
	t.Parallel()
	realServerTest(t)
	rb := realBackendFor(t)
	const topic, group, other = "orders", "grp-fresh", "grp-other"
	gw := startRealGateway(t, rb)
	clientWithTopic(t, gw.Addr, topic, 3)
	produceParts(t, gw.Addr, topic, 3, 10)

	// A live franz-go member consumes everything, then commits with its
	// generation: 0 on partition 0 (nothing consumed, as a reset to the
	// start leaves it), 4 with metadata and epoch on 1, 10 on 2.
	want := map[int32]wantOffset{0: {0, -1, "zero"}, 1: {4, 0, "four"}, 2: {10, -1, ""}}
	member := newClient(t, gw.Addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for n := 0; n < 30; {
		fs := member.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of 30 records before the timeout", n)
		}
		n += fs.NumRecords()
	}
	memberID, gen := member.GroupMetadata()
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = group, gen, memberID
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic, ct.TopicID = topic, topicIDOf(t, member, topic)
	for p := range int32(3) {
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		w := want[p]
		cp.Partition, cp.Offset, cp.LeaderEpoch = p, w.offset, w.epoch
		cp.Metadata = kmsg.StringPtr(w.meta)
		ct.Partitions = append(ct.Partitions, cp)
	}
	commit.Topics = append(commit.Topics, ct)
	resp, err := commit.RequestWith(ctx, member)
	if err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
	for _, rp := range resp.Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("OffsetCommit partition %d: code %d", rp.Partition, rp.ErrorCode)
		}
	}
	member.Close()
	// A second group commits through franz-go's own commit path.
	groupConsume(t, gw.Addr, other, topic, 30, map[int32]int64{0: 10, 1: 10, 2: 10}, kgo.Balancers(kgo.RangeBalancer()))
	stopGateway(t, gw)

	// A fresh gateway: nothing in its memory, everything from Iggy.
	gw = startRealGateway(t, rb)
	cl := newClient(t, gw.Addr)
	lg, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil || lg.ErrorCode != 0 {
		t.Fatalf("ListGroups: %v %+v", err, lg)
	}
	var names []string
	for _, g := range lg.Groups {
		names = append(names, g.Group)
		if g.GroupState != "Empty" || g.ProtocolType != "consumer" {
			t.Errorf("listed %+v, want Empty consumer", g)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{group, other}) {
		t.Fatalf("ListGroups after a fresh start: %q", names)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = group // Topics nil: every committed offset
	fr, err := fetch.RequestWith(ctx, cl)
	if err != nil || fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 3 {
		t.Fatalf("OffsetFetch: %v %+v", err, fr)
	}
	for _, fp := range fr.Topics[0].Partitions {
		w := want[fp.Partition]
		meta := ""
		if fp.Metadata != nil {
			meta = *fp.Metadata
		}
		if fp.ErrorCode != 0 || fp.Offset != w.offset || fp.LeaderEpoch != w.epoch || meta != w.meta {
			t.Errorf("partition %d read back offset %d epoch %d metadata %q code %d, committed %+v",
				fp.Partition, fp.Offset, fp.LeaderEpoch, meta, fp.ErrorCode, w)
		}
	}
	if off := committedOffset(t, gw.Addr, other, topic, 2); off != 10 {
		t.Errorf("%s partition 2: %d, want 10", other, off)
	}

	// Natively: Iggy's consumer offsets hold N-1; a commit of 0 has none.
	ic := dialIggy(ctx, t, rb.addr)
	for p, w := range want {
		pp := uint32(p)
		co, ok, err := ic.GetConsumerOffset(ctx, &iggy.OffsetRef{Consumer: iggy.PlainConsumer(iggy.Name(iggy.GroupConsumerName(group))),
			Stream: iggy.Name(rb.stream), Topic: iggy.Name(topic), Partition: &pp})
		switch {
		case err != nil:
			t.Fatalf("native offset %d: %v", p, err)
		case w.offset == 0 && ok:
			t.Errorf("native offset %d: %d stored for a commit of 0", p, co.StoredOffset)
		case w.offset > 0 && (!ok || int64(co.StoredOffset) != w.offset-1):
			t.Errorf("native offset %d: %d %v, want %d", p, co.StoredOffset, ok, w.offset-1)
		}
	}

	// kafka-consumer-groups sees the same (when the Java tools are here).
	t.Run("kafka-consumer-groups", func(t *testing.T) {
		list, errOut, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			"--bootstrap-server", gw.Addr, "--list")
		if err != nil || !slices.Equal(strings.Fields(list), []string{group, other}) && !slices.Equal(strings.Fields(list), []string{other, group}) {
			t.Fatalf("--list: %v\n%s\n%s", err, list, errOut)
		}
		out, errOut, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			"--bootstrap-server", gw.Addr, "--describe", "--group", group)
		if err != nil {
			t.Fatalf("--describe: %v\n%s\n%s", err, out, errOut)
		}
		for p, w := range want {
			if !describeRow(out, topic, fmt.Sprint(p), fmt.Sprint(w.offset), "10", fmt.Sprint(10-w.offset)) {
				t.Errorf("--describe, partition %d:\n%s", p, out)
			}
		}
	})

	// A consumer with auto.offset.reset=latest resumes at the committed
	// 0 of partition 0 instead of skipping to the end.
	first, _ := groupConsume(t, gw.Addr, group, topic, 16, nil, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if first[0] != 0 || first[1] != 4 {
		t.Fatalf("resumed at %v, want partition 0 at 0 and 1 at 4", first)
	}
}
