package iggy

// Kafka topic configs on Iggy (docs/IGGY.md, Topic configs). Two that
// have a native equivalent live in the Iggy topic itself, so Iggy
// enforces them and native tools see them:
//
//   - retention.ms is message_expiry (ms to µs; -1 is "never").
//   - retention.bytes is max_topic_size. Kafka's limit is per partition,
//     Iggy's per topic, so the topic gets retention.bytes × partitions at
//     the time it is set and reads back as max_topic_size / partitions.
//   - segment.bytes is segment_size, set at creation only (Iggy cannot
//     change it). Iggy expires and trims whole sealed segments, so it
//     bounds how long records past retention stay readable.
//
// Every other config is kept in the state stream, topic TopicConfigTopic,
// one partition, one message per change holding the topic's whole set:
//
//	'C' u16 LE len stream, stream, u16 LE len topic, topic,
//	u32 LE topic id (bridge.TopicInfo.ID), bridge.AppendTopicConfigs
//
// The latest message for a (stream, topic, id) wins. The id tells a topic
// from an earlier one of the same name, so a topic made again starts with
// no configs. The store reads the topic once and then only what was
// appended since (other gateways sharing the server append too).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/iggy-kafka/gateway/bridge"
)

// TopicConfigTopic is the state-stream topic holding topic configs.
const TopicConfigTopic = "topic-configs"

var configState = stateTopic{name: TopicConfigTopic, what: "topic configs"}

// Kafka config names with a native Iggy option.
const (
	cfgRetentionMs    = "retention.ms"
	cfgRetentionBytes = "retention.bytes"
	cfgSegmentBytes   = "segment.bytes"
)

// Iggy's bounds of a topic's segment_size (its config.toml, [system.segment]).
const (
	minSegmentSize = 1 << 20
	maxSegmentSize = 1 << 30
)

type cfgKey struct {
	stream, topic string
	id            uint32
}

type groupCfgKey struct{ stream, group string }

// configCache is what the store has read of TopicConfigTopic.
type configCache struct {
	next   uint64 // first offset not read yet
	latest map[cfgKey]bridge.TopicConfigs
	groups map[groupCfgKey]bridge.GroupConfigs
}

// nativeOptions turns the native configs of cfg into topic options.
func nativeOptions(cfg bridge.TopicConfigs, partitions int32) ([]TopicOption, error) {
	var opts []TopicOption
	if v, ok := cfg[cfgRetentionMs]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < -1 {
			return nil, &bridge.ConfigError{Name: cfgRetentionMs, Reason: "must be -1 or a number of milliseconds"}
		}
		us := uint64(math.MaxUint64) // never expire
		switch {
		case ms == 0:
			us = 1 // 0 is Iggy's "server default"; the closest to "at once"
		case ms > 0 && ms <= math.MaxInt64/1000:
			us = uint64(ms) * 1000
		}
		opts = append(opts, OptUint64(OptMessageExpiry, us))
	}
	if v, ok := cfg[cfgRetentionBytes]; ok {
		b, err := strconv.ParseInt(v, 10, 64)
		if err != nil || b < -1 {
			return nil, &bridge.ConfigError{Name: cfgRetentionBytes, Reason: "must be -1 or a number of bytes"}
		}
		size := uint64(math.MaxUint64) // unlimited
		if b >= 0 {
			n := uint64(max(partitions, 1))
			if uint64(b) > (math.MaxUint64-1)/n {
				return nil, &bridge.ConfigError{Name: cfgRetentionBytes, Reason: "too large"}
			}
			size = uint64(b) * n
			if size == 0 {
				size = 1 // 0 is Iggy's "server default"; refused below the segment size anyway
			}
		}
		opts = append(opts, OptUint64(OptMaxTopicSize, size))
	}
	if v, ok := cfg[cfgSegmentBytes]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < minSegmentSize || n > maxSegmentSize || n%512 != 0 {
			return nil, &bridge.ConfigError{Name: cfgSegmentBytes, Reason: "Iggy's segment_size must be a multiple of 512 from 1048576 (1 MiB) to 1073741824 (1 GiB)"}
		}
		opts = append(opts, OptUint64(OptSegmentSize, uint64(n)))
	}
	return opts, nil
}

// segmentSize is the segment_size a topic was created with, if it set
// one: the explicit options only (the derived ones always hold the
// server's resolved size, which a topic that set none must not report).
func segmentSize(t *Topic) (uint64, bool) {
	it := bridge.NewUserHeaderIter(t.Options)
	for it.Next() {
		if string(it.Key()) == OptSegmentSize {
			if v, ok := optionUint(it.ValueKind(), it.Value()); ok && v != 0 {
				return v, true
			}
		}
	}
	return 0, false
}

