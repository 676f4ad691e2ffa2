package handlers

import (
	"strings"
	"sync"
)

// Watchers lets parked Fetch calls wait for new data on partitions without
// holding a worker: Produce signals a partition after its append, which runs
// every callback registered for it once. Any goroutine.
type Watchers struct {
	mu   sync.Mutex
	next uint64
	byPK map[PartitionKey]map[uint64]func()
	// gen counts signals per key, so a waiter can tell whether a signal
	// fell between its read and its Watch.
	gen map[PartitionKey]uint64
}

// NewWatchers returns an empty set.
func NewWatchers() *Watchers {
	return &Watchers{byPK: make(map[PartitionKey]map[uint64]func()), gen: make(map[PartitionKey]uint64)}
}

// Watch registers fn on every key; fn runs at most once, on the goroutine
// that signals, and must not block. cancel removes it (safe to call after
// fn ran, and more than once).
func (w *Watchers) Watch(keys []PartitionKey, fn func()) (cancel func()) {
	return w.WatchSince(keys, 0, fn)
}

// Generation sums the signal counts of keys. Take it before reading the
// data a wait depends on and pass it to WatchSince.
func (w *Watchers) Generation(keys []PartitionKey) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.genLocked(keys)
}

// genLocked is never 0, so 0 can mean "no generation taken".
func (w *Watchers) genLocked(keys []PartitionKey) uint64 {
	sum := uint64(1)
	for _, k := range keys {
		sum += w.gen[k]
	}
	return sum
}

// WatchSince is Watch, but when since is non-zero and a key was signalled
// after Generation returned since, fn runs at once (on this goroutine).
func (w *Watchers) WatchSince(keys []PartitionKey, since uint64, fn func()) (cancel func()) {
	var once sync.Once
	run := func() { once.Do(fn) }
	w.mu.Lock()
	if since != 0 && w.genLocked(keys) != since {
		w.mu.Unlock()
		run()
		return func() {}
	}
	w.next++
	id := w.next
	for _, k := range keys {
		m := w.byPK[k]
		if m == nil {
			m = make(map[uint64]func())
			w.byPK[k] = m
		}
		m[id] = run
	}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		for _, k := range keys {
			if m := w.byPK[k]; m != nil {
				delete(m, id)
				if len(m) == 0 {
					delete(w.byPK, k)
				}
			}
		}
		w.mu.Unlock()
	}
}

// Signal runs and removes every callback waiting on k.
func (w *Watchers) Signal(k PartitionKey) {
	w.mu.Lock()
	w.gen[k]++
	m := w.byPK[k]
	if m == nil {
		w.mu.Unlock()
		return
	}
	delete(w.byPK, k)
	w.mu.Unlock()
	for _, fn := range m {
		fn()
	}
}

// SignalWhere signals every partition key with a waiter for which moved
// reports true (cluster mode: partitions another gateway leads now, so
// their parked fetches re-run and answer NOT_LEADER_OR_FOLLOWER). Group
// wait keys are left alone. Any goroutine.
func (w *Watchers) SignalWhere(moved func(PartitionKey) bool) {
	w.mu.Lock()
	var keys []PartitionKey
	for k := range w.byPK {
		if !strings.HasPrefix(k.Topic, "\x00") && moved(k) {
			keys = append(keys, k)
		}
	}
	w.mu.Unlock()
	for _, k := range keys {
		w.Signal(k)
	}
}
