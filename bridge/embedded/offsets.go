package embedded

// Committed offsets of Kafka consumer groups (bridge.GroupOffsets). Keys:
//
//	'o' u8 len(stream) stream u8 len(group) group u32 BE topic id, u32 BE partition
//	  -> i64 offset, i32 leader epoch, i64 commit ms, metadata bytes
//
// Keyed by the topic's store id, not its name, so a topic deleted and made
// again does not inherit the old topic's offsets; offsets of a deleted topic
// are skipped on reads and removed with their group (DeleteOffset,
// GroupOffsets' callers).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

const prefixOffset = 'o'

// offsetGroupPrefix is the common prefix of one group's offset keys.
func offsetGroupPrefix(stream, group string) []byte {
	k := make([]byte, 0, 3+len(stream)+len(group)+8)
	k = append(k, prefixOffset, byte(len(stream)))
	k = append(k, stream...)
	k = append(k, byte(len(group)))
	return append(k, group...)
}

func offsetKey(stream, group string, topic uint32, partition int32) []byte {
	k := offsetGroupPrefix(stream, group)
	k = be.AppendUint32(k, topic)
	return be.AppendUint32(k, uint32(partition))
}

// prefixEnd is the smallest key above every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

func encodeCommitted(o bridge.CommittedOffset) []byte {
	v := make([]byte, 0, 20+len(o.Metadata))
	v = be.AppendUint64(v, uint64(o.Offset))
	v = be.AppendUint32(v, uint32(o.LeaderEpoch))
	v = be.AppendUint64(v, uint64(o.CommitTime))
	return append(v, o.Metadata...)
}

func decodeCommitted(v []byte) (bridge.CommittedOffset, error) {
	if len(v) < 20 {
		return bridge.CommittedOffset{}, errCorrupt
	}
	return bridge.CommittedOffset{
		Offset:      int64(be.Uint64(v)),
		LeaderEpoch: int32(be.Uint32(v[8:])),
		CommitTime:  int64(be.Uint64(v[12:])),
		Metadata:    string(v[20:]),
	}, nil
}

func checkGroup(stream, group string) error {
	if err := checkName("stream", stream); err != nil {
		return err
	}
	if len(group) == 0 || len(group) > 255 {
		return fmt.Errorf("embedded: group name must be 1..255 bytes")
	}
	return nil
}

// CommitOffset stores o under the topic's current id, with the store's sync
// policy.
func (s *Store) CommitOffset(ctx context.Context, stream, group, topic string, partition int32, o bridge.CommittedOffset) error {
	return s.CommitOffsets(ctx, stream, group, []bridge.GroupOffset{{Topic: topic, Partition: partition, CommittedOffset: o}})[0]
}

// CommitOffsets stores the offsets of the partitions that exist as one
// pebble write, with the store's sync policy (one sync under SyncAlways,
// one journal frame otherwise).
func (s *Store) CommitOffsets(ctx context.Context, stream, group string, offs []bridge.GroupOffset) []error {
	errs := make([]error, len(offs))
	fail := func(err error) []error {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return errs
	}
	if err := checkGroup(stream, group); err != nil {
		return fail(err)
	}
	if err := s.enterWrite(); err != nil {
		return fail(err)
	}
	defer s.exitWrite()
	ops := make([]journalOp, 0, len(offs))
	for i, o := range offs {
		t, _, err := s.lookupPartition(stream, o.Topic, o.Partition)
		if err != nil {
			errs[i] = err
			continue
		}
		ops = append(ops, journalOp{kind: journalSet, key: offsetKey(stream, group, t.info.ID, o.Partition), value: encodeCommitted(o.CommittedOffset)})
	}
	if len(ops) == 0 {
		return errs
	}
	if err := s.commitOps(ops, s.writeOpts); err != nil {
		return fail(fmt.Errorf("%w: commit offset: %w", bridge.ErrUnavailable, err))
	}
	return errs
}

