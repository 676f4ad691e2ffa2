package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

// captureLog is a logger whose output the test reads back.
func captureLog() (*slog.Logger, *syncbuf.Buffer) {
	var w syncbuf.Buffer
	return slog.New(slog.NewTextHandler(&w, nil)), &w
}

// readFile and writeFile read and replace a file of the test directory.
func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(fs.PathJoin(testDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, fs vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fs.Create(fs.PathJoin(testDir, name), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	// A copy: vfs.File.Write may scribble on its input (MemFS does under
	// the race detector).
	if _, err := f.Write(bytes.Clone(b)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
}

// threeBatchLog writes a log of one segment holding batches of 3, 2 and 4
// messages (offsets 0-2, 3-4, 5-8), closes it, and returns the positions
// of the batches and the segment's name.
func threeBatchLog(t *testing.T, fs vfs.FS) (pos [3]int64, name string) {
	l := openLog(t, fs, opts{})
	for i, n := range []int{3, 2, 4} {
		pos[i] = l.Size()
		appendBatch(t, l, makeBatch(t, fmt.Sprint("t", i), n, 10, 100), 0)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return pos, segmentName(0, logSuffix)
}

// TestRecoverCutsTornTail: a last segment cut mid-batch, with a zeroed or
// garbage tail, or with a flipped byte in its last batch, is truncated
// after the last good batch at Open (logged), reads show the good prefix,
// and appends continue right after it.
func TestRecoverCutsTornTail(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		corrupt func(b []byte, pos [3]int64) []byte
		next    uint64 // the recovered next offset
	}{
		{"cut in last header", func(b []byte, p [3]int64) []byte { return b[:p[2]+100] }, 5},
		{"cut in last frames", func(b []byte, p [3]int64) []byte { return b[:len(b)-1] }, 5},
		{"cut at batch end", func(b []byte, p [3]int64) []byte { return b[:p[2]] }, 5},
		{"zeroed tail appended", func(b []byte, p [3]int64) []byte { return append(b, make([]byte, 4096)...) }, 9},
		{"short zero tail", func(b []byte, p [3]int64) []byte { return append(b, make([]byte, 100)...) }, 9},
		{"last batch zeroed", func(b []byte, p [3]int64) []byte { clear(b[p[2]:]); return b }, 5},
		{"last batch tail zeroed", func(b []byte, p [3]int64) []byte { clear(b[len(b)-60:]); return b }, 5},
		{"payload byte flipped", func(b []byte, p [3]int64) []byte { b[len(b)-3] ^= 0x40; return b }, 5},
		{"length flipped", func(b []byte, p [3]int64) []byte { b[p[2]+32] ^= 1; return b }, 5},
		{"base offset flipped", func(b []byte, p [3]int64) []byte { b[p[2]+8] ^= 2; return b }, 5},
		{"middle batch flipped", func(b []byte, p [3]int64) []byte { b[p[1]+300] ^= 1; return b }, 3},
		{"garbage appended", func(b []byte, p [3]int64) []byte { return append(b, b[p[1]:p[2]]...) }, 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, withIndex := range []bool{false, true} {
				fs := newMemFS(t)
				pos, name := threeBatchLog(t, fs)
				if !withIndex {
					_ = fs.Remove(fs.PathJoin(testDir, segmentName(0, indexSuffix)))
				}
				writeFile(t, fs, name, c.corrupt(readFile(t, fs, name), pos))
				lg, logs := captureLog()
				l := openLog(t, fs, opts{logger: lg})
				if l.Next() != c.next {
					t.Fatalf("index %v: next %d, want %d", withIndex, l.Next(), c.next)
				}
				wantEnd := map[uint64]int64{3: pos[1], 5: pos[2], 9: l.Size()}[c.next]
				if got := fileSize(t, fs, name); got != wantEnd || l.Size() != wantEnd {
					t.Fatalf("index %v: file %d bytes, log %d, want %d", withIndex, got, l.Size(), wantEnd)
				}
				if got := readAll(t, l, 0); uint64(len(got)) != c.next {
					t.Fatalf("index %v: read %d messages", withIndex, len(got))
				}
				cut := strings.Contains(logs.String(), "cut a torn or corrupt tail")
				if cut != (c.name != "cut at batch end") {
					t.Fatalf("index %v: cut logged %v: %s", withIndex, cut, logs)
				}
				if base, _ := appendBatch(t, l, makeBatch(t, "after", 2, 1, 0), 0); base != c.next {
					t.Fatalf("append after recovery at %d", base)
				}
				_ = l.Close()
				l = openLog(t, fs, opts{})
				if got := readAll(t, l, 0); uint64(len(got)) != c.next+2 || got[c.next].payload != "after-0" {
					t.Fatalf("index %v: after reopen %v", withIndex, got)
				}
				_ = l.Close()
			}
		})
	}
}

// sealedLog writes three segments of four 2-message batches and closes the
// log; it returns the segment names.
func sealedLog(t *testing.T, fs vfs.FS) []string {
	l := openLog(t, fs, opts{})
	b := makeBatch(t, "x", 2, 1, 50)
	for i := 0; i < 12; i++ {
		appendBatch(t, l, makeBatch(t, fmt.Sprint(i%10), 2, 1, 50), 4*int64(len(b)))
	}
	if l.Segments() != 3 {
		t.Fatalf("%d segments", l.Segments())
	}
	_ = l.Close()
	return []string{segmentName(0, logSuffix), segmentName(8, logSuffix), segmentName(16, logSuffix)}
}

// TestRecoverSealedIndex: a sealed segment's missing or corrupt index is
// rebuilt by a scan, with the data unchanged; one whose segment is shorter
// than the index says (truncated) is scanned, cut after its last whole
// batch and logged as offsets missing, and reads skip the hole.
func TestRecoverSealedIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		change func(t *testing.T, fs vfs.FS, segs []string)
		hole   bool
	}{
		{"index missing", func(t *testing.T, fs vfs.FS, segs []string) {
			_ = fs.Remove(fs.PathJoin(testDir, segmentName(8, indexSuffix)))
		}, false},
		{"index flipped", func(t *testing.T, fs vfs.FS, segs []string) {
			b := readFile(t, fs, segmentName(8, indexSuffix))
			b[50] ^= 1
			writeFile(t, fs, segmentName(8, indexSuffix), b)
		}, false},
		{"index truncated", func(t *testing.T, fs vfs.FS, segs []string) {
			b := readFile(t, fs, segmentName(8, indexSuffix))
			writeFile(t, fs, segmentName(8, indexSuffix), b[:len(b)-9])
		}, false},
		{"segment truncated", func(t *testing.T, fs vfs.FS, segs []string) {
			b := readFile(t, fs, segs[1])
			writeFile(t, fs, segs[1], b[:len(b)-20])
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := newMemFS(t)
			segs := sealedLog(t, fs)
			c.change(t, fs, segs)
			lg, logs := captureLog()
			l := openLog(t, fs, opts{logger: lg})
			defer l.Close()
			if !strings.Contains(logs.String(), "rebuilding it by a scan") {
				t.Fatalf("rebuild not logged: %s", logs)
			}
			if !c.hole {
				if got := readAll(t, l, 0); len(got) != 24 || l.Next() != 24 {
					t.Fatalf("read %d messages, next %d", len(got), l.Next())
				}
			} else {
				if !strings.Contains(logs.String(), "offsets missing between segments") {
					t.Fatalf("hole not logged: %s", logs)
				}
				// Batches of 2: the third one of the middle segment is cut.
				var bases []uint64
				for _, b := range batches(t, l, 0) {
					bases = append(bases, le.Uint64(b[hdrBaseOffset:]))
				}
				if fmt.Sprint(bases) != "[0 2 4 6 8 10 12 16 18 20 22]" {
					t.Fatalf("batches around the hole: %v", bases)
				}
				if m := readSome(t, l, 14, 1); len(m) != 2 || m[0].off != 16 {
					t.Fatalf("read in the hole: %v", m)
				}
			}
			// The index was written again: the next Open reads none of it.
			_ = l.Close()
			lg2, logs2 := captureLog()
			l2 := openLog(t, fs, opts{logger: lg2})
			defer l2.Close()
			if strings.Contains(logs2.String(), "rebuilding") {
				t.Fatalf("index rebuilt again: %s", logs2)
			}
		})
	}
}

