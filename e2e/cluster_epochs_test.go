package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// A franz-go consumer reads a topic while a third gateway joins: the
// view's epoch, every partition's leader epoch, grows and some partitions
// move to the new gateway. The consumer validates its positions with
// OffsetForLeaderEpoch against the leaders of the new epoch (KIP-320) and
// reads on: every acknowledged record exactly once, each partition's
// offsets in order with no gap or repeat (no reset, no data loss).
func TestClusterConsumerValidatesAcrossEpochChange(t *testing.T) {
	t.Parallel()
	cg, ctx, cancel := newCluster(t, 2, 3*time.Minute)
	defer cancel()
	const topic = "cluster-epochs"
	admin := cg.adminWithTopic(topic, kgo.SeedBrokers(cg.seeds()...))
	cg.waitBrokers(ctx, admin, 2)
	epochBefore := leaderEpochOf(ctx, t, admin, topic)

	var hooks epochRequests
	// The consumer's goroutine ends before the test does (the cleanup).
	cons := cg.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(300*time.Millisecond), kgo.MetadataMinAge(250*time.Millisecond), kgo.MetadataMaxAge(2*time.Second),
		kgo.WithHooks(&hooks))
	var mu sync.Mutex
	seen := map[string]int{}
	offsets := map[int32][]int64{}
	var losses []error
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				var loss *kgo.ErrDataLoss
				if errors.As(err, &loss) {
					losses = append(losses, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				seen[string(r.Value)]++
				offsets[r.Partition] = append(offsets[r.Partition], r.Offset)
			})
			mu.Unlock()
		}
	}()
	consumed := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}

	prod := cg.startProducer(ctx, t, topic, "e")
	await.True(t, time.Minute, "records consumed before the join", func() bool { return consumed() > 300 })
	cg.start(3)
	cg.waitBrokers(ctx, admin, 3)
	if after := leaderEpochOf(ctx, t, admin, topic); after <= epochBefore {
		t.Fatalf("leader epoch %d after the join, %d before", after, epochBefore)
	}
	// Records keep flowing through the new epoch until the consumer has
	// validated against it.
	await.True(t, time.Minute, "an OffsetForLeaderEpoch answer", func() bool { return hooks.n.Load() > 0 })
	mark := prod.ackedNow()
	await.True(t, time.Minute, "records acknowledged after the validation", func() bool { return prod.ackedNow() > mark+300 })
	prod.finish(ctx, t)
	if len(prod.failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(prod.failed), prod.failed[0])
	}
	acked := prod.values()
	await.Until(t, time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range acked {
			if seen[v] == 0 {
				return fmt.Errorf("%s not consumed (%d of %d)", v, len(seen), len(acked))
			}
		}
		return nil
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(losses) > 0 {
		t.Errorf("data loss reported: %v", losses)
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("%s consumed %d times", v, n)
		}
	}
	for p, offs := range offsets {
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d: offset %d at position %d of %v", p, o, i, offs)
			}
		}
	}
	t.Logf("%d records, %d OffsetForLeaderEpoch answers", len(acked), hooks.n.Load())
}

// leaderEpochOf is the leader epoch Metadata names for partition 0 of
// topic (the same for every partition: the view's).
func leaderEpochOf(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) int32 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata of %s: %v %+v", topic, err, resp)
	}
	return resp.Topics[0].Partitions[0].LeaderEpoch
}
