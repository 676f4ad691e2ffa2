package bridge

import "context"

// ProducerIDMarks is implemented by a Store that can keep the producer-id
// allocator's high-water mark (docs/IDEMPOTENCE.md). The gateway
// type-asserts its Store to it; a Store without it gets the clock-seeded
// allocator, which is unique only while fewer than one id per millisecond
// is issued on average.
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
