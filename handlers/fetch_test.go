package handlers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func TestFetchErrors(t *testing.T) { eachFetchMode(t, testFetchErrors) }

func testFetchErrors(t *testing.T, mode func(*Config)) {
	g := newGateway(t, mode)
	createTopic(t, g, "f", 1)
	produceOne(t, g, produceReq(9, "f", 0, valueBatch(3)))

	req := fetchReq(12, "f", 0, 0)
	req.SessionID, req.SessionEpoch = 5, 1
	if resp := do(t, g, req).(*kmsg.FetchResponse); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Errorf("session: %d", resp.ErrorCode)
	}
	for _, tc := range []struct {
		name  string
		topic string
		part  int32
		off   int64
		code  int16
	}{
		{"past hwm", "f", 0, 4, kerr.OffsetOutOfRange.Code},
		{"negative", "f", 0, -1, kerr.OffsetOutOfRange.Code},
		{"unknown topic", "nope", 0, 0, kerr.UnknownTopicOrPartition.Code},
		{"bad name", "a b", 0, 0, kerr.UnknownTopicOrPartition.Code},
		{"partition range", "f", 1, 0, kerr.UnknownTopicOrPartition.Code},
	} {
		resp := do(t, g, fetchReq(12, tc.topic, tc.part, tc.off)).(*kmsg.FetchResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != tc.code {
			t.Errorf("%s: code %d want %d", tc.name, c, tc.code)
		}
	}
	// No topics at all (a session-less keep-alive): an empty answer.
	empty := fetchReq(12, "f", 0, 0)
	empty.Topics = nil
	if resp := do(t, g, empty).(*kmsg.FetchResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Errorf("no topics: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
	}
	// No auto-creation on Fetch.
	if topicExists(g, "nope") {
		t.Error("fetch created a topic")
	}
	// At the high watermark: no error, no records.
	resp := do(t, g, fetchReq(12, "f", 0, 3)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 {
		t.Errorf("at hwm: %+v", p)
	}
}

func TestFetchParks(t *testing.T) { eachFetchMode(t, testFetchParks) }

func testFetchParks(t *testing.T, mode func(*Config)) {
	g := newGateway(t, mode)
	createTopic(t, g, "p", 2)
	req := fetchReq(12, "p", 0, 0)
	p1 := req.Topics[0].Partitions[0]
	p1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	req.MinBytes, req.MaxWaitMillis = 1, 60_000

	c := newCall(g, 1, 12)
	before := time.Now()
	resp, err := run(t, c, req)
	if resp != nil || err != nil {
		t.Fatalf("no data: %v %v", resp, err)
	}
	w := c.Parked()
	if w == nil || len(w.Keys) != 2 || w.Keys[0] != (PartitionKey{"p", 0}) || w.Keys[1] != (PartitionKey{"p", 1}) {
		t.Fatalf("wait %+v", w)
	}
	// max_wait is capped at Cfg.MaxFetchWait (1s).
	if d := w.Until.Sub(before); d > 2*time.Second || d < 500*time.Millisecond {
		t.Fatalf("until in %v", d)
	}
	// A wake-up that finds nothing parks again, never past the first deadline.
	time.Sleep(5 * time.Millisecond)
	if resp, _ := run(t, c, req); resp != nil {
		t.Fatal("answered without data")
	}
	if w2 := c.Parked(); w2 == nil || w2.Until.After(w.Until) {
		t.Fatalf("re-park %+v after %v", w2, w.Until)
	}

	// Final answers, empty.
	c.Final = true
	resp, err = run(t, c, req)
	if err != nil || resp == nil || c.Parked() != nil {
		t.Fatalf("final: %v %v", resp, err)
	}
	for _, p := range resp.(*kmsg.FetchResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Errorf("final partition %+v", p)
		}
	}

	// Data present: answers at once.
	produceOne(t, g, produceReq(9, "p", 1, valueBatch(1)))
	c = newCall(g, 1, 12)
	resp, err = run(t, c, req)
	if err != nil || resp == nil || c.Parked() != nil {
		t.Fatalf("with data: %v %v", resp, err)
	}
	defer c.RunDeferred()
	if got := readRecords(t, resp.(*kmsg.FetchResponse).Topics[0].Partitions[1].RecordBatches); len(got) != 1 {
		t.Fatalf("%d records", len(got))
	}

	// max_wait 0 never parks; an errored partition never parks.
	req.MinBytes = 1 << 20
	req.MaxWaitMillis = 0
	c = newCall(g, 1, 12)
	if resp, _ := run(t, c, req); resp == nil {
		t.Fatal("max_wait 0 parked")
	}
	c.RunDeferred()
	bad := fetchReq(12, "nope", 0, 0)
	bad.MinBytes, bad.MaxWaitMillis = 1, 1000
	if resp, _ := run(t, newCall(g, 1, 12), bad); resp == nil {
		t.Fatal("errored partition parked")
	}
}

// KIP-74: the first partition with data returns a record even above the
// limits; later partitions do not overshoot; no offset is skipped.
func TestFetchLimits(t *testing.T) { eachFetchMode(t, testFetchLimits) }

func testFetchLimits(t *testing.T, mode func(*Config)) {
	g := newGateway(t, mode)
	produceBig(t, g, "l", 2, 3)
	// partition_max_bytes 100: one record from partition 0 (KIP-74), none
	// from partition 1 (the response already holds data and max_bytes 100).
	req := fetchReq(12, "l", 0, 0)
	req.MaxBytes = 100
	req.Topics[0].Partitions[0].PartitionMaxBytes = 100
	p1 := req.Topics[0].Partitions[0]
	p1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	resp := do(t, g, req).(*kmsg.FetchResponse)
	ps := resp.Topics[0].Partitions
	if got := readRecords(t, ps[0].RecordBatches); len(got) != 1 || got[0].offset != 0 {
		t.Fatalf("partition 0: %d records", len(got))
	}
	if len(ps[1].RecordBatches) != 0 || ps[1].ErrorCode != 0 || ps[1].HighWatermark != 3 {
		t.Fatalf("partition 1: %d bytes, code %d", len(ps[1].RecordBatches), ps[1].ErrorCode)
	}

	// Room for about two records per partition, 10000 per response.
	req.MaxBytes = 10000
	req.Topics[0].Partitions[0].PartitionMaxBytes = 9000
	req.Topics[0].Partitions[1].PartitionMaxBytes = 9000
	resp = do(t, g, req).(*kmsg.FetchResponse)
	ps = resp.Topics[0].Partitions
	n0 := readRecords(t, ps[0].RecordBatches)
	n1 := readRecords(t, ps[1].RecordBatches)
	if len(n0) != 2 || len(n1) != 0 {
		t.Fatalf("records %d + %d", len(n0), len(n1))
	}
	if total := len(ps[0].RecordBatches) + len(ps[1].RecordBatches); total > 10000 {
		t.Fatalf("response %d bytes over max_bytes", total)
	}
	for i, r := range n0 {
		if r.offset != int64(i) {
			t.Fatalf("offset %d at %d", r.offset, i)
		}
	}
}

// pollSpy records what Fetch asks the store for and how many stored bytes
// it is handed, to show the read is bounded before it happens.
// stateSpy gives a store TopicState (its Topic and a Partition per
// partition) and counts the calls, so the concurrent Fetch can be seen to
// take the partitions' states from it, as it does on Iggy.
type stateSpy struct {
	bridge.Backend
	topicStates, partitions atomic.Int32
}

func (s *stateSpy) Capabilities() bridge.Capabilities {
	caps := s.Backend.Capabilities()
	caps.TopicStateInOneCall = true
	return caps
}

func (s *stateSpy) TopicState(ctx context.Context, stream, topic string) (bridge.TopicInfo, []bridge.PartitionState, error) {
	s.topicStates.Add(1)
	ti, err := s.Backend.Topic(ctx, stream, topic)
	if err != nil {
		return ti, nil, err
	}
	states := make([]bridge.PartitionState, ti.Partitions)
	for p := range states {
		if states[p], err = s.Backend.Partition(ctx, stream, topic, int32(p)); err != nil {
			return ti, nil, err
		}
	}
	return ti, states, nil
}

func (s *stateSpy) Partition(ctx context.Context, stream, topic string, partition int32) (bridge.PartitionState, error) {
	s.partitions.Add(1)
	return s.Backend.Partition(ctx, stream, topic, partition)
}

type pollSpy struct {
	bridge.Backend
	mu     sync.Mutex
	asked  []int
	passed int
}

func (s *pollSpy) Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func([]byte) bool) error {
	s.mu.Lock()
	s.asked = append(s.asked, maxBytes)
	s.mu.Unlock()
	return s.Backend.Poll(ctx, stream, topic, partition, from, maxBytes, func(b []byte) bool {
		s.mu.Lock()
		s.passed += len(b)
		s.mu.Unlock()
		return fn(b)
	})
}

