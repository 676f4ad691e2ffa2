package fetchcache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
)

// tailBatch is a fake Kafka batch of n bytes whose bytes after the
// header identify it; Put only patches base offset and leader epoch.
func tailBatch(tag byte, n int) []byte {
	b := bytes.Repeat([]byte{tag}, n)
	binary.BigEndian.PutUint64(b, 999)      // replaced by the base offset
	binary.BigEndian.PutUint32(b[12:], 777) // replaced by epoch 0
	return b
}

var tailKey = Key{Topic: "t", Partition: 0}
var tailLife = Identity{ID: 1, Created: 100}

func TestTailCacheServesContiguousBatches(t *testing.T) {
	tc := NewTail(1 << 20)
	tc.Put(tailKey, tailLife, 0, 3, tailBatch('a', 100))
	tc.Put(tailKey, tailLife, 3, 2, tailBatch('b', 50))
	tc.Put(tailKey, tailLife, 5, 1, tailBatch('c', 70))

	b, next, ident, ok := tcGet(tc, tailKey, &tailLife, 0, math.MaxUint64, 1<<20)
	if !ok || next != 6 || len(b) != 220 || ident != tailLife {
		t.Fatalf("from 0: ok %v next %d len %d ident %v", ok, next, len(b), ident)
	}
	if got := binary.BigEndian.Uint64(b[100:]); got != 3 {
		t.Errorf("second batch base offset %d, want 3", got)
	}
	if got := binary.BigEndian.Uint32(b[112:]); got != 0 {
		t.Errorf("leader epoch %d, want 0", got)
	}
	if b[99] != 'a' || b[149] != 'b' || b[219] != 'c' {
		t.Errorf("bytes out of place")
	}
	// From inside a batch: the whole batch that holds it.
	if b, next, _, ok = tcGet(tc, tailKey, &tailLife, 4, math.MaxUint64, 1<<20); !ok || next != 6 || len(b) != 120 {
		t.Errorf("from 4: ok %v next %d len %d", ok, next, len(b))
	}
	// The budget stops at a whole batch; a first batch over it is a miss.
	if _, next, _, ok = tcGet(tc, tailKey, &tailLife, 0, math.MaxUint64, 160); !ok || next != 5 {
		t.Errorf("budget 160: ok %v next %d", ok, next)
	}
	if _, _, _, ok = tcGet(tc, tailKey, &tailLife, 0, math.MaxUint64, 99); ok {
		t.Error("a first batch over the budget was served")
	}
	// Never past the high watermark.
	if _, next, _, ok = tcGet(tc, tailKey, &tailLife, 0, 5, 1<<20); !ok || next != 5 {
		t.Errorf("hwm 5: ok %v next %d", ok, next)
	}
	if _, _, _, ok = tcGet(tc, tailKey, &tailLife, 5, 5, 1<<20); ok {
		t.Error("served at the high watermark")
	}
	// Past the end, another topic life, another partition: misses.
	if _, _, _, ok = tcGet(tc, tailKey, &tailLife, 6, math.MaxUint64, 1<<20); ok {
		t.Error("served past the cached end")
	}
	other := Identity{ID: 1, Created: 101}
	if _, _, _, ok = tcGet(tc, tailKey, &other, 0, math.MaxUint64, 1<<20); ok {
		t.Error("served another life of the topic")
	}
	if _, _, _, ok = tcGet(tc, Key{Topic: "t", Partition: 1}, nil, 0, math.MaxUint64, 1<<20); ok {
		t.Error("served another partition")
	}
	if st := tc.Stats(); st.Hits != 4 || st.Misses != 5 || st.ServedBytes != 220+120+150+150 {
		t.Errorf("stats %+v", st)
	}
}

func TestTailCacheGapsAndLateBatches(t *testing.T) {
	tc := NewTail(1 << 20)
	tc.Put(tailKey, tailLife, 10, 5, tailBatch('a', 40))
	tc.Put(tailKey, tailLife, 20, 5, tailBatch('c', 40)) // 15..20 written elsewhere
	tc.Put(tailKey, tailLife, 30, 5, tailBatch('e', 40)) // 25..30 not yet

	if _, next, _, ok := tcGet(tc, tailKey, &tailLife, 10, math.MaxUint64, 1<<20); !ok || next != 15 {
		t.Errorf("from 10: ok %v next %d: must stop at the gap", ok, next)
	}
	if _, _, _, ok := tcGet(tc, tailKey, &tailLife, 15, math.MaxUint64, 1<<20); ok {
		t.Error("served a gap")
	}
	if _, next, _, ok := tcGet(tc, tailKey, &tailLife, 22, math.MaxUint64, 1<<20); !ok || next != 25 {
		t.Errorf("from 22: ok %v next %d", ok, next)
	}
	// Appends that finish late go where their offsets belong; one that
	// overlaps a cached batch is not cached twice.
	tc.Put(tailKey, tailLife, 25, 5, tailBatch('d', 40))
	tc.Put(tailKey, tailLife, 15, 5, tailBatch('b', 40))
	tc.Put(tailKey, tailLife, 12, 5, tailBatch('x', 40))
	for from, want := range map[uint64]byte{10: 'a', 15: 'b', 20: 'c', 25: 'd', 30: 'e'} {
		b, next, _, ok := tcGet(tc, tailKey, &tailLife, from, math.MaxUint64, 40)
		if !ok || next != from+5 || b[39] != want {
			t.Errorf("from %d: ok %v next %d", from, ok, next)
		}
	}
}