// FetchOffset reads one committed offset.
func (s *Store) FetchOffset(ctx context.Context, stream, group, topic string, partition int32) (bridge.CommittedOffset, bool, error) {
	if checkGroup(stream, group) != nil {
		return bridge.CommittedOffset{}, false, nil
	}
	if err := s.enterRead(); err != nil {
		return bridge.CommittedOffset{}, false, err
	}
	defer s.ops.RUnlock()
	t, _, err := s.lookupPartition(stream, topic, partition)
	if err != nil {
		return bridge.CommittedOffset{}, false, nil
	}
	v, closer, err := s.db.Get(offsetKey(stream, group, t.info.ID, partition))
	if errors.Is(err, pebble.ErrNotFound) {
		return bridge.CommittedOffset{}, false, nil
	}
	if err != nil {
		return bridge.CommittedOffset{}, false, fmt.Errorf("%w: fetch offset: %w", bridge.ErrUnavailable, err)
	}
	defer closer.Close()
	o, err := decodeCommitted(v)
	if err != nil {
		return bridge.CommittedOffset{}, false, err
	}
	return o, true, nil
}

// GroupOffsets lists the group's offsets on topics that still exist.
func (s *Store) GroupOffsets(ctx context.Context, stream, group string) ([]bridge.GroupOffset, error) {
	if checkGroup(stream, group) != nil {
		return nil, nil
	}
	if err := s.enterRead(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	names := s.topicNamesByID(stream)
	lo := offsetGroupPrefix(stream, group)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, fmt.Errorf("%w: list offsets: %w", bridge.ErrUnavailable, err)
	}
	defer it.Close()
	var out []bridge.GroupOffset
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(lo)+8 {
			continue
		}
		id, part := be.Uint32(k[len(lo):]), int32(be.Uint32(k[len(lo)+4:]))
		name, live := names[id]
		if !live {
			continue
		}
		o, err := decodeCommitted(it.Value())
		if err != nil {
			return nil, err
		}
		out = append(out, bridge.GroupOffset{Topic: name, Partition: part, CommittedOffset: o})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("%w: list offsets: %w", bridge.ErrUnavailable, err)
	}
	slices.SortFunc(out, func(a, b bridge.GroupOffset) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out, nil
}

// topicNamesByID maps the stream's live topic ids to names.
func (s *Store) topicNamesByID(stream string) map[uint32]string {
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	m := make(map[uint32]string, len(s.topics[stream]))
	for name, t := range s.topics[stream] {
		m[t.info.ID] = name
	}
	return m
}

// DeleteOffset removes one committed offset (nil when none is stored or
// the topic is gone).
func (s *Store) DeleteOffset(ctx context.Context, stream, group, topic string, partition int32) error {
	if checkGroup(stream, group) != nil {
		return nil
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	t, err := s.lookup(stream, topic)
	if err != nil {
		return nil
	}
	op := journalOp{kind: journalDelete, key: offsetKey(stream, group, t.info.ID, partition)}
	if err := s.commitOps([]journalOp{op}, s.writeOpts); err != nil {
		return fmt.Errorf("%w: delete offset: %w", bridge.ErrUnavailable, err)
	}
	return nil
}

// DeleteGroupOffsets removes every offset of group, those of deleted
// topics included.
func (s *Store) DeleteGroupOffsets(ctx context.Context, stream, group string) error {
	if checkGroup(stream, group) != nil {
		return nil
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	lo := offsetGroupPrefix(stream, group)
	op := journalOp{kind: journalDeleteRange, key: lo, value: prefixEnd(lo)}
	if err := s.commitOps([]journalOp{op}, s.writeOpts); err != nil {
		return fmt.Errorf("%w: delete group offsets: %w", bridge.ErrUnavailable, err)
	}
	return nil
}

// OffsetGroups lists the groups with offsets in stream, sorted; a group
// whose only offsets are on deleted topics is listed too.
func (s *Store) OffsetGroups(ctx context.Context, stream string) ([]string, bool, error) {
	if checkName("stream", stream) != nil {
		return nil, true, nil
	}
	if err := s.enterRead(); err != nil {
		return nil, true, err
	}
	defer s.ops.RUnlock()
	sp := []byte{prefixOffset, byte(len(stream))}
	sp = append(sp, stream...)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: sp, UpperBound: prefixEnd(sp)})
	if err != nil {
		return nil, true, fmt.Errorf("%w: list groups: %w", bridge.ErrUnavailable, err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) <= len(sp) || len(k) < len(sp)+1+int(k[len(sp)]) {
			ok = it.Next()
			continue
		}
		gp := k[:len(sp)+1+int(k[len(sp)])]
		out = append(out, string(gp[len(sp)+1:]))
		// Skip the rest of this group's keys.
		ok = it.SeekGE(prefixEnd(gp))
	}
	if err := it.Error(); err != nil {
		return nil, true, fmt.Errorf("%w: list groups: %w", bridge.ErrUnavailable, err)
	}
	slices.Sort(out)
	return out, true, nil
}
