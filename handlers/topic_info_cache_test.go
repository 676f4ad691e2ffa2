package handlers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// topicReads counts the Topic calls that reach the store under it.
type topicReads struct {
	bridge.Backend
	n atomic.Int64
}

func (s *topicReads) Topic(ctx context.Context, stream, topic string) (bridge.TopicInfo, error) {
	s.n.Add(1)
	return s.Backend.Topic(ctx, stream, topic)
}

// TestProduceReadsTopicOncePerAge: over the real Iggy server a Produce
// reads the topic's header once, then only sends; and the cached header
// never answers wrong: a partition added, or the topic deleted, by
// someone other than this gateway (here straight through the store) is
// seen by the very next Produce or the one after it, not after the cache's
// age.
func TestProduceReadsTopicOncePerAge(t *testing.T) {
	t.Parallel()
	g := guardedGateway(t, "iggy-server")
	g.topicInfos.maxAge = time.Hour // nothing ages out during the test
	reads := &topicReads{Backend: g.Store}
	g.Store = reads
	ctx := context.Background()
	createTopic(t, g, "cached", 1)
	produce := func(p int32) int16 {
		t.Helper()
		return produceOne(t, g, produceReq(9, "cached", p, valueBatch(3))).ErrorCode
	}
	for i := range 10 {
		if code := produce(0); code != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	if n := reads.n.Load(); n != 1 {
		t.Fatalf("10 produces read the topic %d times, want 1", n)
	}

	if _, err := g.Store.GrowPartitions(ctx, g.Cfg.Stream, "cached", 3); err != nil {
		t.Fatal(err)
	}
	if code := produce(2); code != 0 {
		t.Fatalf("produce to a partition added behind the gateway's back: %v", kerr.ErrorForCode(code))
	}

	if err := g.Store.DeleteTopic(ctx, g.Cfg.Stream, "cached"); err != nil {
		t.Fatal(err)
	}
	if code := produce(0); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to a topic deleted behind the gateway's back: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	if code := produce(0); code != 0 { // read again, not found, auto-created
		t.Fatalf("produce after that: %v", kerr.ErrorForCode(code))
	}
	if _, err := g.Store.Topic(ctx, g.Cfg.Stream, "cached"); err != nil {
		t.Fatalf("the topic was not made again: %v", err)
	}
}
