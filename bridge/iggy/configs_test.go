package iggy

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
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

// Group configs are kept in the state stream beside topic configs: set,
// read back, seen by a second store on the same server (another gateway),
// cleared by an empty set, and topic configs in the same topic are not
// disturbed. Both servers.
func TestGroupConfigs(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store
		if got, err := s.GroupConfigs(ctx, e.stream, "g"); err != nil || got != nil {
			t.Fatalf("unset: %v %v", got, err)
		}
		tcfg := bridge.TopicConfigs{"segment.ms": "7"}
		e.configuredTopic(t, "t", 1, tcfg)
		want := bridge.GroupConfigs{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
		if err := s.SetGroupConfigs(ctx, e.stream, "g", want); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GroupConfigs(ctx, e.stream, "g"); err != nil || !maps.Equal(got, want) {
			t.Fatalf("got %v %v, want %v", got, err, want)
		}
		other := e.another(t)
		if got, err := other.GroupConfigs(ctx, e.stream, "g"); err != nil || !maps.Equal(got, want) {
			t.Fatalf("second store: %v %v, want %v", got, err, want)
		}
		if got, err := other.GroupConfigs(ctx, e.stream+"x", "g"); err != nil || got != nil {
			t.Fatalf("another stream: %v %v", got, err)
		}
		// Changed by the second store, seen by the first.
		next := bridge.GroupConfigs{"consumer.session.timeout.ms": "55000"}
		if err := other.SetGroupConfigs(ctx, e.stream, "g", next); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GroupConfigs(ctx, e.stream, "g"); err != nil || !maps.Equal(got, next) {
			t.Fatalf("after the other's change: %v %v, want %v", got, err, next)
		}
		if gs, err := s.ConfiguredGroups(ctx, e.stream); err != nil || !slices.Equal(gs, []string{"g"}) {
			t.Fatalf("configured groups: %v %v", gs, err)
		}
		if err := s.SetGroupConfigs(ctx, e.stream, "g", nil); err != nil {
			t.Fatal(err)
		}
		if got, err := other.GroupConfigs(ctx, e.stream, "g"); err != nil || got != nil {
			t.Fatalf("cleared: %v %v", got, err)
		}
		if gs, err := other.ConfiguredGroups(ctx, e.stream); err != nil || len(gs) != 0 {
			t.Fatalf("configured groups after clearing: %v %v", gs, err)
		}
		if got, err := other.TopicConfigs(ctx, e.stream, "t"); err != nil || !maps.Equal(got, tcfg) {
			t.Fatalf("topic configs beside them: %v %v", got, err)
		}
	})
}

func TestGroupConfigRecord(t *testing.T) {
	t.Parallel()
	b := checkConfigRecord(t, groupCfgKey{"kafka", "g"}, appendGroupConfigRecord, parseGroupConfigRecord)
	// A topic record is not a group record and the other way round.
	if _, _, ok := parseConfigRecord(b); ok {
		t.Error("group record parsed as a topic record")
	}
	tb, _ := appendConfigRecord(nil, cfgKey{"kafka", "t", 1}, nil)
	if _, _, ok := parseGroupConfigRecord(tb); ok {
		t.Error("topic record parsed as a group record")
	}
}

// FuzzGroupConfigRecord: any payload parses or is refused, never panics,
// and what parses encodes back to a record that parses to the same thing
// (the encoding sorts configs by name, so the bytes may differ).
func FuzzGroupConfigRecord(f *testing.F) {
	b, _ := appendGroupConfigRecord(nil, groupCfgKey{"kafka", "g"}, bridge.GroupConfigs{"consumer.session.timeout.ms": "50000"})
	f.Add(b)
	f.Add([]byte("G"))
	f.Fuzz(func(t *testing.T, p []byte) {
		k, cfg, ok := parseGroupConfigRecord(p)
		if !ok {
			return
		}
		again, err := appendGroupConfigRecord(nil, k, cfg)
		if err != nil {
			t.Fatalf("parsed but cannot encode: %v", err)
		}
		k2, cfg2, ok := parseGroupConfigRecord(again)
		if !ok || k2 != k || !maps.Equal(cfg2, cfg) {
			t.Fatalf("round trip differs: %v %v %v, want %v %v", ok, k2, cfg2, k, cfg)
		}
	})
}
