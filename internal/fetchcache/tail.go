package fetchcache

import (
	"encoding/binary"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// The tail cache (Tail) keeps the Kafka form of the batches this gateway
// appended most recently, per partition, so that a Fetch of recent records
// (the steady state of a consumer keeping up with its producers) answers
// with the bytes the producer sent, stamped with their offsets, instead of
// reading the store and mapping Iggy messages back into Kafka records.
// Kafka answers the same way: it sends the stored batch as the producer
// wrote it (compressed ones still compressed).
//
// It is a copy of what the store holds, never the source of truth:
//   - a batch goes in only after the store acknowledged it, at the offsets
//     the store gave it, so every cached offset is a stored one;
//   - only batches the mapping keeps exactly go in (the caller checks
//     bridge.ProduceStats.Exact), so a hit and a miss answer the same
//     records;
//   - a partition's entries are tied to the topic's identity (id and
//     creation time): a topic deleted and made again under the same name,
//     here or elsewhere, never answers with the old topic's bytes;
//   - every cached batch lies below the store's high watermark (the store
//     acknowledged it); a Fetch that read the watermark it answers passes
//     it to Get, and Fetch checks the log start itself.
//
// Memory is bounded by a byte budget over all partitions; the oldest chunk
// of any partition goes first. Batches are copied into per-partition
// chunks and never modified while cached, so a Fetch response may point
// into a chunk (no copy). Evicted chunks' buffers are used again for new
// chunks (memory the process already touched: on a VM first writes to new
// pages are dear), so a response holds a reference on each chunk it
// points into (Get, Release) and a buffer is reused only once none does.

// chunkMin and chunkMax bound a partition's chunk size: small
// first (a partition with little traffic costs little), doubling with each
// new chunk up to the maximum, or the size of a larger batch.
const (
	chunkMin = 64 << 10
	chunkMax = 4 << 20
)

// Identity tells one life of a topic from another of the same name: the
// topic's id and creation time (bridge.TopicInfo's ID and CreatedAt).
type Identity struct {
	ID      uint32
	Created uint64
}

// Key names one Kafka partition (the same fields as handlers.PartitionKey,
// which converts to it).
type Key struct {
	Topic     string
	Partition int32
}

// Tail is the gateway's tail cache. A nil *Tail caches nothing.
// Any goroutine.
type Tail struct {
	budget   int64
	maxChunk int // the largest chunk a part grows to

	partsMu sync.RWMutex
	parts   map[Key]*partCache

	mu        sync.Mutex // guards fifo, used, free and freeBytes
	fifo      []*chunk   // every live chunk, oldest first
	used      int64      // capacity of the chunks in fifo
	free      [classes][][]byte
	freeBytes int64

	hits, misses, servedBytes atomic.Int64
}

// classes are the pooled chunk sizes, chunkMin << k up to
// chunkMax; a chunk for a larger batch is made to measure and left to
// the garbage collector.
const classes = 7

// classOf is the pooled class of a chunk of size bytes, -1 for none.
func classOf(size int) int {
	for k := 0; k < classes; k++ {
		if chunkMin<<k >= size {
			return k
		}
	}
	return -1
}

// partCache is one partition's cached run of batches.
type partCache struct {
	mu      sync.RWMutex
	ident   Identity
	entries []entry // by offset, increasing; may have gaps
	chunk   *chunk  // where the next batch is copied; nil: a new one
	nextCap int
}

// entry is one cached batch: offsets [base, end) at chunk.buf[at:at+n].
type entry struct {
	base, end uint64
	chunk     *chunk
	at, n     int
}

// chunk holds batches back to back. buf's length grows under the
// owning part's lock; bytes below it never change until the buffer is
// reused, which waits for refs to reach 0 after eviction.
type chunk struct {
	buf  []byte
	size int64 // cap(buf), read without the part's lock
	part *partCache
	// refs counts the responses pointing into buf (Get, Release);
	// evicted is set once the chunk left the cache, recycled once its
	// buffer went back to the free lists.
	refs              atomic.Int32
	evicted, recycled atomic.Bool
}

// Refs are the chunks a Get's runs point into, held until Release.
type Refs struct {
	chunks [Pieces]*chunk
	n      int
}

// NewTail returns a cache of at most budget bytes, nil when budget <= 0.
func NewTail(budget int64) *Tail {
	if budget <= 0 {
		return nil
	}
	// Chunks of at most an eighth of the budget, so eviction works in
	// steps smaller than what a small cache holds.
	maxChunk := chunkMin
	for maxChunk*2 <= chunkMax && int64(maxChunk*2) <= budget/8 {
		maxChunk *= 2
	}
	return &Tail{budget: budget, maxChunk: maxChunk, parts: make(map[Key]*partCache)}
}

// TailStats are the tail cache's counts, for metrics.
type TailStats struct {
	Hits, Misses, ServedBytes, UsedBytes int64
}

// Stats returns the counts so far. Any goroutine.
func (tc *Tail) Stats() TailStats {
	if tc == nil {
		return TailStats{}
	}
	tc.mu.Lock()
	used := tc.used
	tc.mu.Unlock()
	return TailStats{Hits: tc.hits.Load(), Misses: tc.misses.Load(), ServedBytes: tc.servedBytes.Load(), UsedBytes: used}
}

// part returns key's part, making it when create is set.
func (tc *Tail) part(key Key, create bool) *partCache {
	tc.partsMu.RLock()
	p := tc.parts[key]
	tc.partsMu.RUnlock()
	if p != nil || !create {
		return p
	}
	tc.partsMu.Lock()
	defer tc.partsMu.Unlock()
	if p = tc.parts[key]; p == nil {
		p = &partCache{}
		tc.parts[key] = p
	}
	return p
}

// Put caches batch, a whole Kafka v2 record batch the store just stored at
// offsets [base, base+count), as the producer sent it. The copy gets base
// as its base offset and partition leader epoch 0, as Fetch's mapped
// batches have (neither is under the batch's CRC). A batch overlapping
// one already cached is not cached again. Any goroutine.
func (tc *Tail) Put(key Key, ident Identity, base uint64, count int, batch []byte) {
	n := len(batch)
	if tc == nil || count <= 0 || n < 17 || int64(n) > tc.budget/4 {
		return
	}
	p := tc.part(key, true)
	p.mu.Lock()
	if p.ident != ident {
		p.resetLocked(ident)
	}
	// Appends to one partition may finish out of order (concurrent
	// producers, or pipelined ones): a batch goes where its offsets
	// belong, unless it overlaps one already there (a retried duplicate).
	es := p.entries
	i := sort.Search(len(es), func(i int) bool { return es[i].end > base })
	if i < len(es) && es[i].base < base+uint64(count) {
		p.mu.Unlock()
		return
	}
	var fresh *chunk
	if c := p.chunk; c == nil || cap(c.buf)-len(c.buf) < n {
		fresh = p.newChunkLocked(tc, n)
	}
	c := p.chunk
	at := len(c.buf)
	c.buf = append(c.buf, batch...)
	b := c.buf[at : at+n]
	binary.BigEndian.PutUint64(b[0:8], base)
	binary.BigEndian.PutUint32(b[12:16], 0)
	p.entries = slices.Insert(p.entries, i, entry{base: base, end: base + uint64(count), chunk: c, at: at, n: n})
	p.mu.Unlock()
	if fresh != nil {
		tc.admit(fresh)
	}
}

// resetLocked forgets the part's entries (a new life of the topic). The
// old chunks stay counted until they are evicted. Under p.mu.
func (p *partCache) resetLocked(ident Identity) {
	p.ident = ident
	p.entries = nil
	p.chunk = nil
	p.nextCap = 0
}

// newChunkLocked starts a chunk big enough for n bytes, on a reused
// buffer when one of its class is free. Under p.mu (it takes tc.mu); the
// caller admits it to the cache after releasing p.mu.
func (p *partCache) newChunkLocked(tc *Tail, n int) *chunk {
	size := max(p.nextCap, chunkMin)
	p.nextCap = min(size*2, tc.maxChunk)
	size = max(size, n)
	var buf []byte
	if k := classOf(size); k >= 0 {
		size = chunkMin << k
		tc.mu.Lock()
		if f := tc.free[k]; len(f) > 0 {
			buf = f[len(f)-1]
			f[len(f)-1] = nil
			tc.free[k] = f[:len(f)-1]
			tc.freeBytes -= int64(cap(buf))
		}
		tc.mu.Unlock()
	}
	if buf == nil {
		buf = make([]byte, 0, size)
	}
	c := &chunk{buf: buf, size: int64(size), part: p}
	p.chunk = c
	return c
}

// admit counts a new chunk and evicts the oldest chunks while the cache is
// over its budget (never the new one). Called with no part lock held, so
// it may take other parts' locks.
func (tc *Tail) admit(c *chunk) {
	tc.mu.Lock()
	tc.fifo = append(tc.fifo, c)
	tc.used += c.size
	var evict []*chunk
	for tc.used > tc.budget && len(tc.fifo) > 1 {
		old := tc.fifo[0]
		tc.fifo[0] = nil
		tc.fifo = tc.fifo[1:]
		tc.used -= old.size
		evict = append(evict, old)
	}
	if len(tc.fifo) < cap(tc.fifo)/4 {
		tc.fifo = append([]*chunk(nil), tc.fifo...)
	}
	tc.mu.Unlock()
	for _, old := range evict {
		old.part.dropChunk(old)
		// After dropChunk no Get can take a new reference.
		old.evicted.Store(true)
		if old.refs.Load() == 0 {
			tc.recycle(old)
		}
	}
}

// recycle puts an evicted chunk's buffer on the free lists, once, unless
// they already hold a quarter of the budget. Any goroutine, no lock held.
func (tc *Tail) recycle(c *chunk) {
	k := classOf(int(c.size))
	if k < 0 || !c.recycled.CompareAndSwap(false, true) {
		return
	}
	tc.mu.Lock()
	if tc.freeBytes+c.size <= tc.budget/4 {
		tc.free[k] = append(tc.free[k], c.buf[:0])
		tc.freeBytes += c.size
	}
	tc.mu.Unlock()
}

// Release drops the references a Get took. Any goroutine, once per Get.
func (tc *Tail) Release(r *Refs) {
	for _, c := range r.chunks[:r.n] {
		if c.refs.Add(-1) == 0 && c.evicted.Load() {
			tc.recycle(c)
		}
	}
	r.n = 0
}

// dropChunk forgets the entries in c. Any goroutine, no other lock held.
func (p *partCache) dropChunk(c *chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A chunk's entries are one run, usually at the front (chunks are
	// admitted about in the order they were made, not exactly).
	kept := p.entries[:0]
	for _, e := range p.entries {
		if e.chunk != c {
			kept = append(kept, e)
		}
	}
	clear(p.entries[len(kept):])
	p.entries = kept
	if p.chunk == c {
		p.chunk = nil
	}
}

// ForgetTopic drops every partition of topic (DeleteTopics through this
// gateway; a recreation elsewhere is caught by the identity). Any
// goroutine.
func (tc *Tail) ForgetTopic(topic string) {
	if tc == nil {
		return
	}
	tc.partsMu.Lock()
	var parts []*partCache
	for k, p := range tc.parts {
		if k.Topic == topic {
			parts = append(parts, p)
			delete(tc.parts, k)
		}
	}
	tc.partsMu.Unlock()
	for _, p := range parts {
		p.mu.Lock()
		p.resetLocked(Identity{})
		p.mu.Unlock()
	}
}

// Pieces is how many byte runs one Get may return: runs end where a
// chunk does, and a Fetch of a few MiB spans a few chunks.
const Pieces = 8

// Get returns cached batches of key from the one holding offset from, as
// byte runs appended to pieces (each one contiguous slice of a chunk,
// unchanged until refs is released: the caller may send it as it is).
// Together they hold whole batches at consecutive offsets that end at or
// below hwm, at most budget bytes; it also returns the identity of the
// topic they belong to. With want set, only batches of that life of the
// topic are returned. ok is false when from is not cached or the first
// batch does not fit budget (the store path then returns part of it,
// KIP-74). next is one past the last offset returned. The first batch may
// start below from: consumers skip those records, as Kafka sends whole
// stored batches. At most cap(pieces) runs (at least one, at most
// Pieces). On ok the caller must Release refs once it is done with
// the runs. Any goroutine.
func (tc *Tail) Get(key Key, want *Identity, from, hwm uint64, budget int, pieces [][]byte, refs *Refs) (out [][]byte, n int, next uint64, ident Identity, ok bool) {
	if tc == nil {
		return pieces, 0, 0, Identity{}, false
	}
	out, n, next, ident, ok = tc.lookup(key, want, from, hwm, budget, pieces, refs)
	if ok {
		tc.hits.Add(1)
		tc.servedBytes.Add(int64(n))
	} else {
		tc.misses.Add(1)
	}
	return out, n, next, ident, ok
}

func (tc *Tail) lookup(key Key, want *Identity, from, hwm uint64, budget int, pieces [][]byte, refs *Refs) ([][]byte, int, uint64, Identity, bool) {
	p := tc.part(key, false)
	if p == nil {
		return pieces, 0, 0, Identity{}, false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if want != nil && p.ident != *want {
		return pieces, 0, 0, Identity{}, false
	}
	es := p.entries
	i := sort.Search(len(es), func(i int) bool { return es[i].end > from })
	if i == len(es) || es[i].base > from || es[i].end > hwm || es[i].n > budget {
		return pieces, 0, 0, Identity{}, false
	}
	limit := min(max(cap(pieces)-len(pieces), 1), Pieces-refs.n)
	cur := es[i]
	at, run, total, next := cur.at, cur.n, cur.n, cur.end
	take := func(c *chunk, b []byte) {
		c.refs.Add(1)
		refs.chunks[refs.n] = c
		refs.n++
		pieces = append(pieces, b)
	}
	for j := i + 1; j < len(es); j++ {
		e := es[j]
		if e.base != next || e.end > hwm || total+e.n > budget {
			break
		}
		if e.chunk != cur.chunk || e.at != at+run {
			// A new run: the next chunk, or bytes not next to these.
			if limit == 1 {
				break
			}
			limit--
			take(cur.chunk, cur.chunk.buf[at:at+run:at+run])
			cur, at, run = e, e.at, 0
		}
		run += e.n
		total += e.n
		next = e.end
	}
	take(cur.chunk, cur.chunk.buf[at:at+run:at+run])
	return pieces, total, next, p.ident, true
}

// Forget drops key's entries when they belong to ident (a Fetch found
// they are of another life of the topic than the store's). Any goroutine.
func (tc *Tail) Forget(key Key, ident Identity) {
	if tc == nil {
		return
	}
	if p := tc.part(key, false); p != nil {
		p.mu.Lock()
		if p.ident == ident {
			p.resetLocked(Identity{})
		}
		p.mu.Unlock()
	}
}
