package iggy

import (
	"context"
	"slices"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

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

// testProducerIDMarks: each instance's mark is the highest it stored, and
// a new client (a restarted gateway) reads the same marks.
func testProducerIDMarks(t *testing.T, e *env) {
	ctx := context.Background()
	if m, err := e.store.LoadProducerIDMark(ctx, 3); err != nil || m != 0 {
		t.Fatalf("empty: %d, %v", m, err)
	}
	for _, step := range []struct {
		inst uint16
		mark uint64
	}{{3, 100}, {4, 5000}, {3, 70_000}, {3, 500}} {
		if err := e.store.StoreProducerIDMark(ctx, step.inst, step.mark); err != nil {
			t.Fatalf("store %+v: %v", step, err)
		}
	}
	if m, err := e.store.LoadProducerIDMark(ctx, 3); err != nil || m != 70_000 {
		t.Fatalf("instance 3: %d, %v", m, err)
	}
	if m, err := e.store.LoadProducerIDMark(ctx, 4); err != nil || m != 5000 {
		t.Fatalf("instance 4: %d, %v", m, err)
	}
	// A new client (a restarted gateway) reads the same marks.
	s2 := e.another(t)
	if m, err := s2.LoadProducerIDMark(ctx, 3); err != nil || m != 70_000 {
		t.Fatalf("after reconnect: %d, %v", m, err)
	}
}

// testSecurityLog: the security log lives in the state stream: a second
// store on the same server (another gateway) reads what the first
// appended, and a read from a position sees only what came after.
func testSecurityLog(t *testing.T, e *env) {
	ctx := context.Background()
	read := func(s *Store, from uint64) ([]string, uint64) {
		t.Helper()
		var got []string
		next, err := s.ReadSecurityRecords(ctx, from, func(r []byte) { got = append(got, string(r)) })
		if err != nil {
			t.Fatal(err)
		}
		return got, next
	}
	if got, next := read(e.store, 0); len(got) != 0 || next != 0 {
		t.Fatalf("before the topic exists: %q %d", got, next)
	}
	for _, r := range []string{"one", "two"} {
		if err := e.store.AppendSecurityRecord(ctx, []byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	other := e.another(t)
	got, next := read(other, 0)
	if len(got) != 2 || got[1] != "two" || next != 2 {
		t.Fatalf("other store: %q %d", got, next)
	}
	if err := other.AppendSecurityRecord(ctx, []byte("three")); err != nil {
		t.Fatal(err)
	}
	if got, next := read(e.store, 2); len(got) != 1 || got[0] != "three" || next != 3 {
		t.Fatalf("from 2: %q %d", got, next)
	}
}

// TestStateStream runs the scenarios of the state stream below on both
// servers, each a subtest of its own: the state topic, and the records the
// gateway keeps there (producer id marks, the security log).
func TestStateStream(t *testing.T) {
	t.Parallel()
	eachScenario(t,
		serverScenario{"Topic", testStateTopic},
		serverScenario{"ProducerIDMarks", testProducerIDMarks},
		serverScenario{"SecurityLog", testSecurityLog},
	)
}
