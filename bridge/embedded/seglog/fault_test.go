package seglog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/internal/await"
)

func openFaulty(t *testing.T, visibleSync bool) (*faultFS, *vfs.MemFS, *Log) {
	t.Helper()
	mem := newMemFS(t)
	fs := &faultFS{FS: mem}
	return fs, mem, openLog(t, fs, opts{visibleSync: visibleSync})
}

// openGated is openFaulty with every fdatasync held until release.
func openGated(t *testing.T, visibleSync bool) (*faultFS, *Log, func()) {
	t.Helper()
	fs, _, l := openFaulty(t, visibleSync)
	gate := make(chan struct{})
	fs.set(func(fs *faultFS) { fs.syncGate = gate })
	return fs, l, func() {
		fs.set(func(fs *faultFS) { fs.syncGate = nil })
		close(gate)
	}
}

// TestAppendDiskFullRollsBack: a write failing with ENOSPC after writing
// part of the batch returns the error, hands its offsets back and shows
// nothing; the next append takes the same offsets, and both a reopen and a
// crash right after the failure recover a clean log.
func TestAppendDiskFullRollsBack(t *testing.T) {
	t.Parallel()
	for _, partial := range []int{0, 100, 300, 1 << 20} {
		t.Run(fmt.Sprint("partial=", partial), func(t *testing.T) {
			fs, mem, l := openFaulty(t, false)
			for i := 0; i < 3; i++ {
				appendBatch(t, l, makeBatch(t, fmt.Sprint("ok", i), 2, 1, 200), 0)
			}
			size := l.Size()
			fs.set(func(fs *faultFS) { fs.writeErr, fs.writeFails, fs.partial = syscall.ENOSPC, 1, partial })
			_, _, err := tryAppend(l, makeBatch(t, "lost", 3, 1, 200), 0)
			if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrBroken) {
				t.Fatalf("append on a full disk: %v", err)
			}
			if l.Next() != 6 || l.Size() != size || len(readAll(t, l, 0)) != 6 {
				t.Fatalf("after the failed append: next %d size %d", l.Next(), l.Size())
			}
			crashed := mem.CrashClone(vfs.CrashCloneCfg{})
			if base, _ := appendBatch(t, l, makeBatch(t, "next", 1, 1, 0), 0); base != 6 {
				t.Fatalf("append after the failure took %d, want 6", base)
			}
			if got := readAll(t, l, 0); len(got) != 7 || got[6].payload != "next-0" {
				t.Fatalf("read %v", got)
			}
			_ = l.Close()
			l = openLog(t, mem, opts{})
			if got := readAll(t, l, 0); len(got) != 7 || got[6].payload != "next-0" || l.Size() != fileSize(t, mem, segmentName(0, logSuffix)) {
				t.Fatalf("after reopen %v", got)
			}
			_ = l.Close()
			// The crash copy holds at most the unsynced failed write: cut.
			l = openLog(t, crashed, opts{})
			defer l.Close()
			if got := readAll(t, l, 0); len(got) > 6 {
				t.Fatalf("crash after the failure shows %v", got)
			}
		})
	}
}

// A roll that cannot create the new segment or (sealing inline, under
// VisibleOnSync) the old one's index fails the append and leaves the log
// as it was; the next one rolls.
func TestRollFailureLeavesLog(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{logSuffix, indexSuffix} {
		t.Run(suffix, func(t *testing.T) {
			fs, mem, l := openFaulty(t, suffix == indexSuffix)
			b := makeBatch(t, "x", 2, 1, 100)
			seg := 2 * int64(len(b))
			appendBatch(t, l, b, seg)
			appendBatch(t, l, b, seg)
			fs.set(func(fs *faultFS) { fs.createErr, fs.createSuffix = syscall.ENOSPC, suffix })
			if _, _, err := tryAppend(l, b, seg); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("append whose roll fails: %v", err)
			}
			if l.Next() != 4 || l.Segments() != 1 {
				t.Fatalf("next %d segments %d", l.Next(), l.Segments())
			}
			fs.set(func(fs *faultFS) { fs.createErr = nil })
			if base, _ := appendBatch(t, l, b, seg); base != 4 || l.Segments() != 2 {
				t.Fatalf("append after: %d, %d segments", base, l.Segments())
			}
			_ = l.Close()
			l = openLog(t, mem, opts{})
			defer l.Close()
			if got := readAll(t, l, 0); len(got) != 6 {
				t.Fatalf("after reopen %d messages", len(got))
			}
		})
	}
}

