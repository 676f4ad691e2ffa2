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
	"github.com/twmb/franz-go/pkg/sasl"
)

// newClient returns a franz-go client for addr, closed when the test ends.
// Its warnings go to the test log only if the test fails.
func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	logBuf := &syncBuffer{}
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

// consumeN reads topic from the start of every partition with a fresh
// group-less client until n records arrived, and returns them sorted by
// partition and offset. It fails on a fetch error or after timeout.
func consumeN(t testing.TB, addr, topic string, n int, timeout time.Duration) []rec {
	t.Helper()
	cl := newClient(t, addr,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []rec
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s within %v", len(got), n, topic, timeout)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, recOf(r)) })
	}
	sortRecs(got)
	return got
}

// consumeSasl reads n records of topic from the start, logged in with mech.
func consumeSasl(t testing.TB, addr, topic string, n int, mech sasl.Mechanism) []rec {
	t.Helper()
	cl := newClient(t, addr, kgo.SASL(mech), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []rec
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", len(got), n, topic)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, recOf(r)) })
	}
	sortRecs(got)
	return got
}

// consumeTLS reads n records of topic from the start with opts.
func consumeTLS(t testing.TB, addr, topic string, n int, opts ...kgo.Opt) []rec {
	t.Helper()
	cl := newClient(t, addr, append(opts, kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []rec
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", len(got), n, topic)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, recOf(r)) })
	}
	sortRecs(got)
	return got
}

// consumeAtLeast reads each partition of topic from the start until its
// offset reaches hwm[partition].
func consumeAtLeast(t testing.TB, addr, topic string, hwm map[int32]int64, timeout time.Duration) []rec {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	next := map[int32]int64{}
	done := func() bool {
		for p, h := range hwm {
			if next[p] < h {
				return false
			}
		}
		return true
	}
	var got []rec
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read up to %v of %v within %v", next, hwm, timeout)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, recOf(r))
			next[r.Partition] = r.Offset + 1
		})
	}
	return got
}

// consumeKafka reads n records of topic from the start of every partition
// with franz-go and returns them sorted by partition and offset.
func consumeKafka(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", len(got), n, topic)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	// Nothing beyond n: one more short poll.
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	cl.PollFetches(short).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	if len(got) != n {
		t.Fatalf("%s holds %d records, want %d", topic, len(got), n)
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
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
