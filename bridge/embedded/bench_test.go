package embedded

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// The store benchmarks use only the bridge.Backend API, so the same file
// measures any implementation of the embedded store (docs/STORAGE.md,
// "Cost", compares the pebble data path with the segment log this way).
//
//	go test -run xxx -bench . -benchtime 2000x ./bridge/embedded

// benchBatch is one Append's batch: "10x100B" (10 messages of 100-byte
// payloads, a small Kafka produce request) or "1MiB" (8 messages of
// 128 KiB).
func benchBatch(b *testing.B, shape string) []byte {
	switch shape {
	case "10x100B":
		return makeBatch(b, strings.Repeat("x", 96), 10, 1)
	case "1MiB":
		return makeBatch(b, strings.Repeat("x", 128<<10-8), 8, 1)
	}
	b.Fatalf("unknown batch shape %q", shape)
	return nil
}

// benchAppend runs b.N Appends of batch to one partition from writers
// goroutines (b.N split between them).
func benchAppend(b *testing.B, policy SyncPolicy, writers int, shape string) {
	s := openStore(b, b.TempDir(), policy)
	defer s.Close()
	if _, err := s.CreateTopic(ctx, "kafka", "t", 1); err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(b, shape)
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if _, err := s.Append(ctx, "kafka", "t", 0, batch); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkAppend(b *testing.B) {
	for _, policy := range []SyncPolicy{SyncNever, SyncAlways} {
		for _, writers := range []int{1, 8} {
			for _, shape := range []string{"10x100B", "1MiB"} {
				name := fmt.Sprintf("%s/writers=%d/%s", policy, writers, shape)
				b.Run(name, func(b *testing.B) { benchAppend(b, policy, writers, shape) })
			}
		}
	}
}

// BenchmarkPoll reads maxBytes at offsets spread over a partition of
// 10 000 stored 10x100B batches (17 MB, in the OS page cache), written,
// then read after a reopen (a store keeping batches in pebble then reads
// them from an sstable, not from its memtable). The "pebble-cache=1MiB"
// runs reopen with a 1 MiB pebble block cache (Options.CacheSize), so such
// a store reads and checksums blocks from its files as it does once the
// data outgrows its block cache; the other runs have the default 256 MiB,
// which holds all of it once warm.
func BenchmarkPoll(b *testing.B) {
	for _, cache := range []int64{0, 1 << 20} {
		name := ""
		if cache > 0 {
			name = "/pebble-cache=1MiB"
		}
		dir := b.TempDir()
		s := openStore(b, dir, SyncNever)
		if _, err := s.CreateTopic(ctx, "kafka", "t", 1); err != nil {
			b.Fatal(err)
		}
		batch := benchBatch(b, "10x100B")
		const batches = 10_000
		for i := 0; i < batches; i++ {
			if _, err := s.Append(ctx, "kafka", "t", 0, batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		s, err := Open(dir, Options{Sync: SyncNever, Logger: quietLogger(), CacheSize: cache})
		if err != nil {
			b.Fatal(err)
		}
		for _, maxBytes := range []int{64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%dKiB%s", maxBytes>>10, name), func(b *testing.B) {
				var n int64
				fn := func(v []byte) bool { n += int64(len(v)); return true }
				b.ReportAllocs()
				i := uint64(0)
				for b.Loop() {
					from := (i * 7919) % (batches * 10)
					i++
					if err := s.Poll(ctx, "kafka", "t", 0, from, maxBytes, fn); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(n / int64(max(b.N, 1)))
			})
		}
		_ = s.Close()
	}
}
