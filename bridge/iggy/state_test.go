package iggy

import (
	"context"
	"slices"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

func TestStateTopic(t *testing.T) {
	t.Parallel()
	eachServer(t, testStateTopic)
}

// testStateTopic: a missing state stream reads as an empty topic; an
// append makes stream and topic and stores its messages in order with the
// ids they were given (a timeID carrying the message's own time in its
// first 8 bytes); a replay reads from any offset to the end and says
// where to read on.
func testStateTopic(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	st := &stateTopic{name: "state-test", what: "test records"}
	replay := func(from uint64) ([]string, uint64) {
		t.Helper()
		var got []string
		next, err := s.replayState(ctx, st, from, func(p []byte) { got = append(got, string(p)) })
		if err != nil {
			t.Fatal(err)
		}
		return got, next
	}
	if got, next := replay(0); len(got) != 0 || next != 0 {
		t.Fatalf("before the topic exists: %q %d", got, next)
	}
	fixed := [16]byte{1, 2, 3}
	if off, err := s.appendState(ctx, st, stateMsg{payload: []byte("a")}, stateMsg{id: fixed, payload: []byte("b")}); err != nil || off != 0 {
		t.Fatalf("first append: %d %v", off, err)
	}
	timed := stateMsg{timeID: true, payload: []byte("c")}
	le.PutUint64(timed.id[8:], 77)
	if off, err := s.appendState(ctx, st, timed); err != nil || off != 2 {
		t.Fatalf("second append: %d %v", off, err)
	}

	var msgs []bridge.IggyMessage
	if err := s.Poll(ctx, s.c.opts.StateStream, st.name, 0, 0, 1<<20, func(b []byte) bool {
		msgs = append(msgs, messagesOf(t, b)...)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 {
		t.Fatalf("%d messages stored, want 3", len(msgs))
	}
	if msgs[1].ID != fixed {
		t.Errorf("fixed id stored as %x", msgs[1].ID)
	}
	if id := msgs[2].ID; le.Uint64(id[:]) != msgs[2].OriginTimestamp || le.Uint64(id[8:]) != 77 {
		t.Errorf("time id %x, message time %d", id, msgs[2].OriginTimestamp)
	}

	if got, next := replay(0); !slices.Equal(got, []string{"a", "b", "c"}) || next != 3 {
		t.Fatalf("from 0: %q %d", got, next)
	}
	if got, next := replay(1); !slices.Equal(got, []string{"b", "c"}) || next != 3 {
		t.Fatalf("from 1: %q %d", got, next)
	}
	if got, next := replay(3); len(got) != 0 || next != 3 {
		t.Fatalf("from the end: %q %d", got, next)
	}
}
