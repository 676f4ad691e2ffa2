package embedded

import (
	"errors"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// rawBatches counts the batches a partition still holds for readers:
// those ending above its log start (a batch straddling the start counts).
// Pebble range-deleted the batches below the start one by one; the
// segment log removes whole segments below it (TestDeleteRecordsSegments)
// and hides the batches below it in the segment that stays.
func rawBatches(t *testing.T, s *Store, id uint32, part uint32) int {
	t.Helper()
	for _, byName := range s.topics {
		for _, tp := range byName {
			if tp.info.ID == id {
				return len(liveBases(t, tp.parts[part]))
			}
		}
	}
	t.Fatalf("no topic %d", id)
	return 0
}

// liveBases lists the base offsets of a partition's batches that end
// above its log start; liveBytes sums their lengths.
func liveBases(t *testing.T, p *partition) []uint64 {
	t.Helper()
	var out []uint64
	walkLive(t, p, func(v bridge.BatchView) { out = append(out, v.BaseOffset) })
	return out
}

func liveBytes(t *testing.T, p *partition) int64 {
	t.Helper()
	var n int64
	walkLive(t, p, func(v bridge.BatchView) { n += int64(v.Length) })
	return n
}

func walkLive(t *testing.T, p *partition, fn func(bridge.BatchView)) {
	t.Helper()
	start := p.log.Start()
	err := p.log.Read(0, 1<<40, func(b []byte) bool {
		v, err := bridge.VerifyIggyBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if v.BaseOffset+uint64(v.Count) > start {
			fn(v)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeleteRecords: the log start moves forward only, batches wholly
// below it are removed, a batch straddling it stays with its lower offsets
// hidden, the start survives a reopen (also when every batch went), new
// appends continue the offsets, and an offset past the high watermark is
// refused.
func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncAlways)
	info, err := s.CreateTopic(ctx, "kafka", "t", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"a", "b", "c"} { // offsets 0-2, 3-5, 6-8
		if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, tag, 3, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteRecords(ctx, "kafka", "t", 0, 10); !errors.Is(err, bridge.ErrOffsetOutOfRange) {
		t.Fatalf("past the high watermark: %v", err)
	}
	st, err := s.DeleteRecords(ctx, "kafka", "t", 0, 4)
	if err != nil || st != (bridge.PartitionState{Earliest: 4, Next: 9}) {
		t.Fatalf("delete to 4: %+v %v", st, err)
	}
	if n := rawBatches(t, s, info.ID, 0); n != 2 {
		t.Fatalf("%d batches stored after delete to 4, want 2 (the straddling one kept)", n)
	}
	if st, err := s.DeleteRecords(ctx, "kafka", "t", 0, 2); err != nil || st.Earliest != 4 {
		t.Fatalf("a lower start moved it back: %+v %v", st, err)
	}
	if off, found, err := s.OffsetForTimestamp(ctx, "kafka", "t", 0, 0); err != nil || !found || off != 4 {
		t.Fatalf("timestamp lookup below the start: %d %v %v", off, found, err)
	}
	if _, err := s.DeleteRecords(ctx, "kafka", "t", 5, 0); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Fatalf("missing partition: %v", err)
	}
	s.Close()

	s = openStore(t, dir, SyncAlways)
	if st, _ := s.Partition(ctx, "kafka", "t", 0); st != (bridge.PartitionState{Earliest: 4, Next: 9}) {
		t.Fatalf("after reopen: %+v", st)
	}
	if st, err := s.DeleteRecords(ctx, "kafka", "t", 0, 9); err != nil || st != (bridge.PartitionState{Earliest: 9, Next: 9}) {
		t.Fatalf("delete all: %+v %v", st, err)
	}
	if n := rawBatches(t, s, info.ID, 0); n != 0 {
		t.Fatalf("%d batches left after deleting all", n)
	}
	s.Close()

	s = openStore(t, dir, SyncAlways)
	defer s.Close()
	if st, _ := s.Partition(ctx, "kafka", "t", 0); st != (bridge.PartitionState{Earliest: 9, Next: 9}) {
		t.Fatalf("empty partition after reopen: %+v", st)
	}
	if off, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "d", 1, 1)); err != nil || off != 9 {
		t.Fatalf("append after delete-all reused offsets: %d %v", off, err)
	}
	if got := pollAll(t, s, "t", 0, 9); len(got) != 1 || got[0].payload != "d-0" {
		t.Fatalf("read after delete-all: %v", got)
	}
	// A recreated topic does not inherit the old start.
	if err := s.DeleteTopic(ctx, "kafka", "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "t", 1); err != nil {
		t.Fatal(err)
	}
	if off, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "e", 1, 1)); err != nil || off != 0 {
		t.Fatalf("recreated topic: %d %v", off, err)
	}
}

// TestGrowPartitions: growing adds empty partitions and keeps data; a
// total at or below the count changes nothing (never shrinks).
func TestGrowPartitions(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncAlways, 2)
	if _, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, "a", 2, 1)); err != nil {
		t.Fatal(err)
	}
	if info, err := s.GrowPartitions(ctx, "kafka", "t", 1); err != nil || info.Partitions != 2 {
		t.Fatalf("grow to 1: %+v %v", info, err)
	}
	if info, err := s.GrowPartitions(ctx, "kafka", "t", 5); err != nil || info.Partitions != 5 {
		t.Fatalf("grow to 5: %+v %v", info, err)
	}
	if got := pollAll(t, s, "t", 1, 0); len(got) != 2 {
		t.Fatalf("data lost: %v", got)
	}
	if _, err := s.GrowPartitions(ctx, "kafka", "missing", 5); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("missing topic: %v", err)
	}
	sizes, err := s.PartitionSizes(ctx, "kafka", "t")
	if err != nil || len(sizes) != 5 || sizes[1] <= 0 || sizes[0] != 0 {
		t.Fatalf("sizes %v %v", sizes, err)
	}
}