func TestTailCacheNewLifeForgetsTheOld(t *testing.T) {
	tc := NewTail(1 << 20)
	tc.Put(tailKey, tailLife, 0, 5, tailBatch('a', 40))
	next := Identity{ID: 2, Created: 200}
	tc.Put(tailKey, next, 0, 2, tailBatch('z', 30))
	if _, _, _, ok := tcGet(tc, tailKey, &tailLife, 0, math.MaxUint64, 1<<20); ok {
		t.Error("the old life is still served")
	}
	b, end, ident, ok := tcGet(tc, tailKey, nil, 0, math.MaxUint64, 1<<20)
	if !ok || end != 2 || ident != next || b[29] != 'z' {
		t.Errorf("new life: ok %v end %d ident %v", ok, end, ident)
	}
	tc.Forget(tailKey, tailLife) // not its life: kept
	if _, _, _, ok := tcGet(tc, tailKey, &next, 0, math.MaxUint64, 1<<20); !ok {
		t.Error("forget of another life dropped the entries")
	}
	tc.Forget(tailKey, next)
	if _, _, _, ok := tcGet(tc, tailKey, &next, 0, math.MaxUint64, 1<<20); ok {
		t.Error("forget kept the entries")
	}
	tc.Put(tailKey, next, 2, 1, tailBatch('y', 30))
	tc.ForgetTopic("t")
	if _, _, _, ok := tcGet(tc, tailKey, nil, 2, math.MaxUint64, 1<<20); ok {
		t.Error("forgetTopic kept the entries")
	}
}

func TestTailCacheStaysWithinBudget(t *testing.T) {
	const budget = 1 << 20
	tc := NewTail(budget)
	var off uint64
	for i := 0; i < 2000; i++ {
		k := Key{Topic: "t", Partition: int32(i % 7)}
		tc.Put(k, tailLife, off, 1, tailBatch(byte(i), 1000+i%3000))
		off++
		if used := tc.Stats().UsedBytes; used > budget+chunkMax {
			t.Fatalf("after %d puts %d bytes used, budget %d", i, used, budget)
		}
	}
	// The newest batches are served, the oldest are gone.
	k := Key{Topic: "t", Partition: int32(1999 % 7)}
	if _, _, _, ok := tcGet(tc, k, &tailLife, 1999, math.MaxUint64, 1<<20); !ok {
		t.Error("the newest batch is not cached")
	}
	if _, _, _, ok := tcGet(tc, Key{Topic: "t", Partition: 0}, &tailLife, 0, math.MaxUint64, 1<<20); ok {
		t.Error("the oldest batch is still cached")
	}
	// A batch over a quarter of the budget is never cached.
	tc.Put(tailKey, tailLife, off, 1, tailBatch('x', budget/4+1))
	if _, _, _, ok := tcGet(tc, tailKey, &tailLife, off, math.MaxUint64, budget); ok {
		t.Error("an oversized batch was cached")
	}
}

// Served bytes do not change while the response holds them, whatever is
// put or evicted meanwhile; once released, the evicted chunk's buffer goes
// back to the free lists.
func TestTailCacheServedBytesStayWhileHeld(t *testing.T) {
	tc := NewTail(1 << 20)
	tc.Put(tailKey, tailLife, 0, 1, tailBatch('a', 1000))
	var pieces [Pieces][]byte
	var refs Refs
	ps, _, _, _, ok := tc.Get(tailKey, &tailLife, 0, math.MaxUint64, 1<<20, pieces[:0], &refs)
	if !ok || len(ps) != 1 || refs.n != 1 {
		t.Fatal("miss")
	}
	held := refs.chunks[0]
	b, want := ps[0], bytes.Clone(ps[0])
	for i := 1; i < 3000; i++ { // evicts the first chunk, then others
		tc.Put(tailKey, tailLife, uint64(i), 1, tailBatch(byte(i), 1000))
	}
	if !bytes.Equal(b, want) {
		t.Fatal("held bytes changed")
	}
	if !held.evicted.Load() || held.recycled.Load() {
		t.Fatalf("held chunk: evicted %v, recycled %v; want evicted, not recycled", held.evicted.Load(), held.recycled.Load())
	}
	tc.Release(&refs)
	if !held.recycled.Load() {
		t.Error("released chunk not recycled")
	}
}