// Issue 10: max_bytes bounds the first partition too. max_bytes 1 with a
// 100 MB partition limit returns one record (KIP-74 lets only it over) and
// reads one stored batch, not the partition; several partitions share the
// response budget.
func TestFetchMaxBytesBoundsFirstPartition(t *testing.T) {
	eachFetchMode(t, testFetchMaxBytesBoundsFirstPartition)
}

func testFetchMaxBytesBoundsFirstPartition(t *testing.T, mode func(*Config)) {
	g := newGateway(t, mode)
	spy := &pollSpy{Backend: g.Store}
	g.Store = spy
	produceBig(t, g, "mb", 3, 20)
	req := fetchReq(12, "mb", 0, 0)
	req.MaxBytes = 1
	req.Topics[0].Partitions[0].PartitionMaxBytes = 100 << 20
	for p := int32(1); p < 3; p++ {
		rp := req.Topics[0].Partitions[0]
		rp.Partition = p
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	resp := do(t, g, req).(*kmsg.FetchResponse)
	ps := resp.Topics[0].Partitions
	if got := readRecords(t, ps[0].RecordBatches); len(got) != 1 || got[0].offset != 0 {
		t.Fatalf("max_bytes 1: partition 0 returned %d records, want exactly 1", len(got))
	}
	for p := 1; p < 3; p++ {
		if len(ps[p].RecordBatches) != 0 || ps[p].ErrorCode != 0 {
			t.Fatalf("max_bytes 1: partition %d returned %d bytes (code %d) after the first had data", p, len(ps[p].RecordBatches), ps[p].ErrorCode)
		}
	}
	// One stored batch is about 4 KB; reading the 80 KB partition would
	// mean the store read was not bounded before it happened.
	if spy.passed > 8000 {
		t.Fatalf("max_bytes 1: the store passed %d bytes", spy.passed)
	}
	for _, a := range spy.asked {
		if a > 1<<10 {
			t.Fatalf("max_bytes 1: the store was asked for %d bytes", a)
		}
	}

	// 30 KB for the response, 100 MB per partition: the first partition
	// fills it, the others get what is left (nothing over), and the whole
	// stays within max_bytes.
	req.MaxBytes = 30000
	resp = do(t, g, req).(*kmsg.FetchResponse)
	ps = resp.Topics[0].Partitions
	total, recs := 0, 0
	for p := range ps {
		total += len(ps[p].RecordBatches)
		recs += len(readRecords(t, ps[p].RecordBatches))
	}
	if total > 30000 || recs < 6 {
		t.Fatalf("max_bytes 30000: %d bytes, %d records", total, recs)
	}
	if n := len(readRecords(t, ps[0].RecordBatches)); n == 20 {
		t.Fatal("max_bytes 30000: the first partition returned all 20 records (80 KB)")
	}

	// partition_max_bytes 9000 with a 20000 budget: about two records from
	// each of the first two partitions, the third gets the rest, all under
	// the budget.
	req.MaxBytes = 20000
	for p := range req.Topics[0].Partitions {
		req.Topics[0].Partitions[p].PartitionMaxBytes = 9000
	}
	resp = do(t, g, req).(*kmsg.FetchResponse)
	ps = resp.Topics[0].Partitions
	total = 0
	for p := range ps {
		if len(ps[p].RecordBatches) > 9000 {
			t.Fatalf("partition %d: %d bytes over partition_max_bytes", p, len(ps[p].RecordBatches))
		}
		total += len(ps[p].RecordBatches)
	}
	if total > 20000 || len(readRecords(t, ps[1].RecordBatches)) == 0 {
		t.Fatalf("partition limits: %d bytes in all, partition 1 %d bytes", total, len(ps[1].RecordBatches))
	}
}

// The connection's room (Call.ReplyRoom, from the loop's outbound cap)
// cuts max_bytes further; with no room a Fetch returns no records, and
// parks like one short of min_bytes when it may wait.
func TestFetchReplyRoom(t *testing.T) { eachFetchMode(t, testFetchReplyRoom) }

func testFetchReplyRoom(t *testing.T, mode func(*Config)) {
	g := newGateway(t, mode)
	produceBig(t, g, "room", 1, 10)
	req := fetchReq(12, "room", 0, 0)
	req.MaxBytes = 1 << 20
	req.Topics[0].Partitions[0].PartitionMaxBytes = 1 << 20

	c := newCall(g, 1, 12)
	c.ReplyRoom = 10000
	resp := roundTrip(t, c, req).(*kmsg.FetchResponse)
	c.RunDeferred()
	if got := readRecords(t, resp.Topics[0].Partitions[0].RecordBatches); len(got) != 2 {
		t.Fatalf("room 10000: %d records of 4 KB, want 2", len(got))
	}

	c = newCall(g, 1, 12)
	c.ReplyRoom = -1
	resp = roundTrip(t, c, req).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if len(p.RecordBatches) != 0 || p.ErrorCode != 0 || p.HighWatermark != 10 {
		t.Fatalf("no room: %d bytes, code %d, high watermark %d", len(p.RecordBatches), p.ErrorCode, p.HighWatermark)
	}

	c = newCall(g, 1, 12)
	c.ReplyRoom = -1
	req.MinBytes, req.MaxWaitMillis = 1, 500
	if resp, _ := run(t, c, req); resp != nil || c.Parked() == nil {
		t.Fatal("no room with max_wait: answered instead of parking")
	}
}

// The record buffer goes back to the pool only when the loop runs the
// deferred functions.
func TestFetchDefersRelease(t *testing.T) { eachFetchMode(t, testFetchDefersRelease) }

func testFetchDefersRelease(t *testing.T, mode func(*Config)) {
	g := newGateway(t, mode)
	produceOne(t, g, produceReq(9, "r", 0, valueBatch(2)))
	c := newCall(g, 1, 12)
	resp := roundTrip(t, c, fetchReq(12, "r", 0, 0)).(*kmsg.FetchResponse)
	if len(c.done) != 1 {
		t.Fatalf("%d deferred functions", len(c.done))
	}
	before := append([]byte(nil), resp.Topics[0].Partitions[0].RecordBatches...)
	if len(readRecords(t, before)) != 2 {
		t.Fatal("records")
	}
	c.RunDeferred()
	if len(c.done) != 0 {
		t.Fatal("deferred not cleared")
	}
	// An empty answer defers nothing.
	c = newCall(g, 1, 12)
	roundTrip(t, c, fetchReq(12, "r", 0, 2))
	if len(c.done) != 0 {
		t.Fatalf("empty fetch deferred %d", len(c.done))
	}
}

// produceBig creates topic with parts partitions and produces n records of
// 4000 bytes to each, one batch each, partition by partition in turn.
func produceBig(tb testing.TB, g *Gateway, topic string, parts int32, n int) {
	tb.Helper()
	createTopic(tb, g, topic, parts)
	big := make([]byte, 4000)
	for i := 0; i < n; i++ {
		for p := range parts {
			produceOne(tb, g, produceReq(9, topic, p, batch(rec{value: big})))
		}
	}
}

// eachFetchMode runs a Fetch test with the partitions read one after
// another and with them read at once (fetch_pipeline.go): both paths
// must give the same answers.
func eachFetchMode(t *testing.T, fn func(t *testing.T, mode func(*Config))) {
	t.Run("sequential", func(t *testing.T) { fn(t, func(c *Config) { c.FetchConcurrency = 1 }) })
	t.Run("concurrent", func(t *testing.T) { fn(t, func(c *Config) { c.FetchConcurrency = 8 }) })
}

// The concurrent path answers a request mixing data, an empty partition,
// an unknown partition, an offset out of range and an unknown topic
// exactly as the sequential path does.
func TestFetchModesAgree(t *testing.T) {
	answer := func(mode func(*Config), wrap ...func(*Gateway)) []string {
		g := newGateway(t, mode)
		createTopic(t, g, "ag", 4)
		for i := 0; i < 5; i++ {
			for p := int32(0); p < 3; p++ {
				produceOne(t, g, produceReq(9, "ag", p, batch(rec{value: fmt.Appendf(nil, "p%d-%d", p, i)}, rec{value: []byte("x")})))
			}
		}
		for _, w := range wrap {
			w(g)
		}
		req := fetchReq(12, "ag", 0, 2)
		req.MaxBytes = 1 << 20
		add := func(topic string, p int32, off int64) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<16
			for i := range req.Topics {
				if req.Topics[i].Topic == topic {
					req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
					return
				}
			}
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[0].Partitions[0].PartitionMaxBytes = 1 << 16
		add("ag", 1, 0)
		add("ag", 2, 10) // the high watermark: no records, no error
		add("ag", 3, 0)  // empty partition
		add("ag", 7, 0)  // no such partition
		add("ag", 1, 99) // out of range
		add("nope", 0, 0)
		resp := do(t, g, req).(*kmsg.FetchResponse)
		var out []string
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				line := fmt.Sprintf("%s/%d code=%d hwm=%d lso=%d start=%d", rt.Topic, p.Partition, p.ErrorCode, p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
				for _, r := range readRecords(t, p.RecordBatches) {
					line += fmt.Sprintf(" %d:%s", r.offset, r.value)
				}
				out = append(out, line)
			}
		}
		return out
	}
	seq := answer(func(c *Config) { c.FetchConcurrency = 1 })
	con := answer(func(c *Config) { c.FetchConcurrency = 8 })
	if !slices.Equal(seq, con) {
		t.Fatalf("the paths disagree:\nsequential %q\nconcurrent %q", seq, con)
	}
	// With a store that reads a topic's partition states in one call (as
	// Iggy's does): the same answer, one TopicState per topic and no
	// Partition call.
	var spy *stateSpy
	batched := answer(func(c *Config) { c.FetchConcurrency = 8 }, func(g *Gateway) {
		spy = &stateSpy{Backend: g.Store}
		g.Store = spy
	})
	if !slices.Equal(seq, batched) {
		t.Fatalf("the paths disagree:\nsequential %q\nbatched    %q", seq, batched)
	}
	if ts, ps := spy.topicStates.Load(), spy.partitions.Load(); ts != 2 || ps != 0 {
		t.Fatalf("TopicState called %d times (want 2: ag and nope), Partition %d (want 0)", ts, ps)
	}
	if len(seq) != 7 || !strings.Contains(seq[0], " 2:p0-1") || !strings.Contains(seq[1], " 0:p1-0") {
		t.Fatalf("unexpected answer %q", seq)
	}
}

