package embedded

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// txnOps are the journal ops of coordinator state entries.
func txnOps(entries ...bridge.TxnStateEntry) []journalOp {
	ops := make([]journalOp, len(entries))
	for i, e := range entries {
		ops[i] = journalOp{kind: journalSet, key: txnStateKey(e.Key), value: e.Value}
		if e.Value == nil {
			ops[i].kind = journalDelete
		}
	}
	return ops
}

// reopenWithJournal closes s, leaves journal as the journal a killed run
// left in dir, and opens the store again under policy.
func reopenWithJournal(t *testing.T, s *Store, dir string, journal []byte, policy SyncPolicy) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, journalName), journal, 0o644); err != nil {
		t.Fatal(err)
	}
	return openStore(t, dir, policy)
}

// txnStateMap reads the store's coordinator state into a map.
func txnStateMap(t *testing.T, s *Store) map[string]string {
	t.Helper()
	got := map[string]string{}
	if err := s.TxnStates(ctx, func(k string, v []byte) { got[k] = string(v) }); err != nil {
		t.Fatal(err)
	}
	return got
}

const txnCrashDirEnv = "EMBEDDED_TXN_CRASH_CHILD_DIR"

// TestTxnStateCrashChild writes coordinator state under SyncNever until it
// is killed: key k<i%64> gets value i, every third write lazy, and
// "ack <i>" is printed once the write returned.
func TestTxnStateCrashChild(t *testing.T) {
	dir := os.Getenv(txnCrashDirEnv)
	if dir == "" {
		t.Skip("crash child; run by TestTxnStateSurvivesKill")
	}
	s, err := Open(dir, Options{Sync: SyncNever, Logger: quietLogger()})
	exitOnError(err)
	fmt.Println("ready")
	for i := 0; ; i++ {
		e := []bridge.TxnStateEntry{{Key: "k" + strconv.Itoa(i%64), Value: []byte(strconv.Itoa(i))}}
		if i%3 == 2 {
			err = s.PutTxnStatesLazy(ctx, e)
		} else {
			err = s.PutTxnStates(ctx, e)
		}
		exitOnError(err)
		fmt.Printf("ack %d\n", i)
	}
}

// Under SyncNever a coordinator's state write that returned survives a
// kill -9 of the process. Pebble alone keeps unsynced writes in its own
// buffer: without the journal this loses the last 250 or so (measured).
func TestTxnStateSurvivesKill(t *testing.T) {
	t.Parallel()
	dir, acks := runCrashChild(t, "TestTxnStateCrashChild", txnCrashDirEnv)
	last := map[string]int{}
	for _, a := range acks {
		var i int
		if _, err := fmt.Sscanf(a, "ack %d", &i); err != nil {
			t.Fatalf("bad ack line %q", a)
		}
		last["k"+strconv.Itoa(i%64)] = i
	}
	s := openStore(t, dir, SyncNever)
	defer s.Close()
	got := txnStateMap(t, s)
	for k, want := range last {
		v, err := strconv.Atoi(got[k])
		if err != nil || v < want {
			t.Errorf("%s = %q after the kill; its write of %d had returned", k, got[k], want)
		}
	}
	t.Logf("%d writes acknowledged before SIGKILL", len(acks))
}

// Open replays the journal's writes that pebble does not have, in order,
// up to a torn frame, then removes it; a store reopened under SyncAlways
// keeps what it replayed and makes no journal.
func TestTxnJournalReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncAlways)
	if err := s.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: "a", Value: []byte("pebble")}, {Key: "gone", Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	// What a killed SyncNever run leaves: its writes in the journal,
	// pebble without them (no sequence number stored), a frame cut short
	// at the end.
	j := appendJournalFrame(nil, 1, txnOps(bridge.TxnStateEntry{Key: "a", Value: []byte("one")}, bridge.TxnStateEntry{Key: "b", Value: []byte("b1")}))
	j = appendJournalFrame(j, 2, txnOps(bridge.TxnStateEntry{Key: "a", Value: []byte("two")}, bridge.TxnStateEntry{Key: "gone"}))
	torn := appendJournalFrame(nil, 3, txnOps(bridge.TxnStateEntry{Key: "a", Value: []byte("torn")}))
	j = append(j, torn[:len(torn)-1]...)
	path := filepath.Join(dir, journalName)
	s = reopenWithJournal(t, s, dir, j, SyncAlways)
	got := txnStateMap(t, s)
	want := map[string]string{"a": "two", "b": "b1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("state after replay %v, want %v", got, want)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("journal still there after Open under SyncAlways: %v", err)
	}
	if err := s.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: "a", Value: []byte("three")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, SyncAlways)
	defer s.Close()
	if got := txnStateMap(t, s)["a"]; got != "three" {
		t.Errorf("a = %q after a reopen, want three (an old journal replayed?)", got)
	}
}

