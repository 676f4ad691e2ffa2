//go:build !race

package handlers

import (
	"fmt"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
)

// The Produce and Fetch hot paths, the whole way a request goes through a
// worker (decode of the request, the handler with its mapping and its store
// call through the guard, the response's encoding, the deferred release),
// allocate a constant number of times per request: nothing per record.
// Each test runs the same request with 1, 100 and 2000 records (100 B
// values; 1 KiB values up to 500 records) and fails when the count moves
// with the record count or passes the budget.

// Budgets per request of one partition, the whole way. Ceilings, not
// targets: a change that allocates more per request fails the test.
var (
	produceRequestAllocBudget = map[string]int{"embedded": 11, "iggy-server": 19}
	fetchStoreAllocBudget     = map[string]int{"embedded": 18, "iggy-server": 31}
	fetchTailCacheAllocBudget = map[string]int{"embedded": 14, "iggy-server": 18}
)

// recordCounts are the record counts each size is tried with.
var recordCounts = []struct{ n, size int }{
	{1, 100}, {100, 100}, {2000, 100}, {1, 1024}, {500, 1024},
}

// hotPathBackends are the stores the budgets hold on: the embedded store,
// and the real Iggy server (skipped without it, as every real-server test).
var hotPathBackends = []string{"embedded", "iggy-server"}

// sizedBatch is one batch of n keyed records with size-byte values.
func sizedBatch(n, size int) []byte {
	recs := make([]rec, n)
	v := make([]byte, size)
	for i := range recs {
		recs[i] = rec{key: []byte("key-0001"), value: v}
	}
	return batch(recs...)
}

// allocsPerRequest is the allocations of one request of key at version
// with body, the way a worker takes it (loop/worker.go): decoded, handled,
// checked by check, its response encoded in place around its batches
// (EncodeReplyInPlace) or else into a reused buffer (as encodeReply does
// into a pooled one), the deferred work run.
func allocsPerRequest(t *testing.T, g *Gateway, key, version int16, body []byte, check func(kmsg.Response)) float64 {
	t.Helper()
	spec := Lookup(key)
	out := make([]byte, 0, 4<<20)
	var scratch bytebufferpool.Pool
	inPlace := 0
	defer func() { t.Logf("key %d: %d replies encoded in place", key, inPlace) }()
	return testing.AllocsPerRun(100, func() {
		req, err := Decode(key, version, body)
		if err != nil {
			t.Fatal(err)
		}
		c := Call{G: g, Ctx: t.Context(), Header: codec.RequestHeader{Key: key, Version: version}}
		resp, err := spec.Handle(&c, req)
		if err != nil || resp == nil {
			t.Fatal(err)
		}
		check(resp)
		if b := c.EncodeReplyInPlace(&c.Header, resp, &scratch); b != nil {
			inPlace++
			FetchBufPool().Put(b)
		} else {
			out = resp.AppendTo(out[:0])
		}
		c.RunDeferred()
	})
}

func TestProduceAllocsDoNotGrowWithRecords(t *testing.T) {
	for _, backend := range hotPathBackends {
		t.Run(backend, func(t *testing.T) { produceAllocs(t, backend) })
	}
}

func produceAllocs(t *testing.T, backend string) {
	// Not parallel: it counts allocations (AllocsPerRun).
	g := guardedGateway(t, backend)
	counts := make([]float64, len(recordCounts))
	for i, rc := range recordCounts {
		topic := fmt.Sprintf("p-%d-%d", rc.n, rc.size)
		createTopic(t, g, topic, 1)
		body := produceReq(9, topic, 0, sizedBatch(rc.n, rc.size)).AppendTo(nil)
		counts[i] = allocsPerRequest(t, g, 0, 9, body, func(resp kmsg.Response) {
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("error code %d", code)
			}
		})
	}
	checkConstant(t, "Produce", counts, produceRequestAllocBudget[backend])
}

func TestFetchAllocsDoNotGrowWithRecords(t *testing.T) {
	for _, backend := range hotPathBackends {
		t.Run(backend, func(t *testing.T) { fetchAllocs(t, backend) })
	}
}

func fetchAllocs(t *testing.T, backend string) {
	for _, cache := range []struct {
		name   string
		bytes  int64
		budget int
	}{{"store", 0, fetchStoreAllocBudget[backend]}, {"tail-cache", 64 << 20, fetchTailCacheAllocBudget[backend]}} {
		t.Run(cache.name, func(t *testing.T) {
			// Not parallel: it counts allocations (AllocsPerRun).
			g := guardedGateway(t, backend, func(c *Config) {
				c.TailCacheBytes = cache.bytes
				if backend == "iggy-server" {
					c.FetchConcurrency = 8 // as the command sets it on Iggy
				}
			})
			counts := make([]float64, len(recordCounts))
			for i, rc := range recordCounts {
				topic := fmt.Sprintf("f-%d-%d", rc.n, rc.size)
				createTopic(t, g, topic, 1)
				// The records in batches of at most 100, as producers
				// send them: a Fetch reads many stored batches.
				for left := rc.n; left > 0; left -= 100 {
					produceOne(t, g, produceReq(9, topic, 0, sizedBatch(min(left, 100), rc.size)))
				}
				body := fetchReq(12, topic, 0, 0).AppendTo(nil)
				counts[i] = allocsPerRequest(t, g, 1, 12, body, func(resp kmsg.Response) {
					p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
					if p.ErrorCode != 0 || p.HighWatermark != int64(rc.n) || len(p.RecordBatches) == 0 {
						t.Fatalf("code %d, high watermark %d, %d bytes", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
					}
				})
			}
			if cache.bytes > 0 {
				if st := g.TailCacheStats(); st.Misses > 0 {
					t.Fatalf("cache misses: %+v", st)
				}
			}
			checkConstant(t, "Fetch from the "+cache.name, counts, cache.budget)
		})
	}
}

// checkConstant fails t unless every count equals the first (one record)
// and none passes budget. A count may carry a fraction from the store
// client's own goroutines (an Iggy connection's reader, timers) allocating
// during the runs; allocating per record moves it by at least the record
// count, so half an allocation is the tolerance.
func checkConstant(t *testing.T, what string, counts []float64, budget int) {
	t.Helper()
	for i, n := range counts {
		rc := recordCounts[i]
		t.Logf("%s, %d x %d B: %.2f allocations per request", what, rc.n, rc.size, n)
		if math.Abs(n-counts[0]) >= 0.5 {
			t.Errorf("%s, %d x %d B: %.2f allocations, %.2f with 1 record: something allocates per record",
				what, rc.n, rc.size, n, counts[0])
		}
		if n >= float64(budget)+0.5 {
			t.Errorf("%s, %d x %d B: %.2f allocations per request, over the budget of %d", what, rc.n, rc.size, n, budget)
		}
	}
}