// A failed sync breaks the log: the waiting append gets the error (and
// never sees its batch visible under VisibleOnSync), later appends are
// refused, reads go on.
func TestSyncFailureBreaksLog(t *testing.T) {
	t.Parallel()
	fs, _, l := openFaulty(t, true)
	defer l.Close()
	_, end := appendBatch(t, l, makeBatch(t, "a", 1, 1, 0), 0)
	if err := l.WaitSynced(ctx, end); err != nil {
		t.Fatal(err)
	}
	fs.set(func(fs *faultFS) { fs.syncErr = syscall.EIO })
	_, end = appendBatch(t, l, makeBatch(t, "b", 1, 1, 0), 0)
	if err := l.WaitSynced(ctx, end); !errors.Is(err, ErrBroken) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("wait after a failed sync: %v", err)
	}
	if l.Next() != 1 {
		t.Fatalf("unsynced batch visible: next %d", l.Next())
	}
	if _, _, err := tryAppend(l, makeBatch(t, "c", 1, 1, 0), 0); !errors.Is(err, ErrBroken) {
		t.Fatalf("append on a broken log: %v", err)
	}
	if got := readAll(t, l, 0); len(got) != 1 {
		t.Fatalf("read on a broken log: %v", got)
	}
}

// A write that fails and cannot be undone breaks the log.
func TestUndoFailureBreaksLog(t *testing.T) {
	t.Parallel()
	fs, _, l := openFaulty(t, false)
	defer l.Close()
	appendBatch(t, l, makeBatch(t, "a", 1, 1, 0), 0)
	fs.set(func(fs *faultFS) { fs.writeErr, fs.writeFails, fs.partial = syscall.EIO, 2, 50 })
	if _, _, err := tryAppend(l, makeBatch(t, "b", 1, 1, 0), 0); !errors.Is(err, ErrBroken) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append whose undo fails: %v", err)
	}
	if _, _, err := tryAppend(l, makeBatch(t, "c", 1, 1, 0), 0); !errors.Is(err, ErrBroken) {
		t.Fatalf("append on a broken log: %v", err)
	}
}

// TestGroupCommit: appends arriving while a sync round runs are held and
// then share one fdatasync: with the first round's sync held, 7 appends
// queue at the gate, and when it is released one more sync makes all 7
// durable and visible.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	fs, l, release := openGated(t, true)
	defer l.Close()
	appendSync := func(tag string, done chan<- error) {
		_, end, err := tryAppend(l, makeBatch(t, tag, 1, 1, 0), 0)
		if err == nil {
			err = l.WaitSynced(ctx, end)
		}
		done <- err
	}
	done := make(chan error, 8)
	go appendSync("lead", done)
	await.True(t, 10*time.Second, "a sync round running", l.leading)
	for i := 0; i < 7; i++ {
		go appendSync(fmt.Sprint("w", i), done)
	}
	await.True(t, 10*time.Second, "7 appends held at the gate", func() bool { return l.heldAtGate() == 7 })
	release()
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := fs.syncs.Load(); n != 2 || l.Next() != 8 || len(readAll(t, l, 0)) != 8 {
		t.Fatalf("%d syncs for 8 appends (want 2: the leader's, then one for the 7 held), next %d", n, l.Next())
	}
}

