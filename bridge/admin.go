package bridge

import (
	"context"
	"errors"
)

// ErrOffsetOutOfRange is returned by RecordDeleter.DeleteRecords for an
// offset past the partition's high watermark.
var ErrOffsetOutOfRange = errors.New("bridge: offset out of range")

// Optional Store capabilities for the Kafka admin keys. Like GroupOffsets
// they are separate interfaces; both bridge/embedded and bridge/iggy
// implement them and handlers find them with a type assertion, so a Store
// without one answers the admin key with an error code instead of failing
// to build. All methods may be called from any goroutine, concurrently.

// PartitionGrower adds partitions to an existing topic (Kafka
// CreatePartitions).
type PartitionGrower interface {
	// GrowPartitions adds empty partitions at the end of the topic until
	// it has total; the existing ones keep their data. It returns the
	// topic as it is afterwards. A total at or below the current count
	// changes nothing and returns the topic unchanged (the caller
	// decides what that means). ErrTopicNotFound when the topic is
	// missing.
	GrowPartitions(ctx context.Context, stream, topic string, total int32) (TopicInfo, error)
}

// RecordDeleter moves a partition's log start offset forward (Kafka
// DeleteRecords): offsets below it are no longer readable and
// Store.Partition reports it as Earliest from then on.
type RecordDeleter interface {
	// DeleteRecords makes before the partition's first readable offset
	// and returns the partition state afterwards. before must be at most
	// the high watermark (ErrOffsetOutOfRange otherwise); at or below the
	// current Earliest it changes nothing. The new start is durable when
	// it returns nil.
	DeleteRecords(ctx context.Context, stream, topic string, partition int32, before uint64) (PartitionState, error)
}

// SizeReporter tells how many bytes a topic's partitions hold (Kafka
// DescribeLogDirs).
type SizeReporter interface {
	// PartitionSizes returns the stored bytes of each partition of the
	// topic, index = partition. Estimates are fine: the numbers are for
	// display.
	PartitionSizes(ctx context.Context, stream, topic string) ([]int64, error)
}

// TrimNotifier is implemented by a Store that moves log starts by itself
// (the embedded store's retention sweeper). The gateway registers fn once,
// at start, to wake parked fetches whose offset fell below the new start;
// fn runs on the store's goroutine and must not block or call the store.
type TrimNotifier interface {
	OnTrim(fn func(stream, topic string, partition int32))
}

// TopicStater reads a topic and the state of every one of its partitions
// in one call. On Iggy one GetTopic answers both, where Topic and a
// Partition per partition are a round trip each (about 170 µs and as much
// server CPU against a topic holding data, BenchmarkPartitionReal), so
// Fetch asks it once per topic. The embedded store does not implement it:
// there a partition's state is one read of its own, and reading every
// partition to answer one would cost more.
type TopicStater interface {
	// TopicState returns the topic and its partitions' states, index =
	// partition, each as Partition would return it. ErrTopicNotFound when
	// the topic is missing.
	TopicState(ctx context.Context, stream, topic string) (TopicInfo, []PartitionState, error)
}

// AsTopicStater returns s as a TopicStater when it, or the store a Guarded
// wraps, has TopicState.
func AsTopicStater(s Store) (TopicStater, bool) {
	if g, ok := s.(*Guarded); ok {
		if _, ok := g.inner.(TopicStater); !ok {
			return nil, false
		}
		return g, true
	}
	ts, ok := s.(TopicStater)
	return ts, ok
}

// StagedAppender is implemented by a store that can take a batch this
// package's mapping built (EncodeKafkaRecords: well formed and checksummed
// by construction, its timestamps summed up in times) without verifying it
// again, and can tell when the batch is written from when it is durable.
// AppendStaged returns once the batch is written at the next offsets, in
// order with the partition's other appends; durable, when not nil, then
// waits until the batch is as durable as Append's return promises (and
// visible to readers, which may not see it before). A Produce so lets the
// connection's next request start while this one's fsync runs (the
// embedded store under SyncAlways), and verifies nothing twice.
type StagedAppender interface {
	AppendStaged(ctx context.Context, stream, topic string, partition int32, batch []byte, prep Prepared) (base uint64, durable func(context.Context) error, err error)
}
