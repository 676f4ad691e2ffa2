package iggyreal

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// segmentBatch is a batch as a segment holds it: a header carrying its
// whole length, reserved bytes zero, then body bytes.
func segmentBatch(body int) []byte {
	b := make([]byte, tornBatchHeaderLen+body)
	binary.LittleEndian.PutUint64(b[tornBatchLengthAt:], uint64(len(b)))
	for i := tornBatchHeaderLen; i < len(b); i++ {
		b[i] = 0xa5
	}
	return b
}

func indexEntries(positions ...int) []byte {
	var b []byte
	for i, p := range positions {
		e := make([]byte, tornIndexEntryLen)
		binary.LittleEndian.PutUint64(e, uint64(i))
		binary.LittleEndian.PutUint64(e[tornIndexPositionAt:], uint64(p))
		b = append(b, e...)
	}
	return b
}

// writeSegment lays out dataDir like the server does and returns the log's
// and the index's paths.
func writeSegment(t *testing.T, log, index []byte) (dataDir, logPath, indexPath string) {
	t.Helper()
	dataDir = t.TempDir()
	part := filepath.Join(dataDir, "streams", "1", "topics", "0", "partitions", "0")
	if err := os.MkdirAll(part, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath = filepath.Join(part, "00000000000000000000.log")
	indexPath = filepath.Join(part, "00000000000000000000.index")
	for p, b := range map[string][]byte{logPath: log, indexPath: index} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The server's own log directory: .log files that are not segments.
	if err := os.MkdirAll(filepath.Join(dataDir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "logs", "00000000000000000000.log"), []byte("server log line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dataDir, logPath, indexPath
}

func fileBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTrimTornTails(t *testing.T) {
	t.Parallel()
	a, b := segmentBatch(100), segmentBatch(40)
	whole := append(append([]byte{}, a...), b...)
	torn := segmentBatch(500)[:300] // its header says 756 bytes, 300 arrived
	badHeader := segmentBatch(10)
	badHeader[tornBatchReservedAt+3] = 1
	for _, tc := range []struct {
		name         string
		log, index   []byte
		wantLog      int
		wantEntries  int
		wantCutLines int
	}{
		{"whole", whole, indexEntries(0, len(a)), len(whole), 2, 0},
		{"torn batch", append(append([]byte{}, whole...), torn...), indexEntries(0, len(a), len(whole)), len(whole), 2, 2},
		{"short header", append(append([]byte{}, whole...), make([]byte, 100)...), indexEntries(0, len(a)), len(whole), 2, 1},
		{"reserved bytes set", append(append([]byte{}, whole...), badHeader...), indexEntries(0, len(a)), len(whole), 2, 1},
		{"torn index entry", whole, indexEntries(0, len(a))[:tornIndexEntryLen+5], len(whole), 1, 1},
		{"torn first batch", torn, indexEntries(0), 0, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dataDir, logPath, indexPath := writeSegment(t, tc.log, tc.index)
			cut, err := TrimTornTails(dataDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(cut) != tc.wantCutLines {
				t.Errorf("cut %q, want %d lines", cut, tc.wantCutLines)
			}
			if got := fileBytes(t, logPath); !bytes.Equal(got, tc.log[:tc.wantLog]) {
				t.Errorf("log is %d bytes, want the first %d of %d", len(got), tc.wantLog, len(tc.log))
			}
			if got, want := fileBytes(t, indexPath), indexEntries(0, len(a))[:tc.wantEntries*tornIndexEntryLen]; !bytes.Equal(got, want) {
				t.Errorf("index is %d bytes, want %d entries", len(got), tc.wantEntries)
			}
			if got := fileBytes(t, filepath.Join(dataDir, "logs", "00000000000000000000.log")); string(got) != "server log line\n" {
				t.Errorf("the server's own log file was changed: %q", got)
			}
		})
	}
}

func TestTrimTornTailsOfNothing(t *testing.T) {
	t.Parallel()
	if cut, err := TrimTornTails(filepath.Join(t.TempDir(), "absent")); err != nil || len(cut) != 0 {
		t.Fatalf("a data directory not made yet: cut %q, %v", cut, err)
	}
}