// After a crash of the machine pebble can hold more than the journal (it
// is synced by other writes, the journal is not): a journal that is
// behind pebble is not replayed, so no key goes back to an older value;
// nor is one with a gap in its numbers replayed past the gap.
func TestTxnJournalBehindPebbleChangesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncNever)
	path := filepath.Join(dir, journalName)
	put := func(v string) {
		t.Helper()
		if err := s.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: "k", Value: []byte(v)}}); err != nil {
			t.Fatal(err)
		}
	}
	put("old")
	early, err := os.ReadFile(path) // the journal's page on disk
	if err != nil {
		t.Fatal(err)
	}
	put("new")
	s = reopenWithJournal(t, s, dir, early, SyncNever) // Close synced pebble past both
	if got := txnStateMap(t, s)["k"]; got != "new" {
		t.Errorf("k = %q after replaying a journal behind pebble, want new", got)
	}
	seq, err := journalSeq(s.db)
	if err != nil {
		t.Fatal(err)
	}
	gap := appendJournalFrame(nil, seq+1, txnOps(bridge.TxnStateEntry{Key: "k", Value: []byte("next")}))
	gap = appendJournalFrame(gap, seq+3, txnOps(bridge.TxnStateEntry{Key: "k", Value: []byte("past a gap")}))
	s = reopenWithJournal(t, s, dir, gap, SyncNever)
	defer s.Close()
	if got := txnStateMap(t, s)["k"]; got != "next" {
		t.Errorf("k = %q, want next (the frame after the gap must not be replayed)", got)
	}
}

// Under SyncNever every write goes to the journal; past journalMax pebble
// is synced and the journal starts again empty.
func TestTxnJournalReplacedWhenFull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncNever)
	defer s.Close()
	path := filepath.Join(dir, journalName)
	value := make([]byte, 4096)
	sizes := []int64{}
	for i := range journalMax/len(value) + 16 {
		if err := s.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: "k" + strconv.Itoa(i%8), Value: value}}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fi.Size())
	}
	if sizes[0] == 0 {
		t.Fatal("the first write did not reach the journal")
	}
	shrank := false
	for i := 1; i < len(sizes); i++ {
		if sizes[i] > int64(journalMax+len(value)+64) {
			t.Fatalf("journal grew to %d bytes", sizes[i])
		}
		shrank = shrank || sizes[i] < sizes[i-1]
	}
	if !shrank {
		t.Errorf("journal never replaced: sizes end at %d", sizes[len(sizes)-1])
	}
}

// A journal's frames decode to the ops they were made of; a damaged one
// ends the replay without a panic or an unbounded allocation.
func FuzzReplayJournal(f *testing.F) {
	f.Add(appendJournalFrame(nil, 1, append(txnOps(bridge.TxnStateEntry{Key: "t/a", Value: []byte{1, 2, 3}}, bridge.TxnStateEntry{Key: "gone"}),
		journalOp{kind: journalDeleteRange, key: []byte("o1"), value: []byte("o2")})))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0})
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		type frame struct {
			seq uint64
			ops []journalOp
		}
		var frames []frame
		last, err := replayJournal(data, 0, func(seq uint64, op journalOp) error {
			if len(frames) == 0 || frames[len(frames)-1].seq != seq {
				frames = append(frames, frame{seq: seq})
			}
			frames[len(frames)-1].ops = append(frames[len(frames)-1].ops, op)
			return nil
		})
		if err != nil || last == 0 {
			return
		}
		// The replayed frames are numbered 1..last and re-encode to the
		// bytes they came from, wherever they lay.
		for i, fr := range frames {
			if fr.seq != uint64(i+1) {
				t.Fatalf("frame %d numbered %d", i, fr.seq)
			}
			enc := appendJournalFrame(nil, fr.seq, fr.ops)
			if !bytes.Contains(data, enc) {
				t.Fatalf("frame %d does not re-encode to its bytes", fr.seq)
			}
		}
	})
}

// A replayed journal applies every kind of op: the group offsets it holds
// (set, deleted, a group's range deleted) come back with the coordinator
// state.
func TestTxnJournalReplaysOffsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncNever)
	if _, err := s.CreateTopic(ctx, "kafka", "in", 2); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		group string
		p     int32
		off   int64
	}{{"g1", 0, 5}, {"g1", 1, 7}, {"g2", 0, 9}, {"g3", 0, 11}} {
		if err := s.CommitOffset(ctx, "kafka", c.group, "in", c.p, bridge.CommittedOffset{Offset: c.off, LeaderEpoch: -1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteOffset(ctx, "kafka", "g1", "in", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroupOffsets(ctx, "kafka", "g2"); err != nil {
		t.Fatal(err)
	}
	// A kill can leave the journal with pebble short of its writes: keep
	// the journal, undo the offsets and the sequence number in pebble (as
	// if its buffer had been lost), put the journal back and reopen.
	path := filepath.Join(dir, journalName)
	journal, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, SyncAlways)
	lo := []byte{prefixOffset}
	if err := s.db.DeleteRange(lo, prefixEnd(lo), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Delete(journalSeqKey, nil); err != nil {
		t.Fatal(err)
	}
	s = reopenWithJournal(t, s, dir, journal, SyncNever)
	defer s.Close()
	for _, c := range []struct {
		group string
		p     int32
		want  int64 // -1: none
	}{{"g1", 0, 5}, {"g1", 1, -1}, {"g2", 0, -1}, {"g3", 0, 11}} {
		o, ok, err := s.FetchOffset(ctx, "kafka", c.group, "in", c.p)
		if err != nil {
			t.Fatal(err)
		}
		got := int64(-1)
		if ok {
			got = o.Offset
		}
		if got != c.want {
			t.Errorf("%s/%d: offset %d after replay, want %d", c.group, c.p, got, c.want)
		}
	}
}
