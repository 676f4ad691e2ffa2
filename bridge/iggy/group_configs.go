package iggy

// Kafka group configs on Iggy (bridge.GroupConfigStore). They share the
// state stream's TopicConfigTopic with topic configs, one message per
// change holding the group's whole set:
//
//	'G' u16 LE len stream, stream, u16 LE len group, group, bridge.AppendTopicConfigs
//
// The latest message for a (stream, group) wins; an empty set removes
// the group's entry. Gateways older than this layout skip 'G' records
// (parseConfigRecord refuses them), so the topic stays readable by them.

import (
	"context"
	"hash/crc32"
	"maps"
	"slices"

	"github.com/iggy-kafka/gateway/bridge"
)

// GroupConfigs implements bridge.GroupConfigStore: the latest set of the
// group after catching up with what every gateway appended. Any goroutine.
func (s *Store) GroupConfigs(ctx context.Context, stream, group string) (bridge.GroupConfigs, error) {
	if len(stream) > 255 || len(group) > 255 {
		return nil, ErrNameLength
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if err := s.catchUpConfigs(ctx); err != nil {
		return nil, err
	}
	return maps.Clone(s.cfg.groups[groupCfgKey{stream, group}]), nil
}

// SetGroupConfigs implements bridge.GroupConfigStore: it appends the new
// set when it differs from the latest one. Any goroutine.
func (s *Store) SetGroupConfigs(ctx context.Context, stream, group string, cfg bridge.GroupConfigs) error {
	payload, err := appendGroupConfigRecord(nil, groupCfgKey{stream, group}, cfg)
	if err != nil {
		return err
	}
	old, err := s.GroupConfigs(ctx, stream, group)
	if err != nil {
		return err
	}
	if maps.Equal(old, cfg) { // nil and empty compare equal
		return nil
	}
	return s.appendConfigPayload(ctx, payload, crc32.ChecksumIEEE([]byte(group)))
}

func appendGroupConfigRecord(dst []byte, k groupCfgKey, cfg bridge.GroupConfigs) ([]byte, error) {
	dst, err := appendRecordHead(dst, 'G', k.stream, k.group)
	if err != nil {
		return nil, err
	}
	return bridge.AppendTopicConfigs(dst, cfg)
}

// parseGroupConfigRecord reads a 'G' payload; ok is false for anything
// malformed, an empty stream or group name included. Never panics;
// bounded by len(p).
func parseGroupConfigRecord(p []byte) (k groupCfgKey, cfg bridge.GroupConfigs, ok bool) {
	if k.stream, k.group, p, ok = cutRecordHead(p, 'G'); !ok || k.stream == "" || k.group == "" {
		return k, nil, false
	}
	cfg, rest, err := bridge.ParseTopicConfigs(p)
	if err != nil || len(rest) != 0 {
		return k, nil, false
	}
	return k, cfg, true
}

// ConfiguredGroups implements bridge.GroupConfigStore. Any goroutine.
func (s *Store) ConfiguredGroups(ctx context.Context, stream string) ([]string, error) {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if err := s.catchUpConfigs(ctx); err != nil {
		return nil, err
	}
	var out []string
	for k := range s.cfg.groups {
		if k.stream == stream {
			out = append(out, k.group)
		}
	}
	slices.Sort(out)
	return out, nil
}
