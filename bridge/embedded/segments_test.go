package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// segmentFiles lists the segment files of a partition's log directory.
func segmentFiles(t *testing.T, dir string, id uint32, part int) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "logs", fmt.Sprint(id), fmt.Sprint(part)))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestSegmentBytesRollsAndFrees: a topic's segment.bytes rolls its
// partitions' segments; DeleteRecords and retention free disk space a
// whole segment at a time (PartitionSizes is the real bytes on disk); a
// changed segment.bytes applies from the next roll decision; all of it
// survives a reopen.
func TestSegmentBytesRollsAndFrees(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var c fakeClock
	c.set(uint64(nowMicros()))
	s, reopen := reopenable(t, dir, func(dir string) *Store { return openSwept(t, dir, &c) })
	one := len(makeBatch(t, "x", 4, 1)) // 4 batches per 4 KiB segment
	info, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 2, bridge.TopicConfigs{"segment.bytes": fmt.Sprint(4 * one)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ { // offsets 0..159, 10 segments of 16 offsets
		if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 4, 1)); err != nil {
			t.Fatal(err)
		}
	}
	files := segmentFiles(t, dir, info.ID, 0)
	if len(files) != 10 || files[1] != "00000000000000000016.log" {
		t.Fatalf("segments %v, want 10 of 16 offsets", files)
	}
	if len(segmentFiles(t, dir, info.ID, 1)) != 0 {
		t.Fatal("an empty partition has segment files")
	}
	size := func() int64 {
		sizes, err := s.PartitionSizes(ctx, "kafka", "t")
		if err != nil {
			t.Fatal(err)
		}
		return sizes[0]
	}
	if size() != int64(40*one) {
		t.Fatalf("size %d, want %d", size(), 40*one)
	}
	// Inside the third segment: the first two go, the third stays whole.
	if st, err := s.DeleteRecords(ctx, "kafka", "t", 0, 40); err != nil || st.Earliest != 40 {
		t.Fatalf("delete records: %+v %v", st, err)
	}
	if files := segmentFiles(t, dir, info.ID, 0); len(files) != 8 || files[0] != "00000000000000000032.log" || size() != int64(32*one) {
		t.Fatalf("after delete to 40: %v, size %d", files, size())
	}
	if got := pollAll(t, s, "t", 0, 0); len(got) != 120 || got[0].offset != 40 {
		t.Fatalf("poll from 0 after delete to 40: %d messages from %v", len(got), got[0])
	}
	// Retention by bytes: 5 batches' worth keeps the last two segments
	// (and the batch before them, as the rule goes batch by batch).
	if err := s.SetTopicConfigs(ctx, "kafka", "t", bridge.TopicConfigs{"segment.bytes": fmt.Sprint(8 * one), "retention.bytes": fmt.Sprint(9 * one)}); err != nil {
		t.Fatal(err)
	}
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 124, Next: 160})
	if files := segmentFiles(t, dir, info.ID, 0); len(files) != 3 || files[0] != "00000000000000000112.log" {
		t.Fatalf("after retention: %v", files)
	}
	// The new segment.bytes applies at the next roll decision: the active
	// segment (4 batches from 144) takes 4 more, then one rolls at 176.
	for i := 0; i < 8; i++ {
		if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "y", 4, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if files := segmentFiles(t, dir, info.ID, 0); len(files) != 4 || files[3] != "00000000000000000176.log" {
		t.Fatalf("after appends at 8 batches a segment: %v", files)
	}
	s = reopen()
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 124, Next: 192})
	if got := pollAll(t, s, "t", 0, 124); len(got) != 68 || got[0].offset != 124 || got[67].payload != "y-3" {
		t.Fatalf("after reopen: %d messages", len(got))
	}
}

// TestLogDirectoriesFollowTheCatalog: DeleteTopic removes the topic's
// directory, a shrink its removed partitions', a partition added again
// starts empty even if a directory was left, and Open removes what a crash
// left behind: directories of deleted topics and of removed partitions.
func TestLogDirectoriesFollowTheCatalog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncAlways)
	a, _ := s.CreateTopic(ctx, "kafka", "a", 3)
	b, _ := s.CreateTopic(ctx, "kafka", "b", 1)
	for p := int32(0); p < 3; p++ {
		if _, err := s.Append(ctx, "kafka", "a", p, makeBatch(t, "a", 2, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, "kafka", "b", 0, makeBatch(t, "b", 2, 1)); err != nil {
		t.Fatal(err)
	}
	topicDir := func(id uint32) string { return filepath.Join(dir, "logs", fmt.Sprint(id)) }
	if err := s.DeleteTopic(ctx, "kafka", "b"); err != nil {
		t.Fatal(err)
	}
	if exists(topicDir(b.ID)) {
		t.Fatal("deleted topic's directory still there")
	}
	if _, err := s.SetPartitions(ctx, "kafka", "a", 1); err != nil {
		t.Fatal(err)
	}
	if exists(filepath.Join(topicDir(a.ID), "1")) || exists(filepath.Join(topicDir(a.ID), "2")) || !exists(filepath.Join(topicDir(a.ID), "0")) {
		t.Fatal("shrink left the wrong directories")
	}
	// A directory a shrink failed to remove does not come back as data.
	stale := filepath.Join(topicDir(a.ID), "1")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "00000000000000000000.log"), makeBatch(t, "stale", 1, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPartitions(ctx, "kafka", "a", 2); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Partition(ctx, "kafka", "a", 1); st.Next != 0 {
		t.Fatalf("re-added partition holds %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What a crash could leave: a deleted topic's directory, a removed
	// partition's, a space probe's file.
	for _, d := range []string{filepath.Join(topicDir(999), "0"), filepath.Join(topicDir(a.ID), "5")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", probeName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, SyncAlways)
	defer s.Close()
	for _, gone := range []string{topicDir(999), filepath.Join(topicDir(a.ID), "5"), filepath.Join(dir, "logs", probeName)} {
		if exists(gone) {
			t.Fatalf("%s survived Open", gone)
		}
	}
	if got := pollAll(t, s, "a", 0, 0); len(got) != 2 {
		t.Fatalf("kept partition: %v", got)
	}
}
