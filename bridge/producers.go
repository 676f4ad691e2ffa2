package bridge

import "context"

// ProducerIDMarks keeps the producer-id allocator's high-water mark
// (docs/IDEMPOTENCE.md), so ids stay unique across restarts.
//
// A mark is a counter value: the allocator of that instance may have
// issued ids whose counter is below it, never at or above it.
type ProducerIDMarks interface {
	// LoadProducerIDMark returns the highest mark stored for instance, 0
	// when there is none.
	LoadProducerIDMark(ctx context.Context, instance uint16) (uint64, error)
	// StoreProducerIDMark records mark for instance. It must be durable
	// when it returns nil. A mark below the stored one is ignored.
	StoreProducerIDMark(ctx context.Context, instance uint16, mark uint64) error
}
