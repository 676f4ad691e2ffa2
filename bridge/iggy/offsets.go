package iggy

// Committed offsets of Kafka consumer groups (bridge.GroupOffsets) as Iggy
// consumer offsets, so native Iggy tools see them (docs/CONSUMER_GROUPS.md):
//
//   - Kafka group G is the Iggy consumer of kind 1 ("consumer") named
//     "kafka.cg.G" (GroupConsumerName); the server hashes the name to its
//     numeric id. The offset is on stream/topic/partition of the Kafka
//     topic, so `iggy consumer-offset get kafka.cg.G kafka T P`
//     shows it and a native consumer polling with that name resumes there.
//   - Iggy stores the last consumed offset, Kafka commits the next one: a
//     Kafka commit of N >= 1 is stored as N-1, and a stored S reads back
//     as S+1. A commit of N <= 0 (nothing consumed yet) deletes the Iggy
//     offset, so it reads back as "no committed offset" and the client's
//     auto.offset.reset decides.
//   - Iggy refuses an offset past the partition's last message (and any
//     offset on an empty partition): such a commit is
//     bridge.ErrOffsetNotStorable.
//   - Commit metadata, leader epoch and commit time are not kept.
//   - Iggy cannot list consumers, so OffsetGroups answers ok=false.

import (
	"context"
	"errors"

	"github.com/iggy-kafka/gateway/bridge"
)

// GroupConsumerPrefix starts the Iggy consumer name of every Kafka group.
const GroupConsumerPrefix = "kafka.cg."

// GroupConsumerName is the Iggy consumer name of Kafka group g.
func GroupConsumerName(g string) string { return GroupConsumerPrefix + g }

var _ bridge.GroupOffsets = (*Store)(nil)

func (s *Store) offsetRef(stream, group, topic string, partition int32) (*OffsetRef, bool) {
	if partition < 0 || !validName(stream) || !validName(topic) || !validName(GroupConsumerName(group)) {
		return nil, false
	}
	p := uint32(partition)
	return &OffsetRef{
		Consumer:  PlainConsumer(Name(GroupConsumerName(group))),
		Stream:    Name(stream),
		Topic:     Name(topic),
		Partition: &p,
	}, true
}

// CommitOffset stores o.Offset-1, or deletes the offset when o.Offset <= 0.
func (s *Store) CommitOffset(ctx context.Context, stream, group, topic string, partition int32, o bridge.CommittedOffset) error {
	ref, ok := s.offsetRef(stream, group, topic, partition)
	if !ok {
		return bridge.ErrPartitionNotFound
	}
	var err error
	if o.Offset <= 0 {
		err = s.c.DeleteConsumerOffset(ctx, ref)
		if errors.Is(err, ErrConsumerOffsetNotFound) {
			err = nil
		}
	} else {
		err = s.c.StoreConsumerOffset(ctx, ref, uint64(o.Offset-1))
		if errors.Is(err, ErrInvalidOffset) {
			return bridge.ErrOffsetNotStorable
		}
	}
	if errors.Is(err, ErrResourceNotFound) {
		return s.whichMissing(ctx, stream, topic, err)
	}
	return err
}

// FetchOffset reads the stored offset S and answers S+1.
func (s *Store) FetchOffset(ctx context.Context, stream, group, topic string, partition int32) (bridge.CommittedOffset, bool, error) {
	ref, ok := s.offsetRef(stream, group, topic, partition)
	if !ok {
		return bridge.CommittedOffset{}, false, nil
	}
	co, ok, err := s.c.GetConsumerOffset(ctx, ref)
	if errors.Is(err, ErrNotFound) || errors.Is(err, bridge.ErrTopicNotFound) || errors.Is(err, bridge.ErrPartitionNotFound) {
		return bridge.CommittedOffset{}, false, nil
	}
	if err != nil || !ok {
		return bridge.CommittedOffset{}, false, err
	}
	return bridge.CommittedOffset{Offset: int64(co.StoredOffset) + 1, LeaderEpoch: -1}, true, nil
}

// GroupOffsets reads the group's offset on every partition of every topic
// in stream: one GetConsumerOffset per partition.
func (s *Store) GroupOffsets(ctx context.Context, stream, group string) ([]bridge.GroupOffset, error) {
	ts, err := s.Topics(ctx, stream)
	if err != nil {
		return nil, err
	}
	var out []bridge.GroupOffset
	for _, t := range ts {
		for p := int32(0); p < t.Partitions; p++ {
			o, ok, err := s.FetchOffset(ctx, stream, group, t.Name, p)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, bridge.GroupOffset{Topic: t.Name, Partition: p, CommittedOffset: o})
			}
		}
	}
	return out, nil
}

// DeleteOffset deletes the stored offset; nil when none is stored.
func (s *Store) DeleteOffset(ctx context.Context, stream, group, topic string, partition int32) error {
	ref, ok := s.offsetRef(stream, group, topic, partition)
	if !ok {
		return nil
	}
	err := s.c.DeleteConsumerOffset(ctx, ref)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConsumerOffsetNotFound) ||
		errors.Is(err, bridge.ErrTopicNotFound) || errors.Is(err, bridge.ErrPartitionNotFound) {
		return nil
	}
	return err
}

// DeleteGroupOffsets deletes the group's offset on every partition of
// every topic in stream.
func (s *Store) DeleteGroupOffsets(ctx context.Context, stream, group string) error {
	offs, err := s.GroupOffsets(ctx, stream, group)
	if err != nil {
		return err
	}
	for _, o := range offs {
		if err := s.DeleteOffset(ctx, stream, group, o.Topic, o.Partition); err != nil {
			return err
		}
	}
	return nil
}

// OffsetGroups: Iggy cannot enumerate consumers.
func (s *Store) OffsetGroups(ctx context.Context, stream string) ([]string, bool, error) {
	return nil, false, nil
}
