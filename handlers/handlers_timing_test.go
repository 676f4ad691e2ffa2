package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduce decodes a Produce v9 request of one partition holding a
// 100-record batch (100-byte values) and runs the handler: parse, map to an
// Iggy batch, one Append to the embedded store (SyncNever), signal.
func BenchmarkProduce(b *testing.B) {
	g := newGateway(b)
	recs := benchTopic(b, g)
	body := produceReq(9, "bench", 0, batch(recs...)).AppendTo(nil)
	spec := Lookup(0)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		benchProduce(b, g, spec, body)
	}
}

// BenchmarkFetch decodes a Fetch v12 request of one partition and builds the
// response from the embedded store: 1000 stored records, 1 MiB limits, so
// each iteration maps every record back to Kafka batches.
func BenchmarkFetch(b *testing.B) {
	g := newGateway(b)
	b.SetBytes(int64(benchFetch(b, g)))
}

// BenchmarkFetchTailCache is BenchmarkFetch answered from the tail cache:
// the same 1000 records, produced through the handler with the cache on,
// so each iteration sends the cached batches as they are.
func BenchmarkFetchTailCache(b *testing.B) {
	g := newGateway(b, func(c *Config) { c.TailCacheBytes = 64 << 20 })
	n := benchFetch(b, g)
	if st := g.TailCacheStats(); st.Misses > 0 {
		b.Fatalf("cache misses: %+v", st)
	}
	b.SetBytes(int64(n))
}

// benchFetch stores 1000 records of 100 B in topic "bench" (10 produce
// requests through the handler), then times Fetch v12 of it from offset 0:
// decode, handle, deferred work. It returns the bytes of record batches
// one Fetch got.
func benchFetch(b *testing.B, g *Gateway) int {
	recs := benchTopic(b, g)
	bt := batch(recs...)
	for i := 0; i < 10; i++ {
		produceOne(b, g, produceReq(9, "bench", 0, bt))
	}
	body := fetchReq(12, "bench", 0, 0).AppendTo(nil)
	spec := Lookup(1)
	b.ReportAllocs()
	b.ResetTimer()
	var n int
	for b.Loop() {
		req, err := Decode(1, 12, body)
		if err != nil {
			b.Fatal(err)
		}
		c := Call{G: g, Ctx: b.Context()}
		resp, err := spec.Handle(&c, req)
		if err != nil || resp == nil {
			b.Fatal(err)
		}
		n = len(resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
		c.RunDeferred()
	}
	return n
}

// benchTopic creates topic "bench" of one partition on g and returns the
// records of the batch the benchmarks send: 100 keyed 100-byte values.
func benchTopic(b testing.TB, g *Gateway) []rec {
	createTopic(b, g, "bench", 1)
	recs := make([]rec, 100)
	for i := range recs {
		recs[i] = rec{key: []byte("key-0001"), value: make([]byte, 100)}
	}
	return recs
}

// benchProduce decodes body, a Produce v9 request of one partition, runs
// spec (Produce's) on it as the loop would and fails b unless the
// partition was stored.
func benchProduce(b *testing.B, g *Gateway, spec *Spec, body []byte) {
	req, err := Decode(0, 9, body)
	if err != nil {
		b.Fatal(err)
	}
	c := Call{G: g, Ctx: b.Context()}
	resp, err := spec.Handle(&c, req)
	if err != nil {
		b.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		b.Fatal(kerr.ErrorForCode(code))
	}
}