// nativeConfigs reads the native configs back from a topic header: only
// the ones the topic really has (never-expiring and unlimited topics
// report nothing, so the default shows).
func nativeConfigs(t *Topic) bridge.TopicConfigs {
	cfg := bridge.TopicConfigs{}
	if e := t.MessageExpiry; e != 0 && e != math.MaxUint64 {
		cfg[cfgRetentionMs] = strconv.FormatUint((e+999)/1000, 10)
	}
	if m := t.MaxTopicSize; m != 0 && m != math.MaxUint64 {
		cfg[cfgRetentionBytes] = strconv.FormatUint(m/uint64(max(t.PartitionsCount, 1)), 10)
	}
	if n, ok := segmentSize(t); ok {
		cfg[cfgSegmentBytes] = strconv.FormatUint(n, 10)
	}
	return cfg
}

// optionRefusal names the config behind a refused native option.
func optionRefusal(err error, opts []TopicOption) error {
	var ie *Error
	if !errors.As(err, &ie) {
		return err
	}
	name := func(key string) string {
		switch key {
		case OptMaxTopicSize:
			return cfgRetentionBytes
		case OptSegmentSize:
			return cfgSegmentBytes
		}
		return cfgRetentionMs
	}
	switch ie.Code {
	case 1019:
		return &bridge.ConfigError{Name: cfgRetentionBytes, Reason: "Iggy refuses a max_topic_size (retention.bytes × partitions) under the topic's segment size (1 GiB by default): " + err.Error()}
	case 4041, 4042:
		if len(opts) == 1 {
			return &bridge.ConfigError{Name: name(opts[0].Key), Reason: "refused by Iggy: " + err.Error()}
		}
		return &bridge.ConfigError{Name: cfgRetentionMs + "/" + cfgRetentionBytes, Reason: "refused by Iggy: " + err.Error()}
	}
	return err
}

// splitConfigs splits cfg into the native configs and the ones kept in
// the state stream. A compacted topic that does not also delete
// (cleanup.policy=compact) keeps its retention configs in the state
// stream: the gateway never deletes from it, so Iggy must not expire it.
func splitConfigs(cfg bridge.TopicConfigs) (native, rest bridge.TopicConfigs) {
	rest = maps.Clone(cfg)
	if rest == nil {
		rest = bridge.TopicConfigs{}
	}
	native = bridge.TopicConfigs{}
	if v, ok := rest[cfgSegmentBytes]; ok {
		native[cfgSegmentBytes] = v
		delete(rest, cfgSegmentBytes)
	}
	if p, ok := cfg["cleanup.policy"]; ok && !strings.Contains(p, "delete") {
		return native, rest
	}
	for _, k := range []string{cfgRetentionMs, cfgRetentionBytes} {
		if v, ok := rest[k]; ok {
			native[k] = v
			delete(rest, k)
		}
	}
	return native, rest
}

// CreateTopicWithConfigs creates the topic with the native configs as
// topic options, then records the others in the state stream. If that
// record cannot be written the topic is deleted again, so no topic is left
// without the configs it was created with.
func (s *Store) CreateTopicWithConfigs(ctx context.Context, stream, topic string, partitions int32, cfg bridge.TopicConfigs) (bridge.TopicInfo, error) {
	if partitions < 0 {
		return bridge.TopicInfo{}, fmt.Errorf("iggy: %d partitions: %w", partitions, ErrTooManyPartitions)
	}
	nativeCfg, rest := splitConfigs(cfg)
	native, err := nativeOptions(nativeCfg, partitions)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	if len(rest) > 0 {
		// Checked before creating: a set that cannot be encoded fails
		// here, not after the topic exists.
		if _, err := bridge.AppendTopicConfigs(nil, rest); err != nil {
			return bridge.TopicInfo{}, err
		}
	}
	t, err := s.createTopicResent(ctx, stream, topic, uint32(partitions), native)
	if err != nil {
		return bridge.TopicInfo{}, optionRefusal(err, native)
	}
	ti := topicInfo(stream, &t)
	if len(rest) > 0 {
		if err := s.recordConfigs(ctx, ti, rest); err != nil {
			_ = s.c.DeleteTopic(ctx, Name(stream), Name(topic))
			return bridge.TopicInfo{}, fmt.Errorf("iggy: topic configs not recorded, topic deleted again: %w", err)
		}
	}
	return ti, nil
}

