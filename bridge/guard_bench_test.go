package bridge

import (
	"context"
	"testing"
)

// benchGuard times call through a guard over a store that answers at
// once (its release channel closed): the guard's own cost per call.
func benchGuard(b *testing.B, call func(g *Guarded, ctx context.Context) error) {
	s := newHangStore()
	close(s.release)
	g := Guard(s, GuardOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := call(g, ctx); err != nil {
			b.Fatal(err)
		}
	}
}

var guardBatch = make([]byte, 64) // what the benchmarks append

// BenchmarkGuardAppend: what every Append, Poll and state read pays for
// its deadline and its worker.
func BenchmarkGuardAppend(b *testing.B) {
	benchGuard(b, func(g *Guarded, ctx context.Context) error {
		_, err := g.Append(ctx, "s", "t", 0, guardBatch)
		return err
	})
}

// BenchmarkGuardAppendStaged is BenchmarkGuardAppend through AppendStaged,
// the call Produce makes.
func BenchmarkGuardAppendStaged(b *testing.B) {
	benchGuard(b, func(g *Guarded, ctx context.Context) error {
		_, _, err := g.AppendStaged(ctx, "s", "t", 0, guardBatch, Prepared{})
		return err
	})
}

// BenchmarkGuardPoll is BenchmarkGuardAppend through Poll, the call Fetch
// makes per partition the tail cache does not answer.
func BenchmarkGuardPoll(b *testing.B) {
	feed := func([]byte) bool { return true }
	benchGuard(b, func(g *Guarded, ctx context.Context) error {
		return g.Poll(ctx, "s", "t", 0, 0, 1, feed)
	})
}

// BenchmarkGuardAppendParallel is BenchmarkGuardAppend from GOMAXPROCS
// goroutines at once, as a gateway's connections call the store.
func BenchmarkGuardAppendParallel(b *testing.B) {
	s := newHangStore()
	close(s.release)
	g := Guard(s, GuardOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		batch := make([]byte, 64)
		for pb.Next() {
			if _, err := g.Append(ctx, "s", "t", 0, batch); err != nil {
				b.Fatal(err)
			}
		}
	})
}
