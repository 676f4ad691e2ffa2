package seglog

import "testing"

// Batches this process appended are known good and read without hashing
// them again; after a reopen each batch is hashed at its first read, once.
func TestCheckedPrefix(t *testing.T) {
	t.Parallel()
	fs := newMemFS(t)
	l := openLog(t, fs, opts{})
	var end int64
	for i := 0; i < 5; i++ {
		_, end = appendBatch(t, l, makeBatch(t, "a", 3, 1000, 100), 0)
	}
	seg := l.segments()[0]
	if got := seg.checked.Load(); got != end-seg.startPos {
		t.Fatalf("checked %d after appends, want %d", got, end-seg.startPos)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openLog(t, fs, opts{})
	defer l.Close()
	seg = l.segments()[0]
	if got := seg.checked.Load(); got != 0 {
		t.Fatalf("checked %d after a reopen, want 0", got)
	}
	if n := len(readSome(t, l, 0, 1)); n != 3 { // the first batch only
		t.Fatalf("read %d messages", n)
	}
	first := seg.checked.Load()
	if first <= 0 || first >= seg.size.Load() {
		t.Fatalf("checked %d after reading the first batch of %d bytes", first, seg.size.Load())
	}
	if n := len(readAll(t, l, 6)); n != 9 { // a read past a gap in the checked bytes checks nothing new
		t.Fatalf("read %d messages", n)
	}
	if got := seg.checked.Load(); got != first {
		t.Fatalf("checked %d after reading past a gap, want %d", got, first)
	}
	readAll(t, l, 0)
	if got := seg.checked.Load(); got != seg.size.Load() {
		t.Fatalf("checked %d after reading everything, want %d", got, seg.size.Load())
	}
}
