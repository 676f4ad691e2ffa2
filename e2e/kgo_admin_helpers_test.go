package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminCtx is a context for an admin request: 30 s, cancelled when the test
// ends.
func adminCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// partitionsOf reads a topic's partition count from Metadata, on a fresh
// client (franz-go answers a Metadata request from its own recent
// metadata, which may predate the change under test).
func partitionsOf(t *testing.T, addr string, topic string) int {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	td, err := adm.ListTopics(adminCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		t.Fatalf("metadata of %s: %+v", topic, d)
	}
	return len(d.Partitions)
}

// endOffset is partition 0's high watermark.
func endOffset(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	return partition0Offset(t, "end", topic, kadm.NewClient(cl).ListEndOffsets)
}

// startOffset is partition 0's log start offset.
func startOffset(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	return partition0Offset(t, "start", topic, kadm.NewClient(cl).ListStartOffsets)
}

// partition0Offset is the offset of partition 0 of topic that list
// answers; which names it for the failure message.
func partition0Offset(t *testing.T, which, topic string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) int64 {
	t.Helper()
	offs, err := list(adminCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("%s offset of %s: %v %v", which, topic, ok, o.Err)
	}
	return o.Offset
}

// topicConfig returns a topic config's value as DescribeConfigs answers it
// ("" when absent or null).
func topicConfig(t testing.TB, cl *kgo.Client, topic, key string) string {
	t.Helper()
	cfgs, err := kadm.NewClient(cl).DescribeTopicConfigs(adminCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// latestValues reads topic from its start to its current end and returns
// the last value seen per key.
func latestValues(t testing.TB, addr, topic string) (map[string]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := newClient(t, addr)
	defer admin.Close()
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]kgo.Offset{}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = kgo.NewOffset().AtStart()
			left[o.Partition] = o.Offset
		}
	})
	got := map[string]string{}
	if len(want) == 0 {
		return got, nil
	}
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s to its end: %w", topic, ctx.Err())
		}
		if err := fs.Err(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = string(r.Value)
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	return got, nil
}

// committedOffset reads group's committed offset of topic/partition with a
// raw OffsetFetch.
func committedOffset(t *testing.T, addr, group, topic string, partition int32) int64 {
	t.Helper()
	cl := newClient(t, addr)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	if resp.ErrorCode != 0 || len(resp.Groups) == 0 && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		t.Fatalf("OffsetFetch: %+v", resp)
	}
	if len(resp.Groups) > 0 {
		g := resp.Groups[0]
		if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetFetch: %+v", g)
		}
		return g.Topics[0].Partitions[0].Offset
	}
	return resp.Topics[0].Partitions[0].Offset
}

// groupConsume runs a franz-go group member of group on topic (reset to
// the start unless opts say otherwise; opts may pick the balancers too)
// until it has seen want records (or the timeout), then commits the
// offsets in commit (partition -> next offset) if any, and leaves. It
// returns the first offset it saw per partition and the number of records.
func groupConsume(t *testing.T, addr, group, topic string, want int, commit map[int32]int64, opts ...kgo.Opt) (map[int32]int64, int) {
	t.Helper()
	cl := newClient(t, addr, append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	first := map[int32]int64{}
	n := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("group %s: %d of %d records before the timeout", group, n, want)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
			n++
		})
	}
	if len(commit) > 0 {
		offs := map[string]map[int32]kgo.EpochOffset{topic: {}}
		for p, o := range commit {
			offs[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		var cerr error
		cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			cerr = err
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if rp.ErrorCode != 0 {
							cerr = fmt.Errorf("partition %d: code %d", rp.Partition, rp.ErrorCode)
						}
					}
				}
			}
		})
		if cerr != nil {
			t.Fatalf("commit: %v", cerr)
		}
	}
	cl.Close() // leaves the group
	return first, n
}
