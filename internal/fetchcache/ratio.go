package fetchcache

import (
	"sync"

	"github.com/iggy-kafka/gateway/codec"
)

// Samples keeps, per key, the last sample of a size a reader learned (a
// ratio, bytes per message), so the next read of the key asks for about
// what it needs. The map is bounded: past maxSampleKeys a new key clears
// it, and a cleared estimate is relearned by the key's next read. The
// zero value is ready; any goroutine.
type Samples[K comparable] struct {
	mu sync.Mutex
	m  map[K]uint32
}

// maxSampleKeys bounds a Samples map.
const maxSampleKeys = 1 << 16

// Get returns k's last sample, ok false when there is none.
func (s *Samples[K]) Get(k K) (v uint32, ok bool) {
	s.mu.Lock()
	v, ok = s.m[k]
	s.mu.Unlock()
	return v, ok
}

// Put records v as k's last sample.
func (s *Samples[K]) Put(k K, v uint32) {
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[K]uint32)
	}
	if _, ok := s.m[k]; !ok && len(s.m) >= maxSampleKeys {
		clear(s.m)
	}
	s.m[k] = v
	s.mu.Unlock()
}

// Forget drops the samples of the keys drop reports (a deleted topic's).
func (s *Samples[K]) Forget(drop func(K) bool) {
	s.mu.Lock()
	for k := range s.m {
		if drop(k) {
			delete(s.m, k)
		}
	}
	s.mu.Unlock()
}

// Ratios learns, per partition, how many stored bytes a Fetch reads for
// each Kafka byte it returns, so Fetch asks the store for about what its
// budget needs. A fixed factor cannot fit both ends: a 100-byte record
// grows by its 64-byte Iggy header and mapping headers (close to 2x), a
// 1 KiB one by a few percent, and asking Iggy for twice the budget there
// makes it read, send and the client discard a second budget's worth of
// messages on every fetch. The zero value is ready; any goroutine.
type Ratios struct {
	q   Samples[Key] // stored bytes per Kafka byte, x ratioOne
	bpr Samples[Key] // Kafka bytes per record
}

const (
	ratioOne = 1 << 10
	// ratioDefault is the factor for a partition not fetched yet: large
	// enough for the smallest records.
	ratioDefault = 2 * ratioOne
	// ratioSlack is added to a learned ratio: batches vary, and an
	// underfilled reply costs the client a round trip more.
	ratioSlack = ratioOne / 16
)

// StoreBudget is the store byte budget for a Kafka budget of kafka bytes.
func (r *Ratios) StoreBudget(k Key, kafka int) int {
	q, ok := r.q.Get(k)
	if !ok {
		q = ratioDefault
	} else {
		q += ratioSlack
	}
	if kafka > (1<<62)/int(q) {
		return 1 << 62 / ratioOne
	}
	return kafka * int(q) / ratioOne
}

// Learn records that stored bytes of the store gave kafka bytes of Kafka
// batches holding records records. Only a fetch that filled its budget
// says much about the ratio (a short one may end inside a batch), but
// every sample is kept; the last one wins.
func (r *Ratios) Learn(k Key, stored, kafka, records int) {
	if stored <= 0 || kafka <= 0 {
		return
	}
	q := uint64(stored) * ratioOne / uint64(kafka)
	q = min(max(q, ratioOne/4), 16*ratioOne)
	r.q.Put(k, uint32(q))
	if records > 0 {
		r.bpr.Put(k, uint32(min(kafka/records, 1<<30)))
	}
}

// Expect is how many bytes of Kafka batches a fetch of up to records
// records of k is likely to bring within a budget of kafka bytes, by the
// bytes per record k's last fetch learned (0: nothing learned): what the
// buffer the batches go in is worth reserving up front, so a large read
// does not grow it step by step, copying it each time.
func (r *Ratios) Expect(k Key, records uint64, kafka int) int {
	bpr, ok := r.bpr.Get(k)
	if !ok || kafka <= 0 {
		return 0
	}
	if records > uint64(kafka)/uint64(max(bpr, 1)) {
		return kafka
	}
	// A batch's header and a little slack over the sample.
	return min(kafka, int(records)*int(bpr)*9/8+codec.BatchHeaderLen)
}
