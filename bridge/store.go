// Package bridge is the Iggy side of the gateway: the Store interface in
// Iggy's model (streams, topics, 0-based partitions, messages, consumer
// offsets) and the one Kafka<->Iggy record mapping that every Store sees.
//
// Messages cross the Store boundary as Iggy batches in Iggy's own send
// layout (PROTOCOL.md 6.10: a 256-byte batch header, then 48-byte message
// frames each followed by payload and user headers). The mapping in this
// package writes that layout straight from a Kafka record batch, so a real
// Iggy server receives the bytes unchanged and the embedded store keeps them
// as they are.
package bridge

import (
	"context"
	"errors"
)

// Errors a Store returns. Handlers map them to Kafka error codes.
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

// Store is the Iggy model a gateway serves Kafka from. Implementations: the
// embedded store (bridge/embedded) and a real Iggy server (bridge/iggy).
//
// All methods may be called from any goroutine, concurrently.
type Store interface {
	// CreateTopic creates stream (if missing) and topic with n partitions.
	// ErrTopicExists when the topic is already there.
	CreateTopic(ctx context.Context, stream, topic string, partitions int32) (TopicInfo, error)
	// DeleteTopic deletes the topic and its messages, never the stream.
	DeleteTopic(ctx context.Context, stream, topic string) error
	// Topic returns one topic or ErrTopicNotFound.
	Topic(ctx context.Context, stream, topic string) (TopicInfo, error)
	// Topics lists the stream's topics (none when the stream is missing).
	Topics(ctx context.Context, stream string) ([]TopicInfo, error)

	// Append stores one Iggy batch (see package doc) on a partition and
	// returns the offset of its first message. The store stamps partition
	// id, base offset and base timestamp in its own copy; batch is not
	// retained after Append returns. A nil error means the write is as
	// durable as the store's sync policy promises.
	Append(ctx context.Context, stream, topic string, partition int32, batch []byte) (baseOffset uint64, err error)

	// Poll calls fn with stored Iggy batches of the partition, in offset
	// order, starting with the batch that holds offset from, until fn
	// returns false, maxBytes of batches were passed, or the partition
	// ends. Batches may start before from; callers skip those messages.
	// The batch slice is valid only during fn.
	Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func(batch []byte) bool) error

	// Partition returns the partition's offsets.
	Partition(ctx context.Context, stream, topic string, partition int32) (PartitionState, error)

	// OffsetForTimestamp returns the first offset whose origin timestamp
	// (µs) is >= ts, or found=false when none is.
	OffsetForTimestamp(ctx context.Context, stream, topic string, partition int32, ts uint64) (offset uint64, found bool, err error)

	Close() error
}
