package seglog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/golden"
)

// FuzzRecoverSegment: whatever bytes a log's only segment holds, Open
// never panics and recovers a valid prefix: every batch read back passes
// its checksums, offsets run on from 0 without a gap, the segment is cut
// right after the last of them, and the log takes and shows a new append.
//
//	go test -fuzz FuzzRecoverSegment ./bridge/embedded/seglog
func FuzzRecoverSegment(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll(testDir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fs, segmentName(0, logSuffix), data)
		l, err := tryOpen(fs, opts{})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer l.Close()
		var next uint64
		var size int64
		err = l.Read(0, 1<<40, func(b []byte) bool {
			v, err := bridge.VerifyIggyBatch(b)
			if err != nil || v.BaseOffset != next {
				t.Fatalf("recovered batch at %d (want %d): %v", v.BaseOffset, next, err)
			}
			next += uint64(v.Count)
			size += int64(len(b))
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if l.Next() != next || l.Size() != size {
			t.Fatalf("next %d (batches end at %d), size %d (batches %d)", l.Next(), next, l.Size(), size)
		}
		// An empty segment at the log's start is removed.
		if _, err := fs.Stat(fs.PathJoin(testDir, segmentName(0, logSuffix))); size > 0 || err == nil {
			if !bytes.Equal(readFile(t, fs, segmentName(0, logSuffix)), data[:size]) {
				t.Fatal("the recovered segment is not a prefix of what was there")
			}
		}
		if base, _ := appendBatch(t, l, makeBatch(t, "new", 2, 1, 0), 0); base != next {
			t.Fatalf("append after recovery at %d, want %d", base, next)
		}
		if got := readSome(t, l, next, 1); len(got) != 2 || got[0].payload != "new-0" {
			t.Fatalf("read of the new batch: %v", got)
		}
	})
}

// FuzzDecodeIndex: an index file's bytes never panic the decoder, and
// whatever it accepts encodes back to the same bytes.
func FuzzDecodeIndex(f *testing.F) {
	f.Add(encodeIndex(indexFile{base: 7, next: 19, maxTs: 5, size: 9000,
		entries: []entry{{0, 0}, {5, 4200}, {9, 8300}}}))
	f.Add(encodeIndex(indexFile{base: 3, next: 3}))
	f.Fuzz(func(t *testing.T, b []byte) {
		base := uint64(0)
		if len(b) >= 16 {
			base = le.Uint64(b[8:])
		}
		ix, err := decodeIndex(b, base)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeIndex(ix), b) {
			t.Fatal("accepted index does not encode back to its bytes")
		}
	})
}

// fuzzSeeds are segments a log really writes, whole and damaged.
func fuzzSeeds(t testing.TB) [][]byte {
	var seg []byte
	var ends []int
	var base uint64
	for i, n := range []int{1, 3, 2} {
		b := makeBatch(t, fmt.Sprint("s", i), n, 1_000+uint64(i), 20)
		bridge.StampIggyBatch(b, 3, base, 5_000)
		base += uint64(n)
		seg = append(seg, b...)
		ends = append(ends, len(seg))
	}
	flipped := bytes.Clone(seg)
	flipped[ends[1]-5] ^= 1
	return [][]byte{
		seg, seg[:ends[0]], seg[:ends[1]+100], seg[:ends[2]-1], flipped,
		append(bytes.Clone(seg), make([]byte, 300)...), {}, make([]byte, 256),
	}
}

// TestWriteFuzzSeeds writes fuzzSeeds to testdata/fuzz/FuzzRecoverSegment
// (run with SEGLOG_WRITE_SEEDS=1 after changing them).
func TestWriteFuzzSeeds(t *testing.T) {
	// Not parallel: it rewrites testdata/fuzz, which the fuzz targets read.
	if os.Getenv("SEGLOG_WRITE_SEEDS") == "" {
		t.Skip("set SEGLOG_WRITE_SEEDS=1 to rewrite the fuzz seed corpus")
	}
	for i, s := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		golden.Write(t, filepath.Join("testdata", "fuzz", "FuzzRecoverSegment", fmt.Sprintf("seed-%d", i)), []byte(body))
	}
}
