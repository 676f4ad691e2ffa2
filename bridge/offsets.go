package bridge

import (
	"context"
	"errors"
)

// ErrOffsetNotStorable is returned by a GroupOffsets that cannot keep the
// committed offset asked for (an Iggy server refuses an offset past the
// partition's last message).
var ErrOffsetNotStorable = errors.New("bridge: committed offset cannot be stored")

// CommittedOffset is a Kafka consumer group's position in one partition.
// Offset has Kafka's meaning: the next offset the group will consume.
type CommittedOffset struct {
	Offset      int64
	LeaderEpoch int32  // -1 when unknown
	Metadata    string // the client's commit metadata
	CommitTime  int64  // ms since the epoch; 0 when unknown
}

// GroupOffset is one committed offset of a group.
type GroupOffset struct {
	Topic     string
	Partition int32
	CommittedOffset
}

// GroupOffsets keeps the committed offsets of Kafka consumer groups in the
// backend, so they survive a gateway restart. Group membership is not
// stored: it is the gateway's soft state.
type GroupOffsets interface {
	// CommitOffset stores o for group on topic/partition, replacing what
	// was there. ErrTopicNotFound or ErrPartitionNotFound when the
	// partition does not exist; ErrOffsetNotStorable when the backend
	// cannot keep that offset.
	CommitOffset(ctx context.Context, stream, group, topic string, partition int32, o CommittedOffset) error
	// CommitOffsets stores each of offs for group as CommitOffset would
	// and returns one error per entry, in order (nil: stored); with
	// Capabilities.BatchedCommits in one write.
	CommitOffsets(ctx context.Context, stream, group string, offs []GroupOffset) []error
	// FetchOffset returns the committed offset, ok=false when none is
	// stored (or the partition does not exist).
	FetchOffset(ctx context.Context, stream, group, topic string, partition int32) (o CommittedOffset, ok bool, err error)
	// GroupOffsets lists every committed offset of group on existing
	// topics, sorted by topic and partition.
	GroupOffsets(ctx context.Context, stream, group string) ([]GroupOffset, error)
	// DeleteOffset removes one committed offset; nil when none was stored.
	DeleteOffset(ctx context.Context, stream, group, topic string, partition int32) error
	// DeleteGroupOffsets removes every committed offset of group.
	DeleteGroupOffsets(ctx context.Context, stream, group string) error
	// OffsetGroups lists the groups holding committed offsets in stream,
	// sorted, or ok=false when the backend cannot enumerate them.
	OffsetGroups(ctx context.Context, stream string) (groups []string, ok bool, err error)
}
