package iggy

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// readSequentially reads partition 0 of topic from offset 0 to its end in
// polls of maxBytes, each starting where the last one ended, as a Kafka
// consumer's Fetches do, and returns every payload in order.
func readSequentially(t *testing.T, s *Store, stream, topic string, maxBytes int) []string {
	t.Helper()
	var out []string
	next := uint64(0)
	for range 1000 {
		before := next
		err := s.Poll(context.Background(), stream, topic, 0, next, maxBytes, func(b []byte) bool {
			for _, m := range messagesOf(t, b) {
				if m.Offset >= next {
					out = append(out, string(m.Payload))
					next = m.Offset + 1
				}
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if next == before {
			return out
		}
	}
	t.Fatal("read did not end")
	return nil
}

func appendBatches(t *testing.T, s *Store, stream, topic, tag string, batches, per int) []string {
	t.Helper()
	var want []string
	for i := range batches {
		if _, err := s.Append(context.Background(), stream, topic, 0, testBatch(t, tag, i*per, per)); err != nil {
			t.Fatal(err)
		}
		for j := range per {
			want = append(want, fmt.Sprintf("%s-%d", tag, i*per+j))
		}
	}
	return want
}

// A sequential reader gets exactly what it would without read-ahead, and
// read-ahead does serve it.
func TestReadAheadServesSequentialReader(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		e.topic(t, "ra", 1)
		want := appendBatches(t, e.store, e.stream, "ra", "m", 30, 10)
		for _, budget := range []int{1, 700, 3000, 1 << 20} {
			before := e.store.ahead.served.Load()
			got := readSequentially(t, e.store, e.stream, "ra", budget)
			if !slices.Equal(got, want) {
				t.Fatalf("budget %d: read %d messages, want %d (first difference at %d)", budget, len(got), len(want), firstDiff(got, want))
			}
			if budget < 1<<20 && e.store.ahead.served.Load() == before {
				t.Errorf("budget %d: no poll was served from read-ahead", budget)
			}
		}
	})
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A topic deleted and made again through this Store never reads the old
// topic's messages from a chunk polled before the delete.
func TestReadAheadForgetsDeletedTopic(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.topic(t, "rd", 1)
		appendBatches(t, e.store, e.stream, "rd", "old", 10, 10)
		// One small poll leaves a chunk for offset 10 onwards.
		first := pollAll(t, e.store, e.stream, "rd", 0, 0, 700)
		if len(first.offsets) == 0 {
			t.Fatal("nothing polled")
		}
		if err := e.store.DeleteTopic(ctx, e.stream, "rd"); err != nil {
			t.Fatal(err)
		}
		e.topic(t, "rd", 1)
		want := appendBatches(t, e.store, e.stream, "rd", "new", 10, 10)
		got := pollAll(t, e.store, e.stream, "rd", 0, first.offsets[len(first.offsets)-1]+1, 1<<20)
		if len(got.payloads) == 0 || got.payloads[0] != want[got.offsets[0]] {
			t.Fatalf("after re-creation read %v, want the new topic's %v", got.payloads, want)
		}
	})
}

// With read-ahead off nothing is held, and reads are the same.
func TestReadAheadOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.ReadAheadBytes = -1 })
	e.topic(t, "off", 1)
	want := appendBatches(t, e.store, e.stream, "off", "m", 10, 10)
	if got := readSequentially(t, e.store, e.stream, "off", 700); !slices.Equal(got, want) {
		t.Fatalf("read %v", got)
	}
	if n := e.store.ahead.served.Load(); n != 0 {
		t.Fatalf("read-ahead off served %d polls", n)
	}
}

// A reader that seeks back or jumps ahead of a chunk gets the messages at
// its offset, not the chunk's.
func TestReadAheadSeek(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		e.topic(t, "rs", 1)
		want := appendBatches(t, e.store, e.stream, "rs", "m", 20, 10)
		for _, from := range []uint64{150, 3, 0, 199, 42} {
			pollAll(t, e.store, e.stream, "rs", 0, 20, 700) // leaves a chunk after offset 20
			got := pollAll(t, e.store, e.stream, "rs", 0, from, 700)
			if len(got.offsets) == 0 || got.offsets[0] != from || got.payloads[0] != want[from] {
				t.Fatalf("poll from %d read offsets %v", from, got.offsets)
			}
		}
	})
}
