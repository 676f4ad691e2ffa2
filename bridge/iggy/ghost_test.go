package iggy

import (
	"context"
	"testing"
	"time"
)

// A poll stops at messages the server stamped before the topic it read was
// made (a deleted topic's partitions still answering under its successor's
// name), so none reach the reader, through read-ahead or not; once the
// Store's lookup sees the incarnation that holds them, they are served.
func TestPollSkipsMessagesOlderThanTheirTopic(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		e.topic(t, "ghost", 1)
		want := appendBatches(t, e.store, e.stream, "ghost", "old", 20, 10)
		// What a lookup of a topic made again under the name records.
		e.store.born.note(e.stream, "ghost", uint64(time.Now().UnixMicro())+1)
		for _, budget := range []int{1, 700, 1 << 20} {
			if got := readSequentially(t, e.store, e.stream, "ghost", budget); len(got) != 0 {
				t.Fatalf("budget %d: %d messages older than the topic were served, first %q", budget, len(got), got[0])
			}
		}
		if _, err := e.store.Topic(context.Background(), e.stream, "ghost"); err != nil {
			t.Fatal(err)
		}
		if got := readSequentially(t, e.store, e.stream, "ghost", 700); len(got) != len(want) {
			t.Fatalf("after the lookup: %d messages served, want %d", len(got), len(want))
		}
	})
}

// The check holds only while the topic is young, so a server clock stepped
// back cannot hide a partition for longer than ghostWindow; a deleted topic
// is forgotten.
func TestBirthsFloor(t *testing.T) {
	var b births
	created := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	b.note("s", "t", uint64(created.UnixMicro()))
	if got := b.floor("s", "t", created.Add(ghostWindow-time.Microsecond)); got != uint64(created.UnixMicro()) {
		t.Errorf("young topic: floor %d, want its creation time", got)
	}
	if got := b.floor("s", "t", created.Add(ghostWindow)); got != 0 {
		t.Errorf("topic past the window: floor %d, want 0", got)
	}
	if got := b.floor("s", "other", created); got != 0 {
		t.Errorf("unknown topic: floor %d, want 0", got)
	}
	b.forget("s", "t")
	if got := b.floor("s", "t", created); got != 0 {
		t.Errorf("forgotten topic: floor %d, want 0", got)
	}
}

// Noting an unchanged birth, as every lookup does, allocates nothing.
func TestBirthsNoteDoesNotAllocate(t *testing.T) {
	var b births
	b.note("stream", "topic", 42)
	if n := testing.AllocsPerRun(100, func() { b.note("stream", "topic", 42) }); n != 0 {
		t.Errorf("note allocates %v times", n)
	}
}
