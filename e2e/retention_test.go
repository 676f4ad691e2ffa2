package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// e2eRetentionCheck is the embedded store's sweeper period in the
// in-process gateways (openBackend), so retention shows within a second.
const e2eRetentionCheck = 100 * time.Millisecond

// retentionTopic creates topic on gw, one partition with the configs given
// as name, value pairs, through a franz-go client that sends each record at
// once; it returns that client, an admin client on it and a context that
// ends after timeout or with the test.
func retentionTopic(t *testing.T, gw *gateway, topic string, timeout time.Duration, configs ...string) (*kgo.Client, *kadm.Client, context.Context) {
	t.Helper()
	cl := newClient(t, gw.Addr, kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	cfg := map[string]*string{}
	for i := 0; i+1 < len(configs); i += 2 {
		cfg[configs[i]] = &configs[i+1]
	}
	if cr, err := adm.CreateTopic(ctx, 1, -1, cfg, topic); err != nil || cr.Err != nil {
		t.Fatalf("create: %v %v", err, cr.Err)
	}
	return cl, adm, ctx
}

// Retention on the embedded store, with franz-go: a topic created with
// retention.ms=2000 loses its old records (by record timestamp) at the next
// sweep, ListOffsets earliest moves to the first kept record, and group
// consumers whose committed offsets fell below it reset as their
// auto.offset.reset says: earliest to the new start, latest to the end.
// The kept records carry timestamps minutes ahead, so they cannot expire
// while the test runs, however slow the machine.
func TestRetentionTimeKgo(t *testing.T) {
	t.Parallel()
	if iggyBackend() {
		t.Skip("Iggy applies message_expiry itself, per sealed segment: TestRetentionIggyServer")
	}
	gw := startGateway(t)
	const topic = "ret-time"
	cl, adm, ctx := retentionTopic(t, gw, topic, 60*time.Second, "retention.ms", "2000")
	produce := func(tag string, n int, ts time.Time) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", tag, i), Timestamp: ts}
		}
		produceAll(t, cl, recs)
	}
	produce("old", 5, time.Now().Add(-time.Hour))          // offsets 0-4: expired at once
	produce("new", 5, time.Now().Add(10*time.Minute))      // offsets 5-9: kept
	for _, g := range []string{"g-earliest", "g-latest"} { // both behind the coming start
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2, LeaderEpoch: -1})
		if r, err := adm.CommitOffsets(ctx, g, os); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, r.Error())
		}
	}

	await.Until(t, 15*time.Second, func() error {
		lo, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		o, _ := lo.Lookup(topic, 0)
		if o.Err != nil || o.Offset != 5 {
			return fmt.Errorf("earliest %d (%v), want 5", o.Offset, o.Err)
		}
		return nil
	})
	if lo, err := adm.ListEndOffsets(ctx, topic); err != nil {
		t.Fatal(err)
	} else if o, _ := lo.Lookup(topic, 0); o.Offset != 10 {
		t.Fatalf("end offset %d, want 10", o.Offset)
	}

	first := func(group string, reset kgo.Offset) *kgo.Record {
		t.Helper()
		c := newClient(t, gw.Addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(reset), kgo.FetchMaxWait(500*time.Millisecond))
		defer c.Close()
		for ctx.Err() == nil {
			fs := c.PollFetches(ctx)
			for _, e := range fs.Errors() {
				t.Logf("%s: fetch error (retried): %v", group, e.Err)
			}
			if recs := fs.Records(); len(recs) > 0 {
				return recs[0]
			}
		}
		t.Fatalf("%s: nothing consumed: %v", group, ctx.Err())
		return nil
	}
	if r := first("g-earliest", kgo.NewOffset().AtStart()); r.Offset != 5 || string(r.Value) != "new-0" {
		t.Fatalf("earliest reset: first record %d %q, want 5 new-0", r.Offset, r.Value)
	}

	// latest: the consumer resets to the end, so it never sees the kept
	// records 5-9, only markers produced after its reset. Which marker
	// comes first depends on when the reset happens: produce one per
	// round until the consumer returns something.
	c := newClient(t, gw.Addr, kgo.ConsumerGroup("g-latest"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(200*time.Millisecond))
	for round := 0; ; round++ {
		if ctx.Err() != nil {
			t.Fatal("latest reset: nothing consumed")
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := c.PollFetches(pctx)
		pcancel()
		if recs := fs.Records(); len(recs) > 0 {
			if r := recs[0]; r.Offset < 10 || string(r.Value) != "marker-0" {
				t.Fatalf("latest reset: first record %d %q, want a marker past offset 9", r.Offset, r.Value)
			}
			break
		}
		produce("marker", 1, time.Now().Add(10*time.Minute))
	}
}

// Retention on the real Iggy server, with franz-go: a topic created with
// retention.ms=2000 and segment.bytes=1 MiB (Iggy's smallest segment) on
// a server whose cleaner runs every second (1 minute by default). Iggy
// deletes the sealed segments whose newest message (by append time) is
// past the expiry, the active one never; ListOffsets earliest follows
// what Iggy still has, and a group whose committed offset fell below it
// (a commit of 0: no Iggy consumer offset, which would hold the segments)
// resets to it, a partition consumer at 0 too.
func TestRetentionIggyServer(t *testing.T) {
	t.Parallel()
	gw, _ := privateIggyGateway(t, "IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=1s")
	const topic = "ret-iggy"
	cl, adm, ctx := retentionTopic(t, gw, topic, 90*time.Second, "retention.ms", "2000", "segment.bytes", "1048576")
	value := make([]byte, 1000)
	for round := 0; round < 7; round++ { // 3500 records of 1 KB: three sealed segments and more
		recs := make([]*kgo.Record, 500)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Value: value}
		}
		produceAll(t, cl, recs)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "g-behind", os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	var start int64
	await.Until(t, 40*time.Second, func() error {
		lo, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		o, _ := lo.Lookup(topic, 0)
		if o.Err != nil || o.Offset <= 0 {
			return fmt.Errorf("earliest %d (%v), want past 0", o.Offset, o.Err)
		}
		start = o.Offset
		return nil
	})
	t.Logf("earliest %d of 3500 after expiry", start)
	if start >= 3500 {
		t.Fatalf("the active segment went too: earliest %d", start)
	}
	consumeFirst := func(opts ...kgo.Opt) int64 {
		t.Helper()
		c := newClient(t, gw.Addr, append(opts, kgo.FetchMaxWait(500*time.Millisecond))...)
		defer c.Close()
		for ctx.Err() == nil {
			if recs := c.PollFetches(ctx).Records(); len(recs) > 0 {
				return recs[0].Offset
			}
		}
		t.Fatal("nothing consumed")
		return 0
	}
	// Later sealed segments may expire while a consumer starts (a group
	// join alone takes the initial rebalance delay), so the start can move
	// on: a consumer must begin at the start as it was at some moment
	// between the two reads, never below the first nor past the second.
	startNow := func() int64 {
		lo, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := lo.Lookup(topic, 0)
		return o.Offset
	}
	if got, now := consumeFirst(kgo.ConsumerGroup("g-behind"), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), startNow(); got < start || got > now {
		t.Fatalf("group reset to %d, want the start (%d, then %d)", got, start, now)
	}
	start = startNow()
	parts := map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}
	if got, now := consumeFirst(kgo.ConsumePartitions(parts), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), startNow(); got < start || got > now {
		t.Fatalf("partition consumer reset to %d, want the start (%d, then %d)", got, start, now)
	}
}

