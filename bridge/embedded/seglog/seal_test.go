package seglog

import (
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/internal/await"
)

// rollPastSync appends two batches into segments of two batches' size,
// then a third that rolls, with data syncs held at the gate: it returns
// the log and the third batch's end position.
func rollPastSync(t *testing.T, fs *faultFS) (*Log, int64) {
	t.Helper()
	l := openLog(t, fs, opts{})
	b := makeBatch(t, "x", 2, 1, 100)
	seg := 2 * int64(len(b))
	appendBatch(t, l, b, seg)
	appendBatch(t, l, b, seg)
	done := make(chan int64, 1)
	go func() {
		_, end := appendBatch(t, l, b, seg)
		done <- end
	}()
	select {
	case end := <-done:
		return l, end
	case <-time.After(5 * time.Second):
		t.Fatal("the append that rolled waited for the old segment's sync")
		return nil, 0
	}
}

// rollHoldingFirstSeal rolls past the first segment (rollPastSync) with
// only that segment's data syncs held, so the round's own sync of the
// active segment goes through; release (idempotent) lets the seal go on.
func rollHoldingFirstSeal(t *testing.T) (mem *vfs.MemFS, l *Log, end int64, release func()) {
	t.Helper()
	mem = newMemFS(t)
	gate := make(chan struct{})
	fs := &faultFS{FS: mem, syncGate: gate, gateOnly: segmentName(0, logSuffix)}
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	l, end = rollPastSync(t, fs)
	return mem, l, end, release
}

// stillWaiting starts l.WaitSynced(ctx, pos) and fails t if it returns
// within d (when says what should hold it back); its result arrives on
// the channel returned.
func stillWaiting(t *testing.T, l *Log, pos int64, d time.Duration, when string) <-chan error {
	t.Helper()
	waited := make(chan error, 1)
	go func() { waited <- l.WaitSynced(ctx, pos) }()
	select {
	case err := <-waited:
		t.Fatalf("WaitSynced returned (%v) %s", err, when)
	case <-time.After(d):
	}
	return waited
}

// Without VisibleOnSync a roll does not wait for the old segment's sync
// (a whole segment, up to 1 GiB: seconds of stalled produce); a sync
// round does not count anything durable before that seal has synced; the
// seal's index appears once it has.
func TestBackgroundSealDoesNotStallAppends(t *testing.T) {
	t.Parallel()
	mem, l, end, release := rollHoldingFirstSeal(t)
	defer l.Close()
	defer release() // before Close, which waits for the seal
	if l.Segments() != 2 || l.Next() != 6 {
		t.Fatalf("segments %d next %d", l.Segments(), l.Next())
	}
	if got := readAll(t, l, 0); len(got) != 6 {
		t.Fatalf("read %d messages while the seal runs", len(got))
	}
	waited := stillWaiting(t, l, end, 50*time.Millisecond, "while the old segment's sync was held")
	if _, err := mem.Stat(mem.PathJoin(testDir, segmentName(0, indexSuffix))); err == nil {
		t.Fatal("index written before the segment was synced")
	}
	release()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	// The round waited for the seal, which writes its index right after
	// its sync; give it the moment.
	await.True(t, 5*time.Second, "the index written after the seal", func() bool {
		_, err := mem.Stat(mem.PathJoin(testDir, segmentName(0, indexSuffix)))
		return err == nil
	})
}

