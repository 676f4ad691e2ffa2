package handlers

import "sync"

// Watchers lets parked Fetch calls wait for new data on partitions without
// holding a worker: Produce signals a partition after its append, which runs
// every callback registered for it once. Any goroutine.
type Watchers struct {
	mu   sync.Mutex
	next uint64
	byPK map[PartitionKey]map[uint64]func()
}

// NewWatchers returns an empty set.
func NewWatchers() *Watchers {
	return &Watchers{byPK: make(map[PartitionKey]map[uint64]func())}
}

// Watch registers fn on every key; fn runs at most once, on the goroutine
// that signals, and must not block. cancel removes it (safe to call after
// fn ran, and more than once).
func (w *Watchers) Watch(keys []PartitionKey, fn func()) (cancel func()) {
	var once sync.Once
	run := func() { once.Do(fn) }
	w.mu.Lock()
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
