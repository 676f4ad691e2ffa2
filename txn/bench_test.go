package txn

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The hot paths of transactional traffic: every Fetch answer asks
// LastStable (and a read_committed one AbortedIn) per partition, every
// transactional Produce batch goes through CheckWrite and BeginFirst.

// indexWith is an index with open transactions on pa from offsets 100,
// 200, ... and aborted transactions on pa every 10 offsets below 10*aborted.
func indexWith(open, aborted int) *Index {
	ix := &Index{}
	for i := 0; i < open; i++ {
		ix.Open(pa, int64(i+1), uint64(100*(i+1)))
	}
	for i := 0; i < aborted; i++ {
		ix.AddAborted(pa, Aborted{ProducerID: 9, First: uint64(10 * i), Last: uint64(10*i + 5)})
	}
	return ix
}

func BenchmarkIndexLastStable(b *testing.B) {
	for _, c := range []struct {
		name string
		ix   *Index
		p    Partition
	}{
		{"untouched", indexWith(0, 0), pb},
		{"none-open", indexWith(0, 0), pa},
		{"1-open", indexWith(1, 0), pa},
		{"16-open", indexWith(16, 0), pa},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.ix.part(pa, true)
			b.ReportAllocs()
			for b.Loop() {
				c.ix.LastStable(c.p, 1<<20)
			}
		})
	}
}

func BenchmarkIndexAbortedIn(b *testing.B) {
	ix := indexWith(0, 1000) // aborted transactions over offsets 0..10000
	dst := make([]Aborted, 0, 64)
	for _, c := range []struct {
		name     string
		from, to uint64
	}{
		{"past-all", 20000, 21000}, // a consumer at the tail: nothing to list
		{"overlap-10", 5000, 5100},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst = ix.AbortedIn(dst[:0], pa, c.from, c.to)
			}
		})
	}
	b.Run("untouched", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst = ix.AbortedIn(dst[:0], pb, 0, 100)
		}
	})
}

func BenchmarkIndexBeginFirst(b *testing.B) {
	b.Run("open", func(b *testing.B) { // a later batch of the transaction: nothing to record
		ix := indexWith(1, 0)
		b.ReportAllocs()
		for b.Loop() {
			if done := ix.BeginFirst(pa, 1); done != nil {
				b.Fatal("a second batch began the transaction again")
			}
		}
	})
	b.Run("first", func(b *testing.B) { // the first batch, then its commit
		ix := &Index{}
		b.ReportAllocs()
		var off uint64
		for b.Loop() {
			ix.BeginFirst(pa, 1)(off, true)
			ix.Close(pa, 1, off+1, false)
			off += 2
		}
	})
}

// ongoing is a coordinator with transactional id "t" holding pa in an
// ongoing transaction, and its producer id.
func ongoing(tb testing.TB) (*Coordinator, int64) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	co := newCo(&memStore{}, newEnv(), &now)
	if err := co.Load(ctx); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < 100; i++ { // other ids in the map
		co.InitProducerID(ctx, fmt.Sprint("other-", i), 60000, -1, -1, 5)
	}
	init := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	if code, _ := co.AddPartitions(ctx, "t", init.ProducerID, init.Epoch, []Partition{pa}, false, false); code != 0 {
		tb.Fatal(code)
	}
	return co, init.ProducerID
}

func BenchmarkCoordinatorCheckWrite(b *testing.B) {
	co, pid := ongoing(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if code := co.CheckWrite(ctx, "t", pid, 0, pa, true); code != 0 {
			b.Fatal(code)
		}
	}
}

func BenchmarkCoordinatorCheckWriteParallel(b *testing.B) {
	co, pid := ongoing(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if code := co.CheckWrite(ctx, "t", pid, 0, pa, true); code != 0 {
				b.Fatal(code)
			}
		}
	})
}

// TestHotPathsDoNotAllocate: per partition per Fetch and per
// transactional batch, the index and the write check allocate nothing
// (AbortedIn with room in dst).
func TestHotPathsDoNotAllocate(t *testing.T) {
	ix := indexWith(4, 1000)
	dst := make([]Aborted, 0, 64)
	co, pid := ongoing(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"LastStable", func() { ix.LastStable(pa, 1<<20) }},
		{"LastStable untouched", func() { ix.LastStable(pb, 1<<20) }},
		{"AbortedIn", func() { dst = ix.AbortedIn(dst[:0], pa, 5000, 5100) }},
		{"AbortedIn none", func() { dst = ix.AbortedIn(dst[:0], pa, 20000, 21000) }},
		{"BeginFirst open", func() { ix.BeginFirst(pa, 1) }},
		{"CheckWrite", func() { co.CheckWrite(ctx, "t", pid, 0, pa, true) }},
	} {
		if n := testing.AllocsPerRun(100, c.f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, n)
		}
	}
	if got := ix.AbortedIn(nil, pa, 5000, 5100); len(got) != 10 {
		t.Errorf("AbortedIn(5000, 5100): %d transactions, want 10", len(got))
	}
}
