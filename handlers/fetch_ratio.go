package handlers

import "sync"

// fetchRatios learns, per partition, how many stored (Iggy) bytes a Fetch
// reads for each Kafka byte it returns, so fetchPartition asks the store
// for about what the budget needs. A fixed factor cannot fit both ends: a
// 100-byte record grows by its 64-byte Iggy header and mapping headers
// (close to 2x), a 1 KiB one by a few percent, and asking Iggy for twice
// the budget there makes it read, send and the client discard a second
// budget's worth of messages on every fetch. The zero value is ready; any
// goroutine.
type fetchRatios struct {
	mu sync.Mutex
	m  map[PartitionKey]uint32 // stored bytes per Kafka byte, x ratioOne
}

const (
	ratioOne = 1 << 10
	// ratioDefault is the factor for a partition not fetched yet: large
	// enough for the smallest records.
	ratioDefault = 2 * ratioOne
	// ratioSlack is added to a learned ratio: batches vary, and an
	// underfilled reply costs the client a round trip more.
	ratioSlack = ratioOne / 16
	// maxRatioKeys bounds the map; a cleared estimate is relearned by the
	// next fetch of the partition.
	maxRatioKeys = 1 << 16
)

// storeBudget is the store byte budget for a Kafka budget of kafka bytes.
func (r *fetchRatios) storeBudget(k PartitionKey, kafka int) int {
	r.mu.Lock()
	q, ok := r.m[k]
	r.mu.Unlock()
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

// learn records that stored bytes of the store gave kafka bytes of Kafka
// batches. Only a fetch that filled its budget says much about the ratio
// (a short one may end inside a batch), but every sample is kept; the last
// one wins.
func (r *fetchRatios) learn(k PartitionKey, stored, kafka int) {
	if stored <= 0 || kafka <= 0 {
		return
	}
	q := uint64(stored) * ratioOne / uint64(kafka)
	q = min(max(q, ratioOne/4), 16*ratioOne)
	r.mu.Lock()
	if r.m == nil {
		r.m = make(map[PartitionKey]uint32)
	}
	if _, ok := r.m[k]; !ok && len(r.m) >= maxRatioKeys {
		clear(r.m)
	}
	r.m[k] = uint32(q)
	r.mu.Unlock()
}