// Fetch asks the store for about what the Kafka budget needs once it has
// seen a partition's records: for 1 KiB records, not twice the budget.
func TestFetchAsksStoreForLearnedRatio(t *testing.T) {
	g := newGateway(t)
	spy := &pollSpy{Backend: g.Store}
	g.Store = spy
	createTopic(t, g, "ratio", 1)
	val := make([]byte, 1024)
	for i := 0; i < 200; i++ {
		produceOne(t, g, produceReq(9, "ratio", 0, batch(rec{value: val}, rec{value: val})))
	}
	const budget = 64 << 10
	var next int64
	for i := 0; i < 3; i++ {
		req := fetchReq(12, "ratio", 0, next)
		req.MaxBytes = 1 << 20
		req.Topics[0].Partitions[0].PartitionMaxBytes = budget
		resp := do(t, g, req).(*kmsg.FetchResponse)
		recs := readRecords(t, resp.Topics[0].Partitions[0].RecordBatches)
		if len(recs) == 0 {
			t.Fatalf("fetch %d: no records", i)
		}
		next = recs[len(recs)-1].offset + 1
	}
	if first := spy.asked[0]; first < 2*budget {
		t.Fatalf("first fetch asked for %d, want the default 2x (%d)", first, 2*budget)
	}
	if last := spy.asked[len(spy.asked)-1]; last > budget*5/4 {
		t.Fatalf("after learning, fetch asked the store for %d bytes for a %d-byte budget", last, budget)
	}
}
