package iggy

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

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
