package embedded

import (
	"errors"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// TestSetPartitions: partitions are added empty and removed with their
// data, the new count survives a reopen, and a re-added partition starts
// empty (the old data does not come back).
func TestSetPartitions(t *testing.T) {
	t.Parallel()
	s, reopen := reopenableStore(t, SyncAlways)
	if _, err := s.CreateTopic(ctx, "kafka", "t", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, "a", 3, 1)); err != nil {
		t.Fatal(err)
	}
	if info, err := s.SetPartitions(ctx, "kafka", "t", 4); err != nil || info.Partitions != 4 {
		t.Fatalf("grow: %+v %v", info, err)
	}
	if got := pollAll(t, s, "t", 1, 0); len(got) != 3 {
		t.Fatalf("kept partition lost data: %v", got)
	}
	if off, err := s.Append(ctx, "kafka", "t", 3, makeBatch(t, "b", 2, 1)); err != nil || off != 0 {
		t.Fatalf("append to new partition: %d %v", off, err)
	}
	if _, err := s.SetPartitions(ctx, "kafka", "t", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, "c", 1, 1)); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Fatalf("append to removed partition: %v", err)
	}
	if _, err := s.SetPartitions(ctx, "kafka", "missing", 1); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("missing topic: %v", err)
	}
	s = reopen()
	if info, err := s.Topic(ctx, "kafka", "t"); err != nil || info.Partitions != 1 {
		t.Fatalf("after reopen: %+v %v", info, err)
	}
	if _, err := s.SetPartitions(ctx, "kafka", "t", 2); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Partition(ctx, "kafka", "t", 1); err != nil || st.Next != 0 {
		t.Fatalf("re-added partition not empty: %+v %v", st, err)
	}
}

// TestRenameTopic: the data follows the new name, the old name is free,
// and a taken name is refused.
func TestRenameTopic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncAlways)
	for _, n := range []string{"a", "b"} {
		if _, err := s.CreateTopic(ctx, "kafka", n, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, "kafka", "a", 0, makeBatch(t, "a", 2, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RenameTopic(ctx, "kafka", "a", "b"); !errors.Is(err, bridge.ErrTopicExists) {
		t.Fatalf("onto a taken name: %v", err)
	}
	if _, err := s.RenameTopic(ctx, "kafka", "a", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Topic(ctx, "kafka", "a"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("old name still there: %v", err)
	}
	s.Close()
	s = openStore(t, dir, SyncAlways)
	defer s.Close()
	if got := pollAll(t, s, "c", 0, 0); len(got) != 2 {
		t.Fatalf("renamed topic holds %v", got)
	}
}
