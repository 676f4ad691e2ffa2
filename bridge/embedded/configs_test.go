package embedded

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// Topic configs are part of the catalog entry: they survive a reopen, a
// partition change and a rename, and a topic made again starts with none.
func TestTopicConfigsPersist(t *testing.T) {
	t.Parallel()
	s, reopen := reopenableStore(t, SyncAlways)
	want := bridge.TopicConfigs{"cleanup.policy": "compact", "retention.ms": "1000"}
	if _, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 2, want); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "plain", 1); err != nil {
		t.Fatal(err)
	}
	got, err := s.TopicConfigs(ctx, "kafka", "t")
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("configs %v %v", got, err)
	}
	got["x"] = "caller's copy"
	want["segment.ms"] = "1"
	if err := s.SetTopicConfigs(ctx, "kafka", "t", want); err != nil {
		t.Fatal(err)
	}
	want["y"] = "not the store's"
	delete(want, "y")
	if _, err := s.SetPartitions(ctx, "kafka", "t", 3); err != nil {
		t.Fatal(err)
	}
	s = reopen()
	if got, err := s.TopicConfigs(ctx, "kafka", "t"); err != nil || !maps.Equal(got, want) {
		t.Fatalf("after reopen: %v %v, want %v", got, err, want)
	}
	if got, err := s.TopicConfigs(ctx, "kafka", "plain"); err != nil || len(got) != 0 {
		t.Fatalf("plain topic: %v %v", got, err)
	}
	if _, err := s.RenameTopic(ctx, "kafka", "t", "t2"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TopicConfigs(ctx, "kafka", "t2"); err != nil || !maps.Equal(got, want) {
		t.Fatalf("after rename: %v %v", got, err)
	}
	if err := s.DeleteTopic(ctx, "kafka", "t2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TopicConfigs(ctx, "kafka", "t2"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("deleted topic: %v", err)
	}
	if err := s.SetTopicConfigs(ctx, "kafka", "t2", want); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("set on deleted topic: %v", err)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "t2", 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.TopicConfigs(ctx, "kafka", "t2"); len(got) != 0 {
		t.Fatalf("made again: %v", got)
	}
}

// Group configs survive a reopen, are per stream and group, are
// independent of committed offsets (DeleteGroup keeps them, as Kafka
// does), and an empty set removes them.
func TestGroupConfigsPersist(t *testing.T) {
	t.Parallel()
	s, reopen := reopenableStore(t, SyncNever)
	if got, err := s.GroupConfigs(ctx, "kafka", "g"); err != nil || got != nil {
		t.Fatalf("unset: %v %v", got, err)
	}
	want := bridge.GroupConfigs{"consumer.session.timeout.ms": "50000"}
	if err := s.SetGroupConfigs(ctx, "kafka", "g", want); err != nil {
		t.Fatal(err)
	}
	if err := s.SetGroupConfigs(ctx, "other", "g", bridge.GroupConfigs{"consumer.heartbeat.interval.ms": "6000"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroupOffsets(ctx, "kafka", "g"); err != nil {
		t.Fatal(err)
	}
	// SyncNever for data: the config write syncs on its own.
	s = reopen()
	got, err := s.GroupConfigs(ctx, "kafka", "g")
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("after reopen: %v %v, want %v", got, err, want)
	}
	if err := s.SetGroupConfigs(ctx, "kafka", "a", want); err != nil {
		t.Fatal(err)
	}
	if gs, err := s.ConfiguredGroups(ctx, "kafka"); err != nil || !slices.Equal(gs, []string{"a", "g"}) {
		t.Fatalf("configured groups: %v %v", gs, err)
	}
	got["x"] = "the caller's copy"
	if again, _ := s.GroupConfigs(ctx, "kafka", "g"); !maps.Equal(again, want) {
		t.Fatalf("store aliased the caller's map: %v", again)
	}
	if got, _ := s.GroupConfigs(ctx, "other", "g"); got["consumer.heartbeat.interval.ms"] != "6000" || len(got) != 1 {
		t.Fatalf("other stream: %v", got)
	}
	if err := s.SetGroupConfigs(ctx, "kafka", "g", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GroupConfigs(ctx, "kafka", "g"); err != nil || got != nil {
		t.Fatalf("cleared: %v %v", got, err)
	}
	if gs, err := s.ConfiguredGroups(ctx, "kafka"); err != nil || !slices.Equal(gs, []string{"a"}) {
		t.Fatalf("configured groups after clearing g: %v %v", gs, err)
	}
	if err := s.SetGroupConfigs(ctx, "kafka", "", want); err == nil {
		t.Fatal("empty group name accepted")
	}
}
