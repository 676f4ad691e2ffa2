package bridge

import (
	"context"
	"errors"
)

// ErrNotSupported is a backend's answer to a call it cannot serve. Every
// backend implements the whole of Backend, so this is the one way to say
// "not here"; handlers answer it with the Kafka error a broker without the
// feature would send.
var ErrNotSupported = errors.New("bridge: the store does not support this")

// ErrOffsetOutOfRange is returned by DeleteRecords for an offset past the
// partition's high watermark.
var ErrOffsetOutOfRange = errors.New("bridge: offset out of range")

// Backend is the store a gateway serves Kafka from, in Iggy's model:
// streams, topics, 0-based partitions, messages, consumer offsets, and the
// gateway's own state beside them. The embedded store (bridge/embedded)
// and a real Iggy server (bridge/iggy) implement all of it; Guarded wraps
// one and is one. What differs between backends is how, never whether:
// Capabilities says.
//
// All methods may be called from any goroutine, concurrently. A method
// uses its ctx only until it returns: under the guard, the context of a
// call that finished in time serves a later call.
type Backend interface {
	Catalog
	Log
	GroupOffsets
	GroupConfigStore
	ProducerIDMarks
	SecurityLog
	TxnStateStore

	// Capabilities describes the backend. It never changes.
	Capabilities() Capabilities
	// Health returns the backend's state and a channel closed at its next
	// change. A backend without Capabilities.Health is always Healthy,
	// with a nil channel.
	Health() (Health, <-chan struct{})
	// OnTrim registers fn, once, at start: the backend calls it when it
	// moved a partition's log start by itself (the embedded store's
	// retention), so parked fetches below the new start wake. fn runs on
	// the backend's goroutine and must not block or call the backend. A
	// backend that never trims by itself never calls it.
	OnTrim(fn func(stream, topic string, partition int32))
	Close() error
}

// Capabilities is what is optional about a Backend: not which calls it
// serves (all of them) but how.
type Capabilities struct {
	// Format is how the backend keeps record batches (format.go).
	Format BatchFormat
	// StagedAppends: AppendStaged returns once the batch is written and
	// hands back a wait for its durability, so a Produce lets the
	// connection's next request start while its fsync runs (the embedded
	// store). Without it AppendStaged is Append, with nothing to wait for.
	StagedAppends bool
	// MemoryReads: Topic, Topics and Partition answer from memory and
	// never wait on the engine, so the guard calls them inline instead of
	// on a goroutine of their own (the embedded store).
	MemoryReads bool
	// Health: Health reports the state of the backend's storage (the
	// embedded store's disk). Without it the guard judges health from the
	// calls' answers.
	Health bool
	// BatchedCommits: CommitOffsets stores the commits of one request in
	// one write (Iggy: one group-log append), so the guard makes it one
	// call; without it the guard makes one CommitOffset call per entry.
	BatchedCommits bool
	// TopicStateInOneCall: TopicState costs one store call (Iggy: one
	// GetTopic answers the topic and every partition), where Topic and a
	// Partition per partition are a round trip each; Fetch then asks it
	// once per topic. Without it (the embedded store, where a partition's
	// state is one read of its own) Fetch reads each partition it needs.
	TopicStateInOneCall bool
}

