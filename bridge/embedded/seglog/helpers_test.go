package seglog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
)

var ctx = context.Background()

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testDir is where the tests' logs live in a MemFS.
const testDir = "/data/p0"

// newMemFS returns a crashable MemFS with testDir's parent made durable.
func newMemFS(t testing.TB) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewCrashableMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(fs, "/"); err != nil {
		t.Fatal(err)
	}
	return fs
}

// opts are the knobs of openLog.
type opts struct {
	start       uint64
	visibleSync bool
	logger      *slog.Logger
}

func openLog(t testing.TB, fs vfs.FS, o opts) *Log {
	t.Helper()
	l, err := tryOpen(fs, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// logAt is a log on a fresh file system whose clock stands at now (µs);
// it is closed when the test ends.
func logAt(t *testing.T, now uint64) *Log {
	t.Helper()
	l := openLog(t, newMemFS(t), opts{})
	t.Cleanup(func() { _ = l.Close() })
	l.cfg.Clock = func() uint64 { return now }
	return l
}

func tryOpen(fs vfs.FS, o opts) (*Log, error) {
	lg := o.logger
	if lg == nil {
		lg = quiet()
	}
	return Open(Config{FS: fs, Dir: testDir, Partition: 3, Start: o.start, VisibleOnSync: o.visibleSync, Logger: lg})
}

// makeBatch builds a native Iggy batch of n messages with payloads
// "<tag>-<i>" padded to pad bytes, origin timestamps origin, origin+1, ...
func makeBatch(t testing.TB, tag string, n int, origin uint64, pad int) []byte {
	t.Helper()
	var bb bridge.IggyBatchBuilder
	buf := bb.Begin(nil, origin)
	var err error
	for i := 0; i < n; i++ {
		p := fmt.Appendf(nil, "%s-%d", tag, i)
		if len(p) < pad {
			p = append(p, bytes.Repeat([]byte{'.'}, pad-len(p))...)
		}
		if buf, err = bb.Append(buf, [16]byte{byte(i)}, origin+uint64(i), p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if buf, err = bb.Finish(buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

// appendBatch appends a verified batch; it fails the test on an error.
func appendBatch(t testing.TB, l *Log, b []byte, segBytes int64) (uint64, int64) {
	t.Helper()
	base, end, err := tryAppend(l, b, segBytes)
	if err != nil {
		t.Fatal(err)
	}
	return base, end
}

func tryAppend(l *Log, b []byte, segBytes int64) (uint64, int64, error) {
	v, err := bridge.VerifyIggyBatch(b)
	if err != nil {
		return 0, 0, err
	}
	return l.Append(ctx, b[:v.Length], v, segBytes)
}

func tryAppendCtx(c context.Context, l *Log, b []byte) (uint64, int64, error) {
	v, err := bridge.VerifyIggyBatch(b)
	if err != nil {
		return 0, 0, err
	}
	return l.Append(c, b[:v.Length], v, 0)
}

// msg is one message read back.
type msg struct {
	off     uint64
	payload string
}

// readAll reads every visible message at or after from, checking that
// every batch verifies and that offsets follow each other.
func readAll(t testing.TB, l *Log, from uint64) []msg {
	t.Helper()
	out, err := tryReadAll(l, from)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readSome reads the messages of maxBytes of batches from from.
func readSome(t testing.TB, l *Log, from uint64, maxBytes int) []msg {
	t.Helper()
	out, err := tryRead(l, from, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryReadAll(l *Log, from uint64) ([]msg, error) { return tryRead(l, from, 1<<40) }

func tryRead(l *Log, from uint64, maxBytes int) ([]msg, error) {
	var out []msg
	var ierr error
	err := l.Read(from, maxBytes, func(b []byte) bool {
		v, err := bridge.VerifyIggyBatch(b)
		if err != nil {
			ierr = err
			return false
		}
		it := bridge.NewIggyMessageIter(v)
		for it.Next() {
			if m := it.Message(); m.Offset >= from {
				if n := len(out); n > 0 && out[n-1].off+1 != m.Offset {
					ierr = fmt.Errorf("offset %d after %d", m.Offset, out[n-1].off)
					return false
				}
				out = append(out, msg{m.Offset, string(bytes.TrimRight(m.Payload, "."))})
			}
		}
		return true
	})
	return out, firstErr(err, ierr)
}

// batches reads the visible batches from from, copied.
func batches(t testing.TB, l *Log, from uint64) [][]byte {
	t.Helper()
	var out [][]byte
	if err := l.Read(from, 1<<40, func(b []byte) bool { out = append(out, slices.Clone(b)); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

// fileSize is the size of a file of the log's directory.
func fileSize(t testing.TB, fs vfs.FS, name string) int64 {
	t.Helper()
	fi, err := fs.Stat(fs.PathJoin(testDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// listDir lists the log directory, sorted.
func listDir(t testing.TB, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List(testDir)
	if err != nil && !isNotExist(err) {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}
