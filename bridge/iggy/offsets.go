package iggy

// Committed offsets of Kafka consumer groups (bridge.GroupOffsets), kept
// twice (docs/CONSUMER_GROUPS.md):
//
//   - As the Iggy consumer offset, so native Iggy tools see them: Kafka
//     group G is the Iggy consumer of kind 1 ("consumer") named
//     "kafka.cg.G" (GroupConsumerName) on stream/topic/partition of the
//     Kafka topic. Iggy stores the last consumed offset, Kafka commits the
//     next one: a commit of N >= 1 is stored as N-1, a stored S reads
//     back as S+1; a commit of N <= 0 deletes the Iggy offset. Iggy
//     refuses an offset past the partition's last message (and any offset
//     on an empty partition): bridge.ErrOffsetNotStorable.
//   - As a record in the group log (group_log.go), with what Iggy cannot
//     hold: the commit as made (0 included), metadata, leader epoch,
//     commit time, and the group's existence (OffsetGroups lists it).
//
// Which answers (resolve): the record when the native offset is its N-1;
// the native offset alone (no metadata) when a native tool or consumer
// moved it since; a commit of N <= 0 from the record alone, while the
// native offset is absent and the topic is the one committed on.

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/iggy-kafka/gateway/bridge"
)

// GroupConsumerPrefix starts the Iggy consumer name of every Kafka group.
const GroupConsumerPrefix = "kafka.cg."

// GroupConsumerName is the Iggy consumer name of Kafka group g.
func GroupConsumerName(g string) string { return GroupConsumerPrefix + g }

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

// CommitOffset moves the native offset (stores o.Offset-1, or deletes it
// when o.Offset <= 0), then appends the commit to the group log; it
// returns once both are stored. A commit of N <= 0 also records the
// topic's id, so it does not outlive the topic.
func (s *Store) CommitOffset(ctx context.Context, stream, group, topic string, partition int32, o bridge.CommittedOffset) error {
	rec, err := s.commitNative(ctx, stream, group, topic, partition, o)
	if err != nil {
		return err
	}
	return s.logRecords(ctx, []groupRecord{rec})
}

// CommitOffsets is CommitOffset for several partitions with one group-log
// append (in chunks of at most maxLogBatch bytes) for all whose native
// offset moved.
func (s *Store) CommitOffsets(ctx context.Context, stream, group string, offs []bridge.GroupOffset) []error {
	errs := make([]error, len(offs))
	recs := make([]groupRecord, 0, len(offs))
	idx := make([]int, 0, len(offs))
	for i := range offs {
		o := &offs[i]
		rec, err := s.commitNative(ctx, stream, group, o.Topic, o.Partition, o.CommittedOffset)
		if err != nil {
			errs[i] = err
			continue
		}
		recs = append(recs, rec)
		idx = append(idx, i)
	}
	if len(recs) > 0 {
		if err := s.logRecords(ctx, recs); err != nil {
			for _, i := range idx {
				errs[i] = err
			}
		}
	}
	return errs
}

// commitNative moves the native offset of one commit and returns the
// record to log for it.
func (s *Store) commitNative(ctx context.Context, stream, group, topic string, partition int32, o bridge.CommittedOffset) (groupRecord, error) {
	ref, ok := s.offsetRef(stream, group, topic, partition)
	if !ok || len(o.Metadata) > maxRecordMetadata {
		return groupRecord{}, bridge.ErrPartitionNotFound
	}
	rec := groupRecord{Kind: recCommit, Stream: stream, Group: group, Topic: topic, Partition: uint32(partition),
		Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, CommitTime: o.CommitTime, Metadata: o.Metadata}
	var err error
	if o.Offset <= 0 {
		t, terr := s.Topic(ctx, stream, topic)
		if terr != nil {
			return groupRecord{}, terr
		}
		if partition >= t.Partitions {
			return groupRecord{}, bridge.ErrPartitionNotFound
		}
		rec.TopicID = t.ID
		err = s.c.DeleteConsumerOffset(ctx, ref)
		if errors.Is(err, ErrConsumerOffsetNotFound) {
			err = nil
		}
	} else {
		err = s.c.StoreConsumerOffset(ctx, ref, uint64(o.Offset-1))
		if errors.Is(err, ErrInvalidOffset) {
			return groupRecord{}, bridge.ErrOffsetNotStorable
		}
	}
	if errors.Is(err, ErrResourceNotFound) {
		return groupRecord{}, s.whichMissing(ctx, stream, topic, err)
	}
	return rec, err
}

// nativeOffset reads the Iggy consumer offset: ok=false when none is
// stored or the topic or partition is gone.
func (s *Store) nativeOffset(ctx context.Context, ref *OffsetRef) (uint64, bool, error) {
	co, ok, err := s.c.GetConsumerOffset(ctx, ref)
	if errors.Is(err, ErrNotFound) || errors.Is(err, bridge.ErrTopicNotFound) || errors.Is(err, bridge.ErrPartitionNotFound) {
		return 0, false, nil
	}
	if err != nil || !ok {
		return 0, false, err
	}
	return co.StoredOffset, true, nil
}

