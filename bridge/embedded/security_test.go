package embedded

import (
	"testing"
)

// The security log keeps records in order across a reopen, and a read
// from a position sees only what came after it.
func TestSecurityLog(t *testing.T) {
	t.Parallel()
	s, reopen := reopenableStore(t, SyncNever)
	read := func(s *Store, from uint64) ([]string, uint64) {
		t.Helper()
		var got []string
		next, err := s.ReadSecurityRecords(ctx, from, func(r []byte) { got = append(got, string(r)) })
		if err != nil {
			t.Fatal(err)
		}
		return got, next
	}
	if got, next := read(s, 0); len(got) != 0 || next != 0 {
		t.Fatalf("empty log: %q %d", got, next)
	}
	for _, r := range []string{"one", "two", "three"} {
		if err := s.AppendSecurityRecord(ctx, []byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	if got, next := read(s, 1); len(got) != 2 || got[0] != "two" || next != 3 {
		t.Fatalf("from 1: %q %d", got, next)
	}
	s = reopen()
	if err := s.AppendSecurityRecord(ctx, []byte("four")); err != nil {
		t.Fatal(err)
	}
	got, next := read(s, 0)
	if len(got) != 4 || got[0] != "one" || got[3] != "four" || next != 4 {
		t.Fatalf("after reopen: %q %d", got, next)
	}
	if got, next := read(s, 4); len(got) != 0 || next != 4 {
		t.Fatalf("at the end: %q %d", got, next)
	}
}
