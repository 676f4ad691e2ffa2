package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

// newClient returns a franz-go client for addr, closed when the test ends.
// Its warnings go to the test log only if the test fails.
func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	logBuf := &syncbuf.Buffer{}
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.WithLogger(kgo.BasicLogger(logBuf, kgo.LogLevelWarn, nil)),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		if t.Failed() {
			t.Logf("franz-go log:\n%s", tail(logBuf.String(), 100))
		}
	})
	return cl
}

// notServed fails t, saying what, if a client of addr with opts (and no
// retries) has a Metadata request answered within 5 s.
func notServed(t testing.TB, addr, what string, opts ...kgo.Opt) {
	t.Helper()
	cl := newClient(t, addr, append(opts, kgo.RequestRetries(0))...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal(what)
	}
}

// createTopic creates topic through the Kafka CreateTopics API.
func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = partitions
	rt.ReplicationFactor = 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics %s: %+v", topic, resp.Topics)
	}
}

// clientWithTopic is newClient(t, addr, opts...) after it created topic with
// parts partitions.
func clientWithTopic(t testing.TB, addr, topic string, parts int32, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := newClient(t, addr, opts...)
	createTopic(t, cl, topic, parts)
	return cl
}

// rec is a record as a test compares it.
type rec struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
	Headers   string // k=v pairs joined by ","
}

func (r rec) String() string {
	return fmt.Sprintf("p%d@%d key=%q value=%q headers=%q", r.Partition, r.Offset, r.Key, r.Value, r.Headers)
}

func recOf(r *kgo.Record) rec {
	var h bytes.Buffer
	for i, kv := range r.Headers {
		if i > 0 {
			h.WriteByte(',')
		}
		h.WriteString(kv.Key)
		h.WriteByte('=')
		h.Write(kv.Value)
	}
	return rec{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value), Headers: h.String()}
}

// testRecords makes n records with keys cycling over a few values, a header
// on every other record, and values of varied size.
func testRecords(topic string, n int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		r := &kgo.Record{
			Topic: topic,
			Key:   fmt.Appendf(nil, "key-%d", i%7),
			Value: fmt.Appendf(nil, "value %d %s", i, bytes.Repeat([]byte{'x'}, i%50)),
		}
		if i%2 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "seq", Value: fmt.Appendf(nil, "%d", i)}, {Key: "src", Value: []byte("e2e")}}
		}
		out[i] = r
	}
	return out
}

// filledTopic creates topic at addr with one partition holding n records
// (valueRecords) and returns the client that produced them, whose records
// go to the partition they name.
func filledTopic(t testing.TB, addr, topic string, n int) *kgo.Client {
	t.Helper()
	cl := clientWithTopic(t, addr, topic, 1, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, cl, valueRecords(topic, n))
	return cl
}

// valueRecords are n records for partition 0 of topic, valued v0, v1, ...
func valueRecords(topic string, n int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}
	}
	return out
}

// produceAll produces records synchronously and returns them as stored
// (with the partition and offset the gateway acknowledged).
func produceAll(t testing.TB, cl *kgo.Client, records []*kgo.Record) []rec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := cl.ProduceSync(ctx, records...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	out := make([]rec, 0, len(res))
	for _, r := range res {
		out = append(out, recOf(r.Record))
	}
	return out
}

// produceParts writes n records to each of parts partitions of topic,
// values "p<partition>-<i>".
func produceParts(t testing.TB, addr, topic string, parts int32, n int) {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
}