// TestSealedChecksumFailure: a flipped payload byte in a sealed segment
// (whose index is valid, so Open does not read it) is an ErrCorrupt error
// from Read and OffsetForTimestamp, never a panic or wrong data; the other
// segments read fine.
func TestSealedChecksumFailure(t *testing.T) {
	t.Parallel()
	l := openLog(t, flippedSealedLog(t, 300, 0x10), opts{}) // a payload byte of its first batch
	defer l.Close()
	one := len(makeBatch(t, "x", 2, 1, 50))
	if got := readSome(t, l, 0, 4*one); len(got) != 8 {
		t.Fatalf("read before the bad segment: %d messages", len(got))
	}
	if got := readSome(t, l, 16, 1<<20); len(got) != 8 {
		t.Fatalf("read after the bad segment: %d messages", len(got))
	}
	_, err := tryReadAll(l, 8)
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, bridge.ErrInvalidBatch) {
		t.Fatalf("read over the bad batch: %v", err)
	}
	if err := l.SetStart(8); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.OffsetForTimestamp(ctx, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("time search over the bad batch: %v", err)
	}
	// A header that no longer follows is caught before its checksum.
	l2 := openLog(t, flippedSealedLog(t, hdrBaseOffset, 1), opts{})
	defer l2.Close()
	if _, err := tryReadAll(l2, 8); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not follow") {
		t.Fatalf("read of a bad header: %v", err)
	}
}

// flippedSealedLog is a fresh file system holding sealedLog with byte at
// of its second segment xored with mask.
func flippedSealedLog(t *testing.T, at int, mask byte) vfs.FS {
	t.Helper()
	fs := newMemFS(t)
	segs := sealedLog(t, fs)
	b := readFile(t, fs, segs[1])
	b[at] ^= mask
	writeFile(t, fs, segs[1], b)
	return fs
}

// Overlapping segments are not something the log writes: Open refuses
// them rather than guess.
func TestRecoverRefusesOverlap(t *testing.T) {
	t.Parallel()
	fs := newMemFS(t)
	segs := sealedLog(t, fs)
	b := readFile(t, fs, segs[2])
	if err := fs.Remove(fs.PathJoin(testDir, segs[2])); err != nil {
		t.Fatal(err)
	}
	_ = fs.Remove(fs.PathJoin(testDir, segmentName(16, indexSuffix)))
	// The last segment renamed to start inside the second one.
	le.PutUint64(b[hdrBaseOffset:], 12)
	writeFile(t, fs, segmentName(12, logSuffix), b)
	if _, err := tryOpen(fs, opts{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with overlapping segments: %v", err)
	}
}
