package embedded

import (
	"sync/atomic"
	"testing"
)

// One Append of a 10-message batch of 100-byte payloads, the unit a small
// Kafka produce request becomes.
func benchAppend(b *testing.B, policy SyncPolicy, parallel bool) {
	s := openStore(b, b.TempDir(), policy)
	defer s.Close()
	_, _ = s.CreateTopic(ctx, "kafka", "t", 1)
	batch := makeBatch(b, string(make([]byte, 96)), 10, 1)
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	if !parallel {
		for b.Loop() {
			if _, err := s.Append(ctx, "kafka", "t", 0, batch); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(4) // 4 x GOMAXPROCS writers on one partition
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Append(ctx, "kafka", "t", 0, batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	b.Run("SyncAlways", func(b *testing.B) { benchAppend(b, SyncAlways, false) })
	b.Run("SyncAlways-parallel", func(b *testing.B) { benchAppend(b, SyncAlways, true) })
	b.Run("SyncInterval", func(b *testing.B) { benchAppend(b, SyncInterval, false) })
	b.Run("SyncNever", func(b *testing.B) { benchAppend(b, SyncNever, false) })
	b.Run("SyncNever-parallel", func(b *testing.B) { benchAppend(b, SyncNever, true) })
}

// Poll of ~64 KiB from a partition of 10 000 stored batches, at offsets
// spread over it.
func BenchmarkPoll(b *testing.B) {
	s := openStore(b, b.TempDir(), SyncNever)
	defer s.Close()
	_, _ = s.CreateTopic(ctx, "kafka", "t", 1)
	batch := makeBatch(b, string(make([]byte, 96)), 10, 1)
	const batches = 10_000
	for i := 0; i < batches; i++ {
		if _, err := s.Append(ctx, "kafka", "t", 0, batch); err != nil {
			b.Fatal(err)
		}
	}
	var n atomic.Int64
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		from := (i * 7919) % (batches * 10)
		i++
		err := s.Poll(ctx, "kafka", "t", 0, from, 64<<10, func(v []byte) bool {
			n.Add(int64(len(v)))
			return true
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n.Load())/float64(max(b.N, 1)), "bytes/poll")
}