// produceTagged writes n records to every partition of topic, valued
// "<tag>-p<partition>-<i>", so records of different batches differ.
func produceTagged(t testing.TB, addr, topic, tag string, parts int32, n int) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var recs []*kgo.Record
	var vals []string
	for p := range parts {
		for i := range n {
			v := fmt.Sprintf("%s-p%d-%d", tag, p, i)
			vals = append(vals, v)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return vals
}

// consumeOpt changes how consume reads.
type consumeOpt func(*consumeSpec)

type consumeSpec struct {
	timeout     time.Duration
	client      []kgo.Opt
	nothingMore bool
}

// within gives consume timeout instead of 30 s.
func within(timeout time.Duration) consumeOpt {
	return func(s *consumeSpec) { s.timeout = timeout }
}

// consumeWith gives the consuming client opts too (a SASL login, TLS).
func consumeWith(opts ...kgo.Opt) consumeOpt {
	return func(s *consumeSpec) { s.client = append(s.client, opts...) }
}

// nothingMore makes consume poll once more, for a second, once it has
// enough, and fail unless that brought nothing: the topic holds exactly
// what consume returns.
func nothingMore() consumeOpt {
	return func(s *consumeSpec) { s.nothingMore = true }
}

// consume reads topic from the start of every partition with a fresh
// group-less franz-go client until enough is satisfied with what arrived
// (returns nil), and returns the records sorted by partition and offset.
// It fails on a fetch error, or with enough's last complaint when the
// timeout passes first.
func consume(t testing.TB, addr, topic string, enough func([]*kgo.Record) error, opts ...consumeOpt) []*kgo.Record {
	t.Helper()
	spec := consumeSpec{timeout: 30 * time.Second}
	for _, o := range opts {
		o(&spec)
	}
	cl := newClient(t, addr, append(spec.client,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), spec.timeout)
	defer cancel()
	var got []*kgo.Record
	for short := enough(got); short != nil; short = enough(got) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s for %v: %v", topic, spec.timeout, short)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	if spec.nothingMore {
		n := len(got)
		more, cancelMore := context.WithTimeout(context.Background(), time.Second)
		defer cancelMore()
		cl.PollFetches(more).EachRecord(func(r *kgo.Record) { got = append(got, r) })
		if len(got) != n {
			t.Fatalf("%s holds %d records, want %d", topic, len(got), n)
		}
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
}

// atLeast is enough once n records arrived.
func atLeast(n int) func([]*kgo.Record) error {
	return func(got []*kgo.Record) error {
		if len(got) < n {
			return fmt.Errorf("%d of %d records", len(got), n)
		}
		return nil
	}
}

// reached is enough once each partition's offsets reached hwm[partition]
// (records past it may come along).
func reached(hwm map[int32]int64) func([]*kgo.Record) error {
	return func(got []*kgo.Record) error {
		next := map[int32]int64{}
		for _, r := range got {
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		}
		for p, h := range hwm {
			if next[p] < h {
				return fmt.Errorf("read up to %v of %v", next, hwm)
			}
		}
		return nil
	}
}

// consumeN is consume of at least n records, as recs.
func consumeN(t testing.TB, addr, topic string, n int, opts ...consumeOpt) []rec {
	t.Helper()
	return recsOf(consume(t, addr, topic, atLeast(n), opts...))
}

func recsOf(rs []*kgo.Record) []rec {
	out := make([]rec, 0, len(rs))
	for _, r := range rs {
		out = append(out, recOf(r))
	}
	return out
}

func sortRecs(rs []rec) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Partition != rs[j].Partition {
			return rs[i].Partition < rs[j].Partition
		}
		return rs[i].Offset < rs[j].Offset
	})
}

// sameRecs fails t unless got holds exactly want (both sorted by partition
// and offset).
func sameRecs(t testing.TB, want, got []rec) {
	t.Helper()
	sortRecs(want)
	if len(got) != len(want) {
		t.Errorf("got %d records, want %d", len(got), len(want))
	}
	bad := 0
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %v\nwant %v", i, got[i], want[i])
			if bad++; bad > 5 {
				t.Fatal("too many mismatches")
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// topicIDOf is the id Metadata gives topic, for requests that name topics
// by id (Fetch and Produce v13+: kgo sends every request at the highest
// version both sides know, whatever version it was built with).
func topicIDOf(t testing.TB, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}
