package embedded

// Kafka group configs (bridge.GroupConfigStore), one key per group:
//
//	'g' u8 len(stream) stream group -> bridge.AppendTopicConfigs encoding
//
// Written with pebble.Sync whatever the sync policy: a config change is
// an admin act acknowledged to the operator, rare, and must survive a
// crash like a topic's configs do.

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

const prefixGroupConfig = 'g'

func groupConfigKey(stream, group string) []byte {
	k := make([]byte, 0, 2+len(stream)+len(group))
	k = append(k, prefixGroupConfig, byte(len(stream)))
	k = append(k, stream...)
	return append(k, group...)
}

// GroupConfigs implements bridge.GroupConfigStore. Any goroutine.
func (s *Store) GroupConfigs(ctx context.Context, stream, group string) (bridge.GroupConfigs, error) {
	if err := checkGroup(stream, group); err != nil {
		return nil, err
	}
	if err := s.enterRead(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	v, closer, err := s.db.Get(groupConfigKey(stream, group))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: group configs: %w", bridge.ErrUnavailable, err)
	}
	defer closer.Close()
	cfg, rest, err := bridge.ParseTopicConfigs(v)
	if err != nil || len(rest) != 0 {
		return nil, errCorrupt
	}
	return cfg, nil
}

// SetGroupConfigs implements bridge.GroupConfigStore; an empty set
// deletes the key. Any goroutine.
func (s *Store) SetGroupConfigs(ctx context.Context, stream, group string, cfg bridge.GroupConfigs) error {
	if err := checkGroup(stream, group); err != nil {
		return err
	}
	var val []byte
	if len(cfg) > 0 {
		var err error
		if val, err = bridge.AppendTopicConfigs(nil, cfg); err != nil {
			return err
		}
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	k := groupConfigKey(stream, group)
	var err error
	if val == nil {
		err = s.db.Delete(k, pebble.Sync)
	} else {
		err = s.db.Set(k, val, pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("%w: set group configs: %w", bridge.ErrUnavailable, err)
	}
	return nil
}

// ConfiguredGroups implements bridge.GroupConfigStore: one range scan
// over the stream's keys (already in name order). Any goroutine.
func (s *Store) ConfiguredGroups(ctx context.Context, stream string) ([]string, error) {
	if err := checkName("stream", stream); err != nil {
		return nil, err
	}
	if err := s.enterRead(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	lo := groupConfigKey(stream, "")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return nil, fmt.Errorf("%w: group configs: %w", bridge.ErrUnavailable, err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key()[len(lo):]))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("%w: group configs: %w", bridge.ErrUnavailable, err)
	}
	return out, nil
}