// TestGroupCommitConcurrent: with writers appending and waiting at once,
// every wait returns with its batch visible, readers never see a batch
// before it was synced, and the writers shared syncs.
func TestGroupCommitConcurrent(t *testing.T) {
	t.Parallel()
	fs, _, l := openFaulty(t, true)
	defer l.Close()
	fs.set(func(fs *faultFS) { fs.syncDelay = time.Millisecond })
	const writers, each = 8, 25
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		// Whatever is visible was synced: the synced count never lags.
		for {
			select {
			case <-stop:
				readErr <- nil
				return
			default:
			}
			l.sc.mu.Lock()
			synced, vis := l.sc.synced, l.visiblePos.Load()
			l.sc.mu.Unlock()
			if vis > synced {
				readErr <- fmt.Errorf("visible position %d past the synced %d", vis, synced)
				return
			}
			if _, err := tryReadAll(l, 0); err != nil {
				readErr <- err
				return
			}
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				base, end, err := tryAppend(l, makeBatch(t, fmt.Sprint(w, ".", i), 1, 1, 0), 0)
				if err == nil {
					err = l.WaitSynced(ctx, end)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if l.Next() <= base {
					t.Errorf("batch at %d not visible after its wait (next %d)", base, l.Next())
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, 0); len(got) != writers*each {
		t.Fatalf("%d messages", len(got))
	}
	if n := fs.syncs.Load(); n >= writers*each {
		t.Fatalf("%d syncs for %d appends: none shared", n, writers*each)
	}
	t.Logf("%d syncs for %d appends", fs.syncs.Load(), writers*each)
}

// TestWaitSyncedGated: under VisibleOnSync a written batch stays invisible
// while its sync runs; an append arriving meanwhile waits (holding no
// lock) until the round ends, or until its context ends, and then writes
// nothing; released, it writes and its own round syncs it.
func TestWaitSyncedGated(t *testing.T) {
	t.Parallel()
	_, l, release := openGated(t, true)
	defer l.Close()
	_, end1 := appendBatch(t, l, makeBatch(t, "a", 2, 1, 0), 0)
	done1 := make(chan error, 1)
	go func() { done1 <- l.WaitSynced(ctx, end1) }()
	await.True(t, 10*time.Second, "a sync round running", l.leading)
	written := l.written.Load()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, _, err := tryAppendCtx(cctx, l, makeBatch(t, "b", 1, 1, 0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append with an ended context during a round: %v", err)
	}
	if l.written.Load() != written {
		t.Fatal("an append refused at the gate wrote")
	}
	done3 := make(chan error, 1)
	go func() {
		_, end, err := tryAppendCtx(ctx, l, makeBatch(t, "c", 1, 1, 0))
		if err == nil {
			err = l.WaitSynced(ctx, end)
		}
		done3 <- err
	}()
	await.True(t, 10*time.Second, "c held at the gate", func() bool { return l.heldAtGate() == 1 })
	if l.Next() != 0 || len(readAll(t, l, 0)) != 0 || l.written.Load() != written {
		t.Fatal("batches visible, or written during the round")
	}
	release()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	if err := <-done3; err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, 0); l.Next() != 3 || len(got) != 3 || got[2].payload != "c-0" || l.Dirty() {
		t.Fatalf("after both rounds: next %d, %v", l.Next(), got)
	}
}

// TestWaitSyncedAbandoned: a waiter whose context ends returns at once
// (holding no lock), and the round running then runs once more, so its
// bytes are still synced.
func TestWaitSyncedAbandoned(t *testing.T) {
	t.Parallel()
	fs, l, release := openGated(t, false)
	defer l.Close()
	appendBatch(t, l, makeBatch(t, "a", 2, 1, 0), 0)
	done := make(chan error, 1)
	go func() { done <- l.Sync(ctx) }()
	await.True(t, 10*time.Second, "a sync round running", l.leading)
	_, end := appendBatch(t, l, makeBatch(t, "b", 1, 1, 0), 0) // not held: no VisibleOnSync
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := l.WaitSynced(cctx, end); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with an ended context: %v", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l.Dirty() || l.leading() || fs.syncs.Load() != 2 {
		t.Fatalf("dirty %v leading %v after %d syncs", l.Dirty(), l.leading(), fs.syncs.Load())
	}
}

func (l *Log) leading() bool {
	l.sc.mu.Lock()
	defer l.sc.mu.Unlock()
	return l.sc.leading
}

// heldAtGate is how many appends wait at the gate for the sync round to
// end.
func (l *Log) heldAtGate() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.gateWaiters)
}