// A fetch parked below what retention then removes (min_bytes not met,
// 10 s max wait) answers OFFSET_OUT_OF_RANGE as soon as the sweep moved
// the start, not at its deadline: the store's OnTrim hook wakes it.
func TestRetentionWakesParkedFetch(t *testing.T) {
	// Serial: times the parked fetch (answered within 7 s).
	if iggyBackend() {
		t.Skip("the embedded store's sweeper; Iggy's cleaner runs on its own")
	}
	gw := startGateway(t)
	const topic = "ret-park"
	cl, _, ctx := retentionTopic(t, gw, topic, 60*time.Second, "retention.ms", "2000")
	// Expires 1.5 s from now: after the fetch below has parked.
	produceAll(t, cl, []*kgo.Record{{Topic: topic, Value: []byte("soon gone"), Timestamp: time.Now().Add(-500 * time.Millisecond)}})
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 10000
	req.MinBytes = 1 << 30
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicIDOf(t, cl, topic)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	began := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 1 {
		t.Fatalf("fetch answered code %d log start %d, want OFFSET_OUT_OF_RANGE at 1", p.ErrorCode, p.LogStartOffset)
	}
	if took > 7*time.Second {
		t.Fatalf("the parked fetch answered after %v: not woken by the trim", took)
	}
	t.Logf("answered after %v", took.Round(time.Millisecond))
}
