// Package bridge is the Iggy side of the gateway: the Backend interface in
// Iggy's model (streams, topics, 0-based partitions, messages, consumer
// offsets), the deadline guard every backend runs under, and the one
// Kafka<->Iggy record mapping that both backends keep their batches in.
//
// Messages cross the Backend boundary as Iggy batches in Iggy's own send
// layout (PROTOCOL.md 6.10: a 256-byte batch header, then 48-byte message
// frames each followed by payload and user headers). The mapping in this
// package writes that layout straight from a Kafka record batch, so a real
// Iggy server receives the bytes unchanged and the embedded store keeps them
// as they are.
package bridge

import "errors"

// Errors a Backend returns. Handlers map them to Kafka error codes.
var (
	ErrTopicNotFound     = errors.New("bridge: topic not found")
	ErrTopicExists       = errors.New("bridge: topic already exists")
	ErrPartitionNotFound = errors.New("bridge: partition not found")
	ErrInvalidBatch      = errors.New("bridge: invalid iggy batch")
	ErrUnavailable       = errors.New("bridge: store unavailable")
	ErrClosed            = errors.New("bridge: store closed")
	// ErrNotPermitted: the store's own access control refused the call
	// (on Iggy: status 41, the gateway's Iggy user lacks the permission).
	// Kafka clients get the authorization error of the resource asked
	// for, never a generic error.
	ErrNotPermitted = errors.New("bridge: the store does not permit this")
	// ErrStorage: the store's storage failed (disk full, an I/O error, a
	// fatal engine error). Produce and Fetch answer KAFKA_STORAGE_ERROR,
	// which clients retry. Errors wrapping it also match ErrUnavailable.
	ErrStorage = &storageError{}
)

// storageError is ErrStorage; it also matches ErrUnavailable, so code that
// only knows "the store cannot serve now" treats it as transient.
type storageError struct{}

func (*storageError) Error() string        { return "bridge: storage failed" }
func (*storageError) Is(target error) bool { return target == ErrUnavailable }

// TopicInfo describes one Iggy topic.
type TopicInfo struct {
	Stream     string
	Name       string
	ID         uint32 // store-assigned, never reused by the embedded store
	Partitions int32
	CreatedAt  uint64 // µs since the epoch
}

// PartitionState is what a partition holds: offsets [Earliest, Next).
// Next is the high watermark: one past the last stored message.
type PartitionState struct {
	Earliest uint64
	Next     uint64
}