// An evicted chunk no response holds gives its buffer to the next chunk of
// its size.
func TestTailCacheReusesBuffers(t *testing.T) {
	tc := NewTail(1 << 20) // chunks of 64 and 128 KiB
	a := Key{Topic: "a"}
	tc.Put(a, tailLife, 0, 1, tailBatch('a', 60<<10)) // a's first chunk: 64 KiB
	first := tc.part(a, false).chunk
	firstBuf := &first.buf[:1][0]
	for i := 1; i < 40; i++ { // other partitions fill the budget; a's chunk goes first
		tc.Put(Key{Topic: "b", Partition: int32(i)}, tailLife, 0, 1, tailBatch('b', 60<<10))
	}
	if !first.recycled.Load() {
		t.Fatal("the oldest chunk was not recycled")
	}
	tc.Put(Key{Topic: "c"}, tailLife, 0, 1, tailBatch('c', 60<<10))
	reused := false
	tc.mu.Lock()
	for _, c := range tc.fifo {
		if c.size == chunkMin && &c.buf[:1][0] == firstBuf {
			reused = true
		}
	}
	tc.mu.Unlock()
	if !reused {
		t.Error("no new chunk took the recycled buffer")
	}
}

// Puts, gets and evictions on many goroutines (run with -race).
func TestTailCacheConcurrent(t *testing.T) {
	tc := NewTail(512 << 10)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		k := Key{Topic: fmt.Sprint("t", w%2), Partition: int32(w)}
		wg.Go(func() {
			for i := 0; i < 3000; i++ {
				tc.Put(k, tailLife, uint64(i), 1, tailBatch(byte(i), 100+i%900))
			}
		})
		wg.Go(func() {
			for i := 0; i < 3000; i++ {
				var pieces [Pieces][]byte
				var refs Refs
				ps, _, _, _, ok := tc.Get(k, &tailLife, uint64(i/2), math.MaxUint64, 64<<10, pieces[:0], &refs)
				if !ok {
					continue
				}
				// What a held run says must not change under us: its
				// batches' base offsets stay consecutive.
				first := binary.BigEndian.Uint64(ps[0])
				if first > uint64(i/2) {
					t.Errorf("first batch at %d, asked %d", first, i/2)
				}
				runtime.Gosched()
				if again := binary.BigEndian.Uint64(ps[0]); again != first {
					t.Errorf("held batch changed from offset %d to %d", first, again)
				}
				tc.Release(&refs)
			}
		})
	}
	wg.Go(func() {
		for i := 0; i < 50; i++ {
			tc.ForgetTopic("t0")
		}
	})
	wg.Wait()
}

func TestTailCacheNilIsOff(t *testing.T) {
	var tc *Tail
	tc.Put(tailKey, tailLife, 0, 1, tailBatch('a', 100))
	if _, _, _, ok := tcGet(tc, tailKey, nil, 0, math.MaxUint64, 1<<20); ok {
		t.Error("nil cache served")
	}
	tc.ForgetTopic("t")
	tc.Forget(tailKey, tailLife)
	if st := tc.Stats(); st != (TailStats{}) {
		t.Errorf("stats %+v", st)
	}
	if NewTail(0) != nil {
		t.Error("budget 0 made a cache")
	}
}

// tcGet is get with the runs joined, for tests that look at bytes.
func tcGet(tc *Tail, key Key, want *Identity, from, hwm uint64, budget int) ([]byte, uint64, Identity, bool) {
	var pieces [Pieces][]byte
	var refs Refs
	ps, n, next, ident, ok := tc.Get(key, want, from, hwm, budget, pieces[:0], &refs)
	if !ok {
		return nil, 0, ident, false
	}
	var b []byte
	for _, p := range ps {
		b = append(b, p...)
	}
	tc.Release(&refs)
	if len(b) != n {
		panic(fmt.Sprintf("runs hold %d bytes, get said %d", len(b), n))
	}
	return b, next, ident, true
}

// Runs end where chunks do; get returns as many as its pieces hold, all
// of the partition's consecutive batches within the budget.
func TestTailCacheRunsAcrossChunks(t *testing.T) {
	tc := NewTail(64 << 20)
	const size = 40 << 10 // one fits the first 64 KiB chunk, then chunks grow to 4 MiB
	for i := range 400 {
		tc.Put(tailKey, tailLife, uint64(i), 1, tailBatch(byte('a'+i%26), size))
	}
	var pieces [Pieces][]byte
	var refs Refs
	ps, n, next, _, ok := tc.Get(tailKey, &tailLife, 0, math.MaxUint64, 1<<30, pieces[:0], &refs)
	if !ok || len(ps) != Pieces || next >= 400 || n != int(next)*size {
		t.Fatalf("ok %v, %d runs, %d bytes, next %d", ok, len(ps), n, next)
	}
	var off uint64
	for _, p := range ps {
		for len(p) > 0 {
			if got := binary.BigEndian.Uint64(p); got != off {
				t.Fatalf("batch at offset %d, want %d", got, off)
			}
			p, off = p[size:], off+1
		}
	}
	if refs.n != len(ps) {
		t.Errorf("%d references for %d runs", refs.n, len(ps))
	}
	tc.Release(&refs)
	// One piece: the first run only.
	ps, n, next, _, _ = tc.Get(tailKey, &tailLife, 0, math.MaxUint64, 1<<30, pieces[:0:1], &refs)
	tc.Release(&refs)
	if len(ps) != 1 || n != 40<<10 || next != 1 {
		t.Errorf("one piece: %d runs, %d bytes, next %d", len(ps), n, next)
	}
}
