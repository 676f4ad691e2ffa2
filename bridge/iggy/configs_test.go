package iggy

import (
	"context"
	"errors"
	"maps"
	"math"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// Retention maps onto the Iggy topic's own message_expiry and
// max_topic_size; every other config is kept in the state stream; a
// compact-only topic keeps its retention there too (Iggy must not expire
// it). Both servers.
func TestTopicConfigs(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store
		cfg := bridge.TopicConfigs{"retention.ms": "3600000", "retention.bytes": "1073741824", "cleanup.policy": "delete", "segment.ms": "5"}
		e.configuredTopic(t, "ret", 2, cfg)
		tp, ok, err := s.c.GetTopic(ctx, Name(e.stream), Name("ret"))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if tp.MessageExpiry != 3600000*1000 || tp.MaxTopicSize != 2<<30 {
			t.Errorf("native: expiry %d max size %d", tp.MessageExpiry, tp.MaxTopicSize)
		}
		if want := e.opts.Durability; want != nil {
			if d, ok := tp.Durability(); !ok || !d.Keeps(*want) {
				t.Errorf("durability lost with extra options: %v %v", d, ok)
			}
		}
		got, err := s.TopicConfigs(ctx, e.stream, "ret")
		if err != nil || !maps.Equal(got, cfg) {
			t.Fatalf("configs %v %v, want %v", got, err, cfg)
		}
		// Change: retention.ms removed (never again), retention.bytes
		// kept, segment.ms changed.
		next := bridge.TopicConfigs{"retention.bytes": "1073741824", "cleanup.policy": "delete", "segment.ms": "6"}
		if err := s.SetTopicConfigs(ctx, e.stream, "ret", next); err != nil {
			t.Fatal(err)
		}
		tp, _, _ = s.c.GetTopic(ctx, Name(e.stream), Name("ret"))
		if tp.MessageExpiry != math.MaxUint64 || tp.MaxTopicSize != 2<<30 {
			t.Errorf("after set: expiry %d max size %d", tp.MessageExpiry, tp.MaxTopicSize)
		}
		if got, err := s.TopicConfigs(ctx, e.stream, "ret"); err != nil || !maps.Equal(got, next) {
			t.Fatalf("after set: %v %v, want %v", got, err, next)
		}
		// A second store (another gateway on the same server) reads them.
		other := e.another(t)
		if got, err := other.TopicConfigs(ctx, e.stream, "ret"); err != nil || !maps.Equal(got, next) {
			t.Fatalf("other gateway: %v %v", got, err)
		}

		compact := bridge.TopicConfigs{"cleanup.policy": "compact", "retention.ms": "1000"}
		e.configuredTopic(t, "cmp", 1, compact)
		tp, _, _ = s.c.GetTopic(ctx, Name(e.stream), Name("cmp"))
		if tp.MessageExpiry != 0 && tp.MessageExpiry != math.MaxUint64 {
			t.Errorf("a compacted topic expires: %d", tp.MessageExpiry)
		}
		if got, err := s.TopicConfigs(ctx, e.stream, "cmp"); err != nil || !maps.Equal(got, compact) {
			t.Fatalf("compact: %v %v", got, err)
		}

		// Below the segment size Iggy refuses max_topic_size: the
		// refusal names retention.bytes and no topic is left.
		_, err = s.CreateTopicWithConfigs(ctx, e.stream, "small", 1, bridge.TopicConfigs{"retention.bytes": "1000"})
		var ce *bridge.ConfigError
		if !errors.As(err, &ce) || ce.Name != "retention.bytes" {
			t.Fatalf("small retention.bytes: %v", err)
		}
		if _, err := s.Topic(ctx, e.stream, "small"); !errors.Is(err, bridge.ErrTopicNotFound) {
			t.Errorf("refused topic exists: %v", err)
		}
		if err := s.SetTopicConfigs(ctx, e.stream, "ret", bridge.TopicConfigs{"retention.bytes": "1000"}); !errors.As(err, &ce) || ce.Name != "retention.bytes" {
			t.Errorf("small retention.bytes by update: %v", err)
		}

		// Made again under the same name: no configs carried over.
		if err := s.DeleteTopic(ctx, e.stream, "ret"); err != nil {
			t.Fatal(err)
		}
		e.topic(t, "ret", 1)
		if got, err := s.TopicConfigs(ctx, e.stream, "ret"); err != nil || len(got) != 0 {
			t.Fatalf("made again: %v %v", got, err)
		}
		if _, err := s.TopicConfigs(ctx, e.stream, "missing"); !errors.Is(err, bridge.ErrTopicNotFound) {
			t.Errorf("missing: %v", err)
		}
	})
}

func TestConfigRecord(t *testing.T) {
	t.Parallel()
	checkConfigRecord(t, cfgKey{"kafka", "t", 7}, appendConfigRecord, parseConfigRecord)
}

// checkConfigRecord: a record of key k and config a=b, made by appendRec,
// parses back to both, and no shorter prefix of it parses. It returns the
// record.
func checkConfigRecord[K comparable, C ~map[string]string](t *testing.T, k K,
	appendRec func([]byte, K, C) ([]byte, error), parse func([]byte) (K, C, bool)) []byte {
	t.Helper()
	b, err := appendRec(nil, k, C{"a": "b"})
	if err != nil {
		t.Fatal(err)
	}
	gk, cfg, ok := parse(b)
	if !ok || gk != k || cfg["a"] != "b" {
		t.Fatalf("%v %v %v", gk, cfg, ok)
	}
	for i := range b {
		if _, _, ok := parse(b[:i]); ok {
			t.Errorf("truncated at %d parsed", i)
		}
	}
	return b
}
