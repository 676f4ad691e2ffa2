package iggy

import (
	"context"
	"testing"
)

// BenchmarkSendReal and BenchmarkPollReal time one Store.Append and one
// Store.Poll of a batch the size the gateway sends and reads per Kafka
// request at full speed (about 1 MB) against the real Iggy server, to set
// the gateway's Iggy round trip beside iggy-bench's per-batch latency for
// the same batch. Skipped without the server.
func BenchmarkSendReal(b *testing.B) {
	for _, sh := range []struct{ count, size int }{{9090, 100}, {967, 1024}} {
		b.Run(shapeName(sh.count, sh.size), func(b *testing.B) {
			st := realBenchStore(b)
			batch := benchBatch(b, sh.count, sh.size)
			ctx := context.Background()
			b.SetBytes(int64(sh.count * sh.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.Append(ctx, benchStream, "bench", 0, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*sh.count)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func BenchmarkPollReal(b *testing.B) {
	for _, sh := range []struct{ count, size int }{{9090, 100}, {967, 1024}} {
		b.Run(shapeName(sh.count, sh.size), func(b *testing.B) {
			st := realBenchStore(b)
			batch := benchBatch(b, sh.count, sh.size)
			ctx := context.Background()
			const stored = 20
			for range stored {
				if _, err := st.Append(ctx, benchStream, "bench", 0, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(sh.count * sh.size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				from := uint64((i % stored) * sh.count)
				i++
				n := 0
				if err := st.Poll(ctx, benchStream, "bench", 0, from, len(batch), func(rec []byte) bool { n += len(rec); return true }); err != nil || n == 0 {
					b.Fatal(err, n)
				}
			}
			b.ReportMetric(float64(b.N*sh.count)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

func realBenchStore(b *testing.B) *Store {
	e := newRealEnv(b)
	if _, err := e.store.CreateTopic(context.Background(), e.stream, "bench", 1); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.store.DeleteTopic(context.Background(), e.stream, "bench") })
	benchStream = e.stream
	return e.store
}

// benchStream is the stream of the store realBenchStore made last.
var benchStream string

// BenchmarkPartitionReal is one Store.Partition (a GetTopic round trip,
// plus the log start from memory) against the real server, on a topic
// holding data: the Fetch and Produce paths ask it once or twice per
// request.
func BenchmarkPartitionReal(b *testing.B) {
	st := realBenchStore(b)
	batch := benchBatch(b, 967, 1024)
	ctx := context.Background()
	for range 20 {
		if _, err := st.Append(ctx, benchStream, "bench", 0, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Partition(ctx, benchStream, "bench", 0); err != nil {
			b.Fatal(err)
		}
	}
}
