package iggy

import (
	"context"
	"testing"
)

// The security log lives in the state stream: a second store on the same
// server (another gateway) reads what the first appended, and a read from
// a position sees only what came after.
func TestSecurityLog(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
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
	})
}