// createTopicResent is createTopicWith, sent once more on a fresh
// connection when the first one broke (outcome unknown); "already exists"
// on that second try means the first landed, and the topic is returned
// as created.
func (s *Store) createTopicResent(ctx context.Context, stream, topic string, partitions uint32, extra []TopicOption) (Topic, error) {
	t, err := s.createTopicWith(ctx, stream, topic, partitions, extra)
	if brokenConn(err) && ctx.Err() == nil {
		t, err = s.createTopicWith(ctx, stream, topic, partitions, extra)
		if errors.Is(err, ErrTopicExists) {
			if got, ok, gerr := s.c.GetTopic(ctx, Name(stream), Name(topic)); gerr == nil && ok {
				t, err = got, nil
			}
		}
	}
	return t, err
}

// createTopicWith is createTopic with extra topic options after the
// durability ones.
func (s *Store) createTopicWith(ctx context.Context, stream, topic string, partitions uint32, extra []TopicOption) (Topic, error) {
	if len(extra) == 0 {
		return s.createTopic(ctx, stream, topic, partitions)
	}
	var opts []TopicOption
	if d := s.c.opts.Durability; d != nil {
		opts = append(opts, OptBool(OptEnforceFsync, d.EnforceFsync), OptUint32(OptMessagesRequiredToSave, d.MessagesRequiredToSave))
	}
	opts = append(opts, extra...)
	t, err := s.c.CreateTopicWithOptions(ctx, Name(stream), topic, partitions, opts)
	if errors.Is(err, ErrStreamNotFound) {
		if _, err = s.c.CreateStream(ctx, stream); err != nil && !errors.Is(err, ErrStreamExists) {
			return Topic{}, err
		}
		t, err = s.c.CreateTopicWithOptions(ctx, Name(stream), topic, partitions, opts)
	}
	return t, err
}

// TopicConfigs returns the native configs from the topic header and the
// others from the state stream.
func (s *Store) TopicConfigs(ctx context.Context, stream, topic string) (bridge.TopicConfigs, error) {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return nil, err
	}
	cfg := nativeConfigs(&t)
	ti := topicInfo(stream, &t)
	rest, err := s.storedConfigs(ctx, cfgKey{stream, topic, ti.ID})
	if err != nil {
		return nil, err
	}
	// The state record holds retention only for a compact-only topic,
	// whose Iggy topic then has none.
	maps.Copy(cfg, rest)
	return cfg, nil
}

// SetTopicConfigs updates the native options when they change (UpdateTopic;
// a native config removed goes back to never / unlimited) and records the
// others when they change.
func (s *Store) SetTopicConfigs(ctx context.Context, stream, topic string, cfg bridge.TopicConfigs) error {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return err
	}
	ti := topicInfo(stream, &t)
	have := nativeConfigs(&t)
	want, rest := splitConfigs(cfg)
	if want[cfgSegmentBytes] != have[cfgSegmentBytes] {
		return &bridge.ConfigError{Name: cfgSegmentBytes, Reason: "Iggy cannot change a topic's segment_size once it is created"}
	}
	var opts []TopicOption
	for _, k := range []string{cfgRetentionMs, cfgRetentionBytes} {
		v, set := want[k]
		old, had := have[k]
		switch {
		case set && (!had || old != v):
			o, err := nativeOptions(bridge.TopicConfigs{k: v}, int32(t.PartitionsCount))
			if err != nil {
				return err
			}
			opts = append(opts, o...)
		case !set && had:
			key := OptMessageExpiry
			if k == cfgRetentionBytes {
				key = OptMaxTopicSize
			}
			opts = append(opts, OptUint64(key, math.MaxUint64))
		}
	}
	if len(opts) > 0 {
		if err := s.c.UpdateTopic(ctx, Name(stream), Name(topic), topic, opts); err != nil {
			return optionRefusal(err, opts)
		}
	}
	old, err := s.storedConfigs(ctx, cfgKey{stream, topic, ti.ID})
	if err != nil {
		return err
	}
	if maps.Equal(old, rest) { // nil and empty compare equal
		return nil
	}
	return s.recordConfigs(ctx, ti, rest)
}

// storedConfigs reads what was appended to TopicConfigTopic since the
// last call and returns key's latest set (a copy; nil when none). The
// cache lock is held across the poll, which c's deadline bounds; config
// reads are rare (admin requests, and group configs once a second per
// active consumer group).
func (s *Store) storedConfigs(ctx context.Context, key cfgKey) (bridge.TopicConfigs, error) {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if err := s.catchUpConfigs(ctx); err != nil {
		return nil, err
	}
	return maps.Clone(s.cfg.latest[key]), nil
}