// A crash while a background seal runs: after a kill -9 (the page cache
// kept) Open scans the segment without an index and keeps everything;
// after a power loss (only synced bytes kept) the segment's lost tail
// takes the later segments with it, so the log is a clean prefix with no
// hole in its offsets.
func TestCrashDuringBackgroundSeal(t *testing.T) {
	t.Parallel()
	mem := newMemFS(t)
	gate := make(chan struct{})
	fs := &faultFS{FS: mem, syncGate: gate}
	l, _ := rollPastSync(t, fs)
	b := makeBatch(t, "y", 2, 1, 100)
	appendBatch(t, l, b, 2*int64(len(b))) // fills the new segment
	processDeath := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
	powerLoss := mem.CrashClone(vfs.CrashCloneCfg{})
	close(gate)
	_ = l.Close()

	lg, logs := captureLog()
	l1 := openLog(t, processDeath, opts{logger: lg})
	if got := readAll(t, l1, 0); len(got) != 8 || l1.Next() != 8 {
		t.Fatalf("after a process death: %d messages, next %d", len(got), l1.Next())
	}
	if !strings.Contains(logs.String(), "index missing") {
		t.Fatalf("scan not logged: %s", logs)
	}
	_ = l1.Close()

	lg, logs = captureLog()
	l2 := openLog(t, powerLoss, opts{logger: lg})
	defer l2.Close()
	got := readAll(t, l2, 0)
	for i, m := range got {
		if m.off != uint64(i) {
			t.Fatalf("hole in the recovered offsets: %v", got)
		}
	}
	if l2.Next() != uint64(len(got)) || l2.Segments() > 1 {
		t.Fatalf("next %d after %d messages, %d segments", l2.Next(), len(got), l2.Segments())
	}
	if !strings.Contains(logs.String(), "dropping the segments after it") {
		t.Fatalf("drop not logged: %s", logs)
	}
	if base, _ := appendBatch(t, l2, b, 0); base != uint64(len(got)) {
		t.Fatalf("append after recovery at %d, want %d", base, len(got))
	}
}

// A background seal that cannot write its index fails no append: the log
// goes on, and the next Open rebuilds the index by a scan.
func TestBackgroundSealIndexFailure(t *testing.T) {
	t.Parallel()
	fs, mem, l := openFaulty(t, false)
	fs.set(func(fs *faultFS) { fs.createErr, fs.createSuffix = syscall.ENOSPC, indexSuffix })
	b := makeBatch(t, "x", 2, 1, 100)
	seg := 2 * int64(len(b))
	for i := 0; i < 3; i++ {
		if _, _, err := tryAppend(l, b, seg); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	_ = l.Close() // waits for the seal
	fs.set(func(fs *faultFS) { fs.createErr = nil })
	lg, logs := captureLog()
	l2 := openLog(t, mem, opts{logger: lg})
	defer l2.Close()
	if got := readAll(t, l2, 0); len(got) != 6 {
		t.Fatalf("after reopen %d messages", len(got))
	}
	if !strings.Contains(logs.String(), "index missing") {
		t.Fatalf("rebuild not logged: %s", logs)
	}
	if _, err := mem.Stat(mem.PathJoin(testDir, segmentName(0, indexSuffix))); err != nil {
		t.Fatalf("index not rebuilt: %v", err)
	}
}

// Open writes the index of a segment it found without one only after
// syncing the segment: after a process death its bytes may be in the page
// cache only, and a power loss after the recovery must not find an index
// vouching for bytes it lost.
func TestRecoverySyncsUnsealedSegment(t *testing.T) {
	t.Parallel()
	mem := newMemFS(t)
	gate := make(chan struct{})
	fs := &faultFS{FS: mem, syncGate: gate}
	dead, _ := rollPastSync(t, fs) // "dies" here: its seal never syncs
	defer func() {
		close(gate)
		_ = dead.Close()
	}()
	l := openLog(t, mem, opts{}) // the next process, on the same files
	if got := readAll(t, l, 0); len(got) != 6 {
		t.Fatalf("after the process death: %d messages", len(got))
	}
	powerLoss := mem.CrashClone(vfs.CrashCloneCfg{})
	_ = l.Close()
	l2 := openLog(t, powerLoss, opts{})
	defer l2.Close()
	if got := readAll(t, l2, 0); len(got) != 6 {
		t.Fatalf("power loss after the recovery: %d messages", len(got))
	}
}

// Two rolls while the first seal's sync is held: neither append waits,
// and nothing counts as synced until the first seal has synced, although
// the second seal (and the round's own sync) went through: seals count
// their segments synced in order.
func TestSealsChainInOrder(t *testing.T) {
	t.Parallel()
	_, l, _, release := rollHoldingFirstSeal(t)
	defer l.Close()
	defer release()
	b := makeBatch(t, "y", 2, 1, 100)
	appendBatch(t, l, b, 2*int64(len(b)))
	done := make(chan int64, 1)
	go func() {
		_, end := appendBatch(t, l, b, 2*int64(len(b))) // the second roll
		done <- end
	}()
	var end int64
	select {
	case end = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the second roll waited for the first seal")
	}
	if l.Segments() != 3 {
		t.Fatalf("%d segments", l.Segments())
	}
	waited := stillWaiting(t, l, end, 100*time.Millisecond, "before the first seal synced")
	release()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}