// Catalog is a Backend's topics: their partitions and their configs.
type Catalog interface {
	// CreateTopic creates stream (if missing) and topic with n partitions.
	// ErrTopicExists when the topic is already there.
	CreateTopic(ctx context.Context, stream, topic string, partitions int32) (TopicInfo, error)
	// CreateTopicWithConfigs is CreateTopic that also keeps cfg (nil or
	// empty: none), atomically on stores that can: a topic is never seen
	// with only part of its configs. A config the backend cannot keep is
	// refused with a *ConfigError.
	CreateTopicWithConfigs(ctx context.Context, stream, topic string, partitions int32, cfg TopicConfigs) (TopicInfo, error)
	// DeleteTopic deletes the topic and its messages, never the stream.
	DeleteTopic(ctx context.Context, stream, topic string) error
	// Topic returns one topic or ErrTopicNotFound.
	Topic(ctx context.Context, stream, topic string) (TopicInfo, error)
	// Topics lists the stream's topics (none when the stream is missing).
	Topics(ctx context.Context, stream string) ([]TopicInfo, error)
	// TopicState returns the topic and its partitions' states, index =
	// partition, each as Partition would return it. ErrTopicNotFound when
	// the topic is missing. Capabilities.TopicStateInOneCall says whether
	// it is cheaper than Topic and a Partition each.
	TopicState(ctx context.Context, stream, topic string) (TopicInfo, []PartitionState, error)
	// GrowPartitions adds empty partitions at the end of the topic until
	// it has total (Kafka CreatePartitions); the existing ones keep their
	// data. It returns the topic as it is afterwards. A total at or below
	// the current count changes nothing and returns the topic unchanged
	// (the caller decides what that means). ErrTopicNotFound when the
	// topic is missing.
	GrowPartitions(ctx context.Context, stream, topic string, total int32) (TopicInfo, error)
	// PartitionSizes returns the stored bytes of each partition of the
	// topic, index = partition (Kafka DescribeLogDirs). Estimates are
	// fine: the numbers are for display.
	PartitionSizes(ctx context.Context, stream, topic string) ([]int64, error)
	// TopicConfigs returns the Kafka configs set on the topic (a fresh map
	// the caller owns), or ErrTopicNotFound. Configs belong to one
	// incarnation of a topic: a topic deleted and made again under the
	// same name starts with none.
	TopicConfigs(ctx context.Context, stream, topic string) (TopicConfigs, error)
	// SetTopicConfigs replaces the topic's configs with cfg.
	SetTopicConfigs(ctx context.Context, stream, topic string, cfg TopicConfigs) error
}

// Log is a Backend's partitions: appending, reading, and where they start
// and end.
type Log interface {
	// Append stores one batch in the backend's format (Capabilities.Format;
	// an Iggy batch, see the package doc) on a partition and returns the
	// offset of its first message. The store stamps partition id, base
	// offset and base timestamp in its own copy; batch is not retained
	// after Append returns. A nil error means the write is as durable as
	// the store's sync policy promises.
	Append(ctx context.Context, stream, topic string, partition int32, batch []byte) (baseOffset uint64, err error)
	// AppendStaged is Append for a batch the backend's format built
	// (Encode: well formed and checksummed by construction, its timestamps
	// summed up in prep), which the backend need not verify again. It
	// returns once the batch is written at the next offsets, in order with
	// the partition's other appends; durable, when not nil, then waits
	// until the batch is as durable as Append's return promises (and
	// visible to readers, which may not see it before). Without
	// Capabilities.StagedAppends, durable is always nil.
	AppendStaged(ctx context.Context, stream, topic string, partition int32, batch []byte, prep Prepared) (base uint64, durable func(context.Context) error, err error)
	// Poll calls fn with stored batches of the partition, in offset order,
	// starting with the batch that holds offset from, until fn returns
	// false, maxBytes of batches were passed, or the partition ends.
	// Batches may start before from; callers skip those messages. The
	// batch slice is valid only during fn.
	Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func(batch []byte) bool) error
	// Partition returns the partition's offsets.
	Partition(ctx context.Context, stream, topic string, partition int32) (PartitionState, error)
	// OffsetForTimestamp returns the first offset whose time (µs), the
	// one Fetch shows (SearchTime), is >= ts, or found=false when none
	// is.
	OffsetForTimestamp(ctx context.Context, stream, topic string, partition int32, ts uint64) (offset uint64, found bool, err error)
	// DeleteRecords moves the partition's log start to before (Kafka
	// DeleteRecords): offsets below it are no longer readable and
	// Partition reports it as Earliest from then on. It returns the
	// partition state afterwards. before must be at most the high
	// watermark (ErrOffsetOutOfRange otherwise); at or below the current
	// Earliest it changes nothing. The new start is durable when it
	// returns nil.
	DeleteRecords(ctx context.Context, stream, topic string, partition int32, before uint64) (PartitionState, error)
}
