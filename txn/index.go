package txn

import (
	"sort"
	"sync"
)

// Partition names one Kafka partition.
type Partition struct {
	Topic     string
	Partition int32
}

// Aborted is one aborted transaction on a partition, as Fetch answers it
// to read_committed consumers: the producer, the first offset of its
// records there (or an offset at or before it, after a restart), and the
// offset of its abort marker.
type Aborted struct {
	ProducerID  int64
	First, Last uint64
}

// Index is the per-partition view of transactions that Produce, Fetch and
// ListOffsets need: which producers have an open transaction on a
// partition and where it starts (the last stable offset is the lowest of
// those), and the aborted transactions. Any goroutine.
type Index struct {
	mu    sync.RWMutex
	parts map[Partition]*partState
}

// partState is one partition's transactions. mu is also held by a Produce
// across the first append of a producer's transaction (BeginFirst), so a
// reader that already saw the appended records waits for their first
// offset before it answers a last stable offset.
type partState struct {
	mu      sync.Mutex
	open    map[int64]uint64 // producer id -> first offset of its open transaction
	aborted []Aborted        // by Last
}

func (ix *Index) part(p Partition, create bool) *partState {
	ix.mu.RLock()
	ps := ix.parts[p]
	ix.mu.RUnlock()
	if ps != nil || !create {
		return ps
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.parts == nil {
		ix.parts = make(map[Partition]*partState)
	}
	if ps = ix.parts[p]; ps == nil {
		ps = &partState{open: make(map[int64]uint64)}
		ix.parts[p] = ps
	}
	return ps
}

// BeginFirst is called before a transactional batch of pid is appended to
// p. When the transaction has records on p already it returns nil: there
// is nothing to record. Otherwise it holds p until the returned done is
// called with the batch's base offset (ok) or the append's failure (!ok),
// so that no last stable offset is answered in between. done must be
// called exactly once.
func (ix *Index) BeginFirst(p Partition, pid int64) (done func(base uint64, ok bool)) {
	ps := ix.part(p, true)
	ps.mu.Lock()
	if _, open := ps.open[pid]; open {
		ps.mu.Unlock()
		return nil
	}
	return func(base uint64, ok bool) {
		if ok {
			ps.open[pid] = base
		}
		ps.mu.Unlock()
	}
}

// Open records that pid's transaction holds p from first on, unless it
// is known already (a restart's recovery, where first is a lower bound).
func (ix *Index) Open(p Partition, pid int64, first uint64) {
	ps := ix.part(p, true)
	ps.mu.Lock()
	if _, ok := ps.open[pid]; !ok {
		ps.open[pid] = first
	}
	ps.mu.Unlock()
}

// FirstOffset is where pid's open transaction starts on p.
func (ix *Index) FirstOffset(p Partition, pid int64) (uint64, bool) {
	ps := ix.part(p, false)
	if ps == nil {
		return 0, false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	f, ok := ps.open[pid]
	return f, ok
}

// Close ends pid's transaction on p at its marker's offset; an aborted
// one is added to the aborted list first, so a reader never sees the last
// stable offset move past records it is not told to skip.
func (ix *Index) Close(p Partition, pid int64, marker uint64, abort bool) {
	ps := ix.part(p, false)
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	first, ok := ps.open[pid]
	if !ok {
		return
	}
	if abort {
		ps.addAborted(Aborted{ProducerID: pid, First: first, Last: marker})
	}
	delete(ps.open, pid)
}

// AddAborted puts a stored aborted transaction back (at start).
func (ix *Index) AddAborted(p Partition, a Aborted) {
	ps := ix.part(p, true)
	ps.mu.Lock()
	ps.addAborted(a)
	ps.mu.Unlock()
}

func (ps *partState) addAborted(a Aborted) {
	i := sort.Search(len(ps.aborted), func(i int) bool { return ps.aborted[i].Last >= a.Last })
	if i < len(ps.aborted) && ps.aborted[i] == a {
		return
	}
	ps.aborted = append(ps.aborted, Aborted{})
	copy(ps.aborted[i+1:], ps.aborted[i:])
	ps.aborted[i] = a
}

// hasAborted reports whether p's aborted list has pid's transaction
// ended by the marker at last.
func (ix *Index) hasAborted(p Partition, pid int64, last uint64) bool {
	ps := ix.part(p, false)
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i := sort.Search(len(ps.aborted), func(i int) bool { return ps.aborted[i].Last >= last })
	for ; i < len(ps.aborted) && ps.aborted[i].Last == last; i++ {
		if ps.aborted[i].ProducerID == pid {
			return true
		}
	}
	return false
}

// LastStable is p's last stable offset given its high watermark: the
// first offset of its oldest open transaction, else hwm. It waits for a
// first append in progress (BeginFirst), whose records hwm may include.
func (ix *Index) LastStable(p Partition, hwm uint64) uint64 {
	ps := ix.part(p, false)
	if ps == nil {
		return hwm
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	lso := hwm
	for _, f := range ps.open {
		lso = min(lso, f)
	}
	return lso
}

// AbortedIn appends to dst the aborted transactions of p that overlap
// [from, to): those whose marker is at or after from and whose records
// start before to, in marker order. Kafka answers these with a
// read_committed Fetch of that range.
func (ix *Index) AbortedIn(dst []Aborted, p Partition, from, to uint64) []Aborted {
	ps := ix.part(p, false)
	if ps == nil {
		return dst
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	i := sort.Search(len(ps.aborted), func(i int) bool { return ps.aborted[i].Last >= from })
	for ; i < len(ps.aborted); i++ {
		if a := ps.aborted[i]; a.First < to {
			dst = append(dst, a)
		}
	}
	return dst
}

// OpenOn lists the producers with an open transaction on p and where it
// starts (DescribeProducers).
func (ix *Index) OpenOn(p Partition) map[int64]uint64 {
	ps := ix.part(p, false)
	if ps == nil {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(map[int64]uint64, len(ps.open))
	for k, v := range ps.open {
		out[k] = v
	}
	return out
}

// OpenPartitions lists every partition with an open transaction and the
// producers holding it (kafka-transactions find-hanging).
func (ix *Index) OpenPartitions() map[Partition]map[int64]uint64 {
	ix.mu.RLock()
	ps := make(map[Partition]*partState, len(ix.parts))
	for k, v := range ix.parts {
		ps[k] = v
	}
	ix.mu.RUnlock()
	out := make(map[Partition]map[int64]uint64)
	for k := range ps {
		if m := ix.OpenOn(k); len(m) > 0 {
			out[k] = m
		}
	}
	return out
}

// DropTopic forgets a deleted topic's partitions.
func (ix *Index) DropTopic(topic string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for p := range ix.parts {
		if p.Topic == topic {
			delete(ix.parts, p)
		}
	}
}

// WithAborted lists the partitions that have aborted transactions.
func (ix *Index) WithAborted() []Partition {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var out []Partition
	for p, ps := range ix.parts {
		ps.mu.Lock()
		if len(ps.aborted) > 0 {
			out = append(out, p)
		}
		ps.mu.Unlock()
	}
	return out
}

// DropAbortedBelow forgets p's aborted transactions whose marker lies
// below start (retention or DeleteRecords removed them: no reader can get
// their records) and returns them.
func (ix *Index) DropAbortedBelow(p Partition, start uint64) []Aborted {
	ps := ix.part(p, false)
	if ps == nil {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := sort.Search(len(ps.aborted), func(i int) bool { return ps.aborted[i].Last >= start })
	if n == 0 {
		return nil
	}
	gone := append([]Aborted(nil), ps.aborted[:n]...)
	ps.aborted = append(ps.aborted[:0], ps.aborted[n:]...)
	return gone
}

// Forget drops what the index holds of the partitions lost reports
// (cluster mode: partitions another gateway leads now, whose markers this
// gateway no longer sees). Any goroutine.
func (ix *Index) Forget(lost func(Partition) bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for p := range ix.parts {
		if lost(p) {
			delete(ix.parts, p)
		}
	}
}
