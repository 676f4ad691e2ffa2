package bridge

import (
	"context"
	"testing"
)

// The guard's own cost per call, over a store that answers at once (its
// release channel closed): what every Append, Poll and state read pays
// for its deadline and its worker.
func BenchmarkGuardAppend(b *testing.B) {
	s := newHangStore()
	close(s.release)
	g := Guard(s, GuardOptions{})
	ctx := context.Background()
	batch := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Append(ctx, "s", "t", 0, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardAppendStaged is BenchmarkGuardAppend through AppendStaged,
// the call Produce makes.
func BenchmarkGuardAppendStaged(b *testing.B) {
	s := newHangStore()
	close(s.release)
	g := Guard(s, GuardOptions{})
	ctx := context.Background()
	batch := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := g.AppendStaged(ctx, "s", "t", 0, batch, Prepared{}); err != nil {
			b.Fatal(err)
		}
	}
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

// BenchmarkGuardPoll is BenchmarkGuardAppend through Poll, the call Fetch
// makes per partition the tail cache does not answer.
func BenchmarkGuardPoll(b *testing.B) {
	s := newHangStore()
	close(s.release)
	g := Guard(s, GuardOptions{})
	ctx := context.Background()
	feed := func([]byte) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Poll(ctx, "s", "t", 0, 0, 1, feed); err != nil {
			b.Fatal(err)
		}
	}
}
