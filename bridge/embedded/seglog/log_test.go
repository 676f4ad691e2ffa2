package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// appendMany appends n batches of 1..7 messages (payload padding varying
// so batches differ in size) and returns the messages expected back.
func appendMany(t *testing.T, l *Log, n int, segBytes int64, first uint64) []msg {
	t.Helper()
	var want []msg
	next := first
	for i := 0; i < n; i++ {
		k := 1 + i%7
		tag := fmt.Sprint("b", i)
		base, _ := appendBatch(t, l, makeBatch(t, tag, k, 1_000_000+uint64(i)*10, (i*37)%300), segBytes)
		if base != next {
			t.Fatalf("batch %d at %d, want %d", i, base, next)
		}
		for j := 0; j < k; j++ {
			want = append(want, msg{base + uint64(j), fmt.Sprintf("%s-%d", tag, j)})
		}
		next += uint64(k)
	}
	return want
}

// TestAppendReadAcrossRolls: appends roll segments at segment.bytes, reads
// from every offset return the batch holding it first and everything after
// in order, and the same holds after Close and Open (from index files,
// without a scan) and after an Open that has to scan (index files gone).
func TestAppendReadAcrossRolls(t *testing.T) {
	t.Parallel()
	fs := newMemFS(t)
	l := openLog(t, fs, opts{})
	want := appendMany(t, l, 300, 8<<10, 0)
	if l.Segments() < 5 {
		t.Fatalf("%d segments, want several at 8 KiB each", l.Segments())
	}
	check := func(l *Log) {
		t.Helper()
		if l.Next() != uint64(len(want)) || l.Earliest() != 0 {
			t.Fatalf("next %d earliest %d, want %d 0", l.Next(), l.Earliest(), len(want))
		}
		for from := range want {
			// A few batches from every offset; whole reads from some.
			var got []msg
			if from%97 == 0 {
				got = readAll(t, l, uint64(from))
				if len(got) != len(want)-from || got[len(got)-1] != want[len(want)-1] {
					t.Fatalf("read all from %d: %d messages", from, len(got))
				}
			} else {
				got = readSome(t, l, uint64(from), 2000)
			}
			if len(got) == 0 || got[0] != want[from] || fmt.Sprint(got) != fmt.Sprint(want[from:from+len(got)]) {
				t.Fatalf("read from %d: %d messages, first %v", from, len(got), got[:min(1, len(got))])
			}
		}
		if got := readAll(t, l, 0); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatal("read from 0 differs")
		}
		if got := readAll(t, l, uint64(len(want))); len(got) != 0 {
			t.Fatalf("read at the watermark: %d messages", len(got))
		}
	}
	check(l)
	var size int64
	for _, n := range listDir(t, fs) {
		if strings.HasSuffix(n, logSuffix) {
			size += fileSize(t, fs, n)
		}
	}
	if l.Size() != size {
		t.Fatalf("Size %d, files hold %d", l.Size(), size)
	}
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tryAppend(l, makeBatch(t, "x", 1, 1, 0), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	names := listDir(t, fs)
	if len(names) != 2*segs {
		t.Fatalf("after close %d files for %d segments (an index each): %v", len(names), segs, names)
	}
	l = openLog(t, fs, opts{})
	check(l)
	// More appends continue the offsets after a reopen.
	want = append(want, appendMany(t, l, 20, 8<<10, uint64(len(want)))...)
	check(l)
	_ = l.Close()
	for _, n := range listDir(t, fs) {
		if strings.HasSuffix(n, indexSuffix) {
			if err := fs.Remove(fs.PathJoin(testDir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	l = openLog(t, fs, opts{})
	defer l.Close()
	check(l)
}

// TestIndexLookupEveryOffset: a read of one byte from any offset returns
// exactly the batch holding it, whatever the index's spacing.
func TestIndexLookupEveryOffset(t *testing.T) {
	t.Parallel()
	fs := newMemFS(t)
	l := openLog(t, fs, opts{})
	defer l.Close()
	var bases []uint64
	for i := 0; i < 400; i++ {
		base, _ := appendBatch(t, l, makeBatch(t, fmt.Sprint(i), 1+i%5, 1, i%2000), 64<<10)
		bases = append(bases, base)
	}
	bases = append(bases, l.Next())
	for i := 0; i+1 < len(bases); i++ {
		for off := bases[i]; off < bases[i+1]; off++ {
			var got []bridge.BatchView
			if err := l.Read(off, 1, func(b []byte) bool {
				v, _ := bridge.ParseIggyBatch(b)
				got = append(got, v)
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].BaseOffset != bases[i] {
				t.Fatalf("read at %d: %+v, want the batch at %d", off, got, bases[i])
			}
		}
	}
}

// TestReadMaxBytes: whole batches, the first always, then only while the
// bytes stay within maxBytes; fn returning false stops.
func TestReadMaxBytes(t *testing.T) {
	t.Parallel()
	l := openLog(t, newMemFS(t), opts{})
	defer l.Close()
	b := makeBatch(t, "x", 4, 1, 0)
	for i := 0; i < 10; i++ {
		appendBatch(t, l, b, 3*int64(len(b))) // segments of 3 batches
	}
	count := func(maxBytes int) (n int) {
		if err := l.Read(0, maxBytes, func([]byte) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct{ max, want int }{
		{-1, 1}, {0, 1}, {1, 1}, {len(b), 1}, {2*len(b) - 1, 1}, {2 * len(b), 2}, {7*len(b) + 3, 7}, {10 * len(b), 10}, {1 << 30, 10},
	} {
		if got := count(c.max); got != c.want {
			t.Errorf("maxBytes %d: %d batches, want %d", c.max, got, c.want)
		}
	}
	n := 0
	_ = l.Read(0, 1<<30, func([]byte) bool { n++; return n < 5 })
	if n != 5 {
		t.Fatalf("fn returning false: %d calls", n)
	}
}

// TestStampAndTimes: batches come back stamped (partition, base offset,
// append time) with their frames unchanged, and the caller's batch is not
// modified.
func TestStampAndTimes(t *testing.T) {
	t.Parallel()
	l := logAt(t, 4242)
	b := makeBatch(t, "s", 3, 77, 10)
	orig := bytes.Clone(b)
	appendBatch(t, l, makeBatch(t, "first", 2, 1, 0), 0)
	appendBatch(t, l, b, 0)
	if !bytes.Equal(b, orig) {
		t.Fatal("Append modified the caller's batch")
	}
	got := batches(t, l, 2)
	v, err := bridge.VerifyIggyBatch(got[0])
	if err != nil {
		t.Fatal(err)
	}
	if v.PartitionID != 3 || v.BaseOffset != 2 || v.BaseTimestamp != 4242 || v.Count != 3 ||
		!bytes.Equal(got[0][bridge.BatchHeaderSize:], b[bridge.BatchHeaderSize:]) {
		t.Fatalf("stored batch %+v", v)
	}
}

// TestOffsetForTimestamp: the first offset at or after a time, across
// segments (whole segments skipped by their newest time), below the log
// start never, and origin-less messages at their append time.
func TestOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	l := logAt(t, 50_000)
	if _, found, err := l.OffsetForTimestamp(ctx, 0); found || err != nil {
		t.Fatalf("empty log: %v %v", found, err)
	}
	// 20 batches of 3 messages; batch i has origins 1000*(i+1)+{0,1,2}.
	b0 := makeBatch(t, "x", 3, 1000, 0)
	for i := 0; i < 20; i++ {
		appendBatch(t, l, makeBatch(t, "x", 3, 1000*uint64(i+1), 0), 4*int64(len(b0)))
	}
	if l.Segments() < 4 {
		t.Fatalf("%d segments", l.Segments())
	}
	brute := func(ts, start uint64) (uint64, bool) {
		for i := 0; i < 20; i++ {
			for j := 0; j < 3; j++ {
				off := uint64(3*i + j)
				if off >= start && 1000*uint64(i+1)+uint64(j) >= ts {
					return off, true
				}
			}
		}
		return 0, false
	}
	for _, start := range []uint64{0, 7, 30} {
		if err := l.SetStart(start); err != nil {
			t.Fatal(err)
		}
		for ts := uint64(0); ts <= 21_500; ts += 250 {
			for _, d := range []uint64{0, 1, 2, 3} {
				off, found, err := l.OffsetForTimestamp(ctx, ts+d)
				wo, wf := brute(ts+d, start)
				if err != nil || found != wf || off != wo {
					t.Fatalf("start %d ts %d: %d %v %v, want %d %v", start, ts+d, off, found, err, wo, wf)
				}
			}
		}
	}
	appendBatch(t, l, makeBatch(t, "y", 1, 0, 0), 0)
	if off, found, _ := l.OffsetForTimestamp(ctx, 40_000); !found || off != 60 {
		t.Fatalf("origin-less message: %d %v", off, found)
	}
}

// TestReadOnePread: a read within one segment is one pread, whatever
// offset it starts at (the index entry is at most 4 KiB before its batch,
// and the read covers maxBytes past that).
func TestReadOnePread(t *testing.T) {
	t.Parallel()
	fs, _, l := openFaulty(t, false)
	defer l.Close()
	for i := 0; i < 1500; i++ { // 1.6 MB
		appendBatch(t, l, makeBatch(t, fmt.Sprint(i), 1+i%10, 1, 90), 0)
	}
	for _, maxBytes := range []int{1, 64 << 10, 1 << 20} {
		for k := uint64(0); k < 100; k++ {
			from := (k * 7919) % l.Next()
			before := fs.readAts.Load()
			sent := 0
			if err := l.Read(from, maxBytes, func(b []byte) bool { sent += len(b); return true }); err != nil {
				t.Fatal(err)
			}
			if n := fs.readAts.Load() - before; n != 1 {
				t.Fatalf("read of %d bytes from %d: %d preads", maxBytes, from, n)
			}
			if sent == 0 || sent > max(maxBytes, 2000) {
				t.Fatalf("read of %d bytes from %d passed %d", maxBytes, from, sent)
			}
		}
	}
}
