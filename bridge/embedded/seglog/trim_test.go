package seglog

import (
	"fmt"
	"strings"
	"testing"
)

// segmentFiles lists the .log files of the test directory.
func segmentFiles(t *testing.T, l *Log) []string {
	t.Helper()
	var out []string
	for _, n := range listDir(t, l.cfg.FS) {
		if strings.HasSuffix(n, logSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// TestSetStartDeletesWholeSegments: moving the start removes exactly the
// segments that end at or below it (files and all), keeps the one it falls
// in, survives a reopen with the start given back, and a start at the end
// removes the active segment too; appends then start a new one.
func TestSetStartDeletesWholeSegments(t *testing.T) {
	t.Parallel()
	fs := newMemFS(t)
	l := openLog(t, fs, opts{})
	b := makeBatch(t, "x", 5, 1, 8)
	seg := 4 * int64(len(b)) // 4 batches, 20 offsets per segment
	var want []msg
	for i := 0; i < 40; i++ { // offsets 0..199 in 10 segments
		appendBatch(t, l, makeBatch(t, fmt.Sprint(i), 5, 1, 8), seg)
		for j := 0; j < 5; j++ {
			want = append(want, msg{uint64(5*i + j), fmt.Sprintf("%d-%d", i, j)})
		}
	}
	if n := len(segmentFiles(t, l)); n != 10 {
		t.Fatalf("%d segment files, want 10", n)
	}
	sizeOf := func(segs int) int64 { return int64(segs) * seg }
	for _, c := range []struct {
		start, earliest uint64
		segments        int
		first           string
	}{
		{19, 19, 10, "00000000000000000000.log"}, // inside the first segment
		{20, 20, 9, "00000000000000000020.log"},  // exactly its end
		{67, 67, 7, "00000000000000000060.log"},
		{60, 67, 7, "00000000000000000060.log"}, // never back
	} {
		if err := l.SetStart(c.start); err != nil {
			t.Fatal(err)
		}
		files := segmentFiles(t, l)
		if len(files) != c.segments || files[0] != c.first || l.Segments() != c.segments || l.Size() != sizeOf(c.segments) {
			t.Fatalf("start %d: files %v, %d segments of %d bytes", c.start, files, l.Segments(), l.Size())
		}
		if l.Earliest() != c.earliest {
			t.Fatalf("start %d: earliest %d", c.start, l.Earliest())
		}
	}
	if l.Earliest() != 67 || l.Start() != 67 {
		t.Fatalf("earliest %d start %d", l.Earliest(), l.Start())
	}
	// A read below the start begins with the batch holding it: the
	// batches below it are gone, though their segment stays.
	if got := readSome(t, l, 0, 1); len(got) != 5 || got[0].off != 65 {
		t.Fatalf("read below the start: %v", got)
	}
	_ = l.Close()

	// A reopen that did not see the removal (files back) removes them again.
	l = openLog(t, fs, opts{start: 67})
	if l.Earliest() != 67 || l.Next() != 200 || len(segmentFiles(t, l)) != 7 {
		t.Fatalf("reopen: earliest %d next %d files %v", l.Earliest(), l.Next(), segmentFiles(t, l))
	}
	if got := readAll(t, l, 67); fmt.Sprint(got) != fmt.Sprint(want[67:]) {
		t.Fatal("read after reopen differs")
	}
	// Everything goes: no segment left; the next append starts one at 200.
	if err := l.SetStart(200); err != nil {
		t.Fatal(err)
	}
	if files := segmentFiles(t, l); len(files) != 0 || l.Size() != 0 || l.Earliest() != 200 || l.Next() != 200 {
		t.Fatalf("start at the end: files %v size %d earliest %d", files, l.Size(), l.Earliest())
	}
	if base, _ := appendBatch(t, l, b, seg); base != 200 {
		t.Fatalf("append after all went: %d", base)
	}
	if files := segmentFiles(t, l); len(files) != 1 || files[0] != "00000000000000000200.log" {
		t.Fatalf("files %v", files)
	}
	_ = l.Close()
	l = openLog(t, fs, opts{start: 200})
	defer l.Close()
	if l.Earliest() != 200 || l.Next() != 205 {
		t.Fatalf("reopen: earliest %d next %d", l.Earliest(), l.Next())
	}
}

// A start beyond everything stored at Open (the last segment's removal
// was lost, or the log was emptied) removes it all and continues at the
// start.
func TestOpenStartPastTheLog(t *testing.T) {
	t.Parallel()
	fs := newMemFS(t)
	l := openLog(t, fs, opts{})
	appendMany(t, l, 10, 0, 0)
	_ = l.Close()
	l = openLog(t, fs, opts{start: 500})
	defer l.Close()
	if l.Next() != 500 || l.Earliest() != 500 || l.Segments() != 0 {
		t.Fatalf("next %d earliest %d segments %d", l.Next(), l.Earliest(), l.Segments())
	}
	if base, _ := appendBatch(t, l, makeBatch(t, "a", 2, 1, 0), 0); base != 500 {
		t.Fatalf("base %d", base)
	}
	if got := readAll(t, l, 0); len(got) != 2 || got[0].off != 500 {
		t.Fatalf("read %v", got)
	}
}

// Retention helpers: ExpiredBefore finds the first batch whose newest
// record is recent enough, OversizeBefore applies Kafka's size rule.
func TestRetentionQueries(t *testing.T) {
	t.Parallel()
	l := logAt(t, 1<<40)
	b := makeBatch(t, "x", 2, 100, 0)
	one := int64(len(b))
	for i := 0; i < 12; i++ { // batch i: origins 100*(i+1), +1; offsets 2i, 2i+1
		appendBatch(t, l, makeBatch(t, "x", 2, 100*uint64(i+1), 0), 3*one)
	}
	for _, c := range []struct{ cutoff, want uint64 }{
		{0, 0}, {101, 0}, {102, 2}, {650, 12}, {1202, 24}, {5000, 24},
	} {
		if got, err := l.ExpiredBefore(c.cutoff); err != nil || got != c.want {
			t.Errorf("expired before %d: %d %v, want %d", c.cutoff, got, err, c.want)
		}
	}
	for _, c := range []struct {
		limit int64
		want  uint64
	}{
		{12 * one, 0}, {11*one + 1, 0}, {11 * one, 2}, {5*one + 3, 12}, {one, 22}, {0, 24},
	} {
		if got, err := l.OversizeBefore(c.limit); err != nil || got != c.want {
			t.Errorf("oversize %d: %d %v, want %d", c.limit, got, err, c.want)
		}
	}
	// From a start inside a batch: that batch counts whole.
	if err := l.SetStart(5); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.OversizeBefore(10 * one); got != 5 {
		t.Errorf("oversize from 5 at 10 batches: %d", got)
	}
	if got, _ := l.OversizeBefore(9 * one); got != 6 {
		t.Errorf("oversize from 5 at 9 batches: %d", got)
	}
	if got, _ := l.ExpiredBefore(350); got != 6 {
		t.Errorf("expired from 5: %d", got)
	}
}