// resolve joins the native offset and the log's record of one partition.
// topicID is asked for only when the record alone decides.
func resolve(native uint64, nok bool, e groupEntry, eok bool, topicID func() (uint32, bool, error)) (bridge.CommittedOffset, bool, error) {
	switch {
	case nok && eok && e.o.Offset >= 1 && uint64(e.o.Offset-1) == native:
		return e.o, true, nil
	case nok:
		return bridge.CommittedOffset{Offset: int64(native) + 1, LeaderEpoch: -1}, true, nil
	case eok && e.o.Offset <= 0:
		id, ok, err := topicID()
		if err != nil || !ok || id != e.topicID {
			return bridge.CommittedOffset{}, false, err
		}
		return e.o, true, nil
	}
	// A record of N >= 1 without its native offset: a native tool deleted
	// it, or the topic was deleted.
	return bridge.CommittedOffset{}, false, nil
}

// FetchOffset catches up with the group log, reads the native offset and
// answers as resolve says.
func (s *Store) FetchOffset(ctx context.Context, stream, group, topic string, partition int32) (bridge.CommittedOffset, bool, error) {
	ref, ok := s.offsetRef(stream, group, topic, partition)
	if !ok {
		return bridge.CommittedOffset{}, false, nil
	}
	if err := s.catchUp(ctx); err != nil {
		return bridge.CommittedOffset{}, false, err
	}
	native, nok, err := s.nativeOffset(ctx, ref)
	if err != nil {
		return bridge.CommittedOffset{}, false, err
	}
	e, eok := s.glog.entry(stream, group, topic, uint32(partition))
	return resolve(native, nok, e, eok, func() (uint32, bool, error) {
		t, err := s.Topic(ctx, stream, topic)
		if errors.Is(err, bridge.ErrTopicNotFound) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		return t.ID, partition < t.Partitions, nil
	})
}

// GroupOffsets reads the group's offset on every partition of every topic
// in stream (one GetConsumerOffset per partition), joined with the log.
func (s *Store) GroupOffsets(ctx context.Context, stream, group string) ([]bridge.GroupOffset, error) {
	if err := s.catchUp(ctx); err != nil {
		return nil, err
	}
	ts, err := s.Topics(ctx, stream)
	if err != nil {
		return nil, err
	}
	logged := s.glog.entries(stream, group)
	var out []bridge.GroupOffset
	for _, t := range ts {
		for p := int32(0); p < t.Partitions; p++ {
			ref, ok := s.offsetRef(stream, group, t.Name, p)
			if !ok {
				continue
			}
			native, nok, err := s.nativeOffset(ctx, ref)
			if err != nil {
				return nil, err
			}
			e, eok := logged[partKey{t.Name, uint32(p)}]
			o, ok, _ := resolve(native, nok, e, eok, func() (uint32, bool, error) { return t.ID, true, nil })
			if ok {
				out = append(out, bridge.GroupOffset{Topic: t.Name, Partition: p, CommittedOffset: o})
			}
		}
	}
	slices.SortFunc(out, func(a, b bridge.GroupOffset) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// deleteNative deletes the native offset; nil when none is stored.
func (s *Store) deleteNative(ctx context.Context, ref *OffsetRef) error {
	err := s.c.DeleteConsumerOffset(ctx, ref)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConsumerOffsetNotFound) ||
		errors.Is(err, bridge.ErrTopicNotFound) || errors.Is(err, bridge.ErrPartitionNotFound) {
		return nil
	}
	return err
}

// DeleteOffset deletes the native offset and logs the deletion; nil when
// none is stored.
func (s *Store) DeleteOffset(ctx context.Context, stream, group, topic string, partition int32) error {
	ref, ok := s.offsetRef(stream, group, topic, partition)
	if !ok {
		return nil
	}
	if err := s.deleteNative(ctx, ref); err != nil {
		return err
	}
	return s.logRecords(ctx, []groupRecord{{Kind: recDeleteOne, Stream: stream, Group: group, Topic: topic, Partition: uint32(partition)}})
}

// DeleteGroupOffsets deletes the group's native offset on every partition
// of every topic in stream, then logs the group's deletion (which drops it
// from OffsetGroups and its records of deleted topics too).
func (s *Store) DeleteGroupOffsets(ctx context.Context, stream, group string) error {
	if !validName(stream) || !validName(GroupConsumerName(group)) {
		return nil
	}
	offs, err := s.GroupOffsets(ctx, stream, group)
	if err != nil {
		return err
	}
	for _, o := range offs {
		ref, _ := s.offsetRef(stream, group, o.Topic, o.Partition)
		if err := s.deleteNative(ctx, ref); err != nil {
			return err
		}
	}
	return s.logRecords(ctx, []groupRecord{{Kind: recDeleteGroup, Stream: stream, Group: group}})
}

// OffsetGroups lists the groups with records in the group log (after a
// catch-up) on a partition of a topic that still exists (for a commit of
// N <= 0: the same topic, by id), so a group is not listed that
// DescribeGroups and DeleteGroups would not find. A group whose offsets only
// Iggy holds (committed natively, or by a gateway from before the log) is
// not among them.
func (s *Store) OffsetGroups(ctx context.Context, stream string) ([]string, bool, error) {
	if err := s.catchUp(ctx); err != nil {
		return nil, true, err
	}
	ts, err := s.Topics(ctx, stream)
	if err != nil {
		return nil, true, err
	}
	topics := make(map[string]bridge.TopicInfo, len(ts))
	for _, t := range ts {
		topics[t.Name] = t
	}
	return s.glog.names(stream, func(pk partKey, e groupEntry) bool {
		t, ok := topics[pk.topic]
		return ok && int64(pk.partition) < int64(t.Partitions) && (e.o.Offset >= 1 || e.topicID == t.ID)
	}), true, nil
}