// catchUpConfigs applies every record appended to TopicConfigTopic since
// the last call. s.cfgMu is held.
func (s *Store) catchUpConfigs(ctx context.Context) error {
	if s.cfg.latest == nil {
		s.cfg.latest = make(map[cfgKey]bridge.TopicConfigs)
		s.cfg.groups = make(map[groupCfgKey]bridge.GroupConfigs)
	}
	next, err := s.replayState(ctx, &configState, s.cfg.next, s.applyConfigRecord)
	s.cfg.next = next
	return err
}

// applyConfigRecord applies one TopicConfigTopic payload to the cache. A
// record this gateway cannot read (a newer layout) is skipped rather than
// failing every config read. s.cfgMu is held.
func (s *Store) applyConfigRecord(p []byte) {
	if k, cfg, ok := parseConfigRecord(p); ok {
		s.cfg.latest[k] = cfg
		return
	}
	if k, cfg, ok := parseGroupConfigRecord(p); ok {
		if len(cfg) == 0 {
			delete(s.cfg.groups, k)
		} else {
			s.cfg.groups[k] = cfg
		}
	}
}

// recordConfigs appends ti's config set to TopicConfigTopic, creating
// the topic on first use. Durable as the server's fsync setting makes a
// send.
func (s *Store) recordConfigs(ctx context.Context, ti bridge.TopicInfo, cfg bridge.TopicConfigs) error {
	payload, err := appendConfigRecord(nil, cfgKey{ti.Stream, ti.Name, ti.ID}, cfg)
	if err != nil {
		return err
	}
	return s.appendConfigPayload(ctx, payload, ti.ID)
}

// appendConfigPayload appends one record to TopicConfigTopic, creating
// the topic on first use; idTag goes into the message id beside the time.
func (s *Store) appendConfigPayload(ctx context.Context, payload []byte, idTag uint32) error {
	m := stateMsg{timeID: true, payload: payload}
	le.PutUint32(m.id[8:], idTag)
	_, err := s.appendState(ctx, &configState, m)
	return err
}

func appendConfigRecord(dst []byte, k cfgKey, cfg bridge.TopicConfigs) ([]byte, error) {
	dst, err := appendRecordHead(dst, 'C', k.stream, k.topic)
	if err != nil {
		return nil, err
	}
	dst = le.AppendUint32(dst, k.id)
	return bridge.AppendTopicConfigs(dst, cfg)
}

// parseConfigRecord reads a TopicConfigTopic payload; ok is false for
// anything malformed. Never panics; bounded by len(p).
func parseConfigRecord(p []byte) (k cfgKey, cfg bridge.TopicConfigs, ok bool) {
	if k.stream, k.topic, p, ok = cutRecordHead(p, 'C'); !ok || len(p) < 4 {
		return k, nil, false
	}
	k.id = le.Uint32(p)
	cfg, rest, err := bridge.ParseTopicConfigs(p[4:])
	if err != nil || len(rest) != 0 {
		return k, nil, false
	}
	return k, cfg, true
}

// appendRecordHead starts a config record: its kind, the stream and the
// topic or group, each name at most 255 bytes (else ErrNameLength).
func appendRecordHead(dst []byte, kind byte, stream, name string) ([]byte, error) {
	if len(stream) > 255 || len(name) > 255 {
		return nil, ErrNameLength
	}
	dst = append(dst, kind)
	dst = appendName16(dst, stream)
	return appendName16(dst, name), nil
}

// cutRecordHead reads what appendRecordHead wrote when p is a record of
// kind, and returns the rest.
func cutRecordHead(p []byte, kind byte) (stream, name string, rest []byte, ok bool) {
	if len(p) < 1 || p[0] != kind {
		return "", "", nil, false
	}
	if stream, p, ok = cutName16(p[1:]); !ok {
		return "", "", nil, false
	}
	name, p, ok = cutName16(p)
	return stream, name, p, ok
}

// appendName16 appends s as a u16 LE length and its bytes (the config
// records' name fields; the caller checked len(s) <= 255).
func appendName16(dst []byte, s string) []byte {
	dst = le.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

// cutName16 reads what appendName16 wrote and returns the rest; ok is
// false when p is too short or the name is over 255 bytes.
func cutName16(p []byte) (string, []byte, bool) {
	if len(p) < 2 {
		return "", nil, false
	}
	n := int(le.Uint16(p))
	if n > 255 || len(p) < 2+n {
		return "", nil, false
	}
	return string(p[2 : 2+n]), p[2+n:], true
}
