package handlers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// stateReads counts the TopicState calls that reach the store under it.
// With logStart set it also plays a store whose log starts there (as after
// the server's retention removed older segments): states report it, and
// polls from below it return records from it.
type stateReads struct {
	bridge.Backend
	n        atomic.Int64
	logStart atomic.Uint64
}

func (s *stateReads) TopicState(ctx context.Context, stream, topic string) (bridge.TopicInfo, []bridge.PartitionState, error) {
	s.n.Add(1)
	ti, states, err := s.Backend.TopicState(ctx, stream, topic)
	for i := range states {
		states[i].Earliest = min(max(states[i].Earliest, s.logStart.Load()), states[i].Next)
	}
	return ti, states, err
}

func (s *stateReads) Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func(batch []byte) bool) error {
	return s.Backend.Poll(ctx, stream, topic, partition, max(from, s.logStart.Load()), maxBytes, fn)
}

// TestFetchReadsStateOncePerAge: over the real Iggy server, Fetches that
// find records read the topic's state once, then only poll; and the
// cached state never answers wrong. The high watermark follows this
// gateway's appends; a Fetch that finds nothing, a partition added behind
// the gateway's back, a log start moved (by this gateway, or behind its
// back below polled records) and a topic deleted behind its back are each
// answered from the store's state by the very next Fetch, or, for records
// the tail cache holds, once the state ages out. With the tail cache off
// (every record polled) and on.
func TestFetchReadsStateOncePerAge(t *testing.T) {
	t.Parallel()
	for _, tail := range []int64{0, 1 << 20} {
		name := "tail-cache-off"
		if tail > 0 {
			name = "tail-cache-on"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fetchStateOncePerAge(t, tail)
		})
	}
}

func fetchStateOncePerAge(t *testing.T, tail int64) {
	g := guardedGateway(t, "iggy-server", func(c *Config) { c.FetchConcurrency, c.TailCacheBytes = 8, tail })
	if !g.fetchStates.on {
		t.Fatal("the state cache is off over the Iggy server")
	}
	g.fetchStates.maxAge = time.Hour // nothing ages out during the test
	reads := &stateReads{Backend: g.Store}
	g.Store = reads
	ctx := context.Background()
	const topic = "fstate"
	createTopic(t, g, topic, 1)
	produce := func(n int) {
		t.Helper()
		if code := produceOne(t, g, produceReq(9, topic, 0, valueBatch(n))).ErrorCode; code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	// fetch returns partition p's answer from offset from and how many
	// records at or past from it holds (a cached batch may begin before).
	fetch := func(p int32, from int64, maxBytes int32) (kmsg.FetchResponseTopicPartition, int) {
		t.Helper()
		req := fetchReq(12, topic, p, from)
		req.Topics[0].Partitions[0].PartitionMaxBytes = maxBytes
		resp := do(t, g, req).(*kmsg.FetchResponse)
		sp := resp.Topics[0].Partitions[0]
		n := 0
		for _, r := range readRecords(t, sp.RecordBatches) {
			if r.offset >= from {
				n++
			}
		}
		return sp, n
	}
	expect := func(what string, p int32, from int64, maxBytes int32, code int16, hwm, logStart int64, records int) {
		t.Helper()
		sp, got := fetch(p, from, maxBytes)
		if sp.ErrorCode != code || sp.HighWatermark != hwm || sp.LogStartOffset != logStart || got != records {
			t.Fatalf("%s: code %v, high watermark %d, log start %d, %d records; want %v, %d, %d, %d", what,
				kerr.ErrorForCode(sp.ErrorCode), sp.HighWatermark, sp.LogStartOffset, got, kerr.ErrorForCode(code), hwm, logStart, records)
		}
	}
	reads0 := func(what string, want int64) {
		t.Helper()
		if n := reads.n.Load(); n != want {
			t.Fatalf("%s: the topic's state was read %d times, want %d", what, n, want)
		}
	}

	produce(3)
	for range 10 {
		expect("fetch from 0", 0, 0, 1<<20, 0, 3, 0, 3)
	}
	reads0("10 fetches that found records", 1)

	// A 1-byte budget returns one record: the high watermark is the
	// state's, raised by the append of this gateway.
	produce(3)
	expect("fetch of one record after an append", 0, 0, 1, 0, 6, 0, 1)
	reads0("after an append", 1)

	expect("fetch at the end", 0, 6, 1<<20, 0, 6, 0, 0)
	reads0("a fetch that found nothing", 2)

	if _, err := g.Store.GrowPartitions(ctx, g.Cfg.Stream, topic, 2); err != nil {
		t.Fatal(err)
	}
	if code := produceOne(t, g, produceReq(9, topic, 1, valueBatch(3))).ErrorCode; code != 0 {
		t.Fatalf("produce to the new partition: %v", kerr.ErrorForCode(code))
	}
	expect("fetch of a partition added behind the gateway's back", 1, 0, 1<<20, 0, 3, 0, 3)

	// A log start moved by this gateway forgets the state at once.
	expect("fetch before DeleteRecords", 0, 0, 1<<20, 0, 6, 0, 6)
	n := reads.n.Load()
	dr := do(t, g, deleteRecordsReq(2, topic, map[int32]int64{0: 2})).(*kmsg.DeleteRecordsResponse)
	if code := dr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteRecords: %v", kerr.ErrorForCode(code))
	}
	expect("fetch below the log start DeleteRecords moved", 0, 0, 1<<20, kerr.OffsetOutOfRange.Code, 6, 2, 0)
	reads0("after DeleteRecords", n+1)

	// One moved behind its back (the server's retention): polled records
	// start past the fetch offset, so the state is read. (Records the
	// tail cache still holds are served for up to the state's age, as a
	// Kafka broker serves a segment until its retention check runs.)
	expect("fetch from the log start", 0, 2, 1<<20, 0, 6, 2, 4)
	if tail == 0 {
		n = reads.n.Load()
		reads.logStart.Store(4)
		expect("fetch below a log start moved behind the gateway's back", 0, 2, 1<<20, kerr.OffsetOutOfRange.Code, 6, 4, 0)
		reads0("after the log start moved behind the gateway's back", n+1)
	}

	if err := g.Store.DeleteTopic(ctx, g.Cfg.Stream, topic); err != nil {
		t.Fatal(err)
	}
	if tail > 0 {
		// Records the tail cache holds answer for the cached state until
		// it ages out, as a Produce's cached header does (at most a second
		// late for a delete behind the gateway's back).
		sp, _ := fetch(0, 4, 1<<20)
		if sp.ErrorCode != 0 {
			t.Fatalf("fetch from the tail cache within the state's age: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
		g.fetchStates.maxAge = time.Nanosecond
	}
	sp, _ := fetch(0, 4, 1<<20)
	if sp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("fetch of a topic deleted behind the gateway's back: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(sp.ErrorCode))
	}
}
