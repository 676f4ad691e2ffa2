package embedded

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
)

// mountTmpfs mounts a tmpfs of size (e.g. "8m") on a fresh directory and
// unmounts it at cleanup. It skips when not root or the mount fails, and
// fails instead under IGGY_KAFKA_E2E_REQUIRED=1 (CI runs as root).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("IGGY_KAFKA_E2E_REQUIRED") == "1" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("disk-full test needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		skip("mount tmpfs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes n bytes to path (the filler freed later to make space).
func fill(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A full disk is an answer: the Appends in flight when it fills are cut
// off by the guard with ErrStorage at once, later ones are refused at
// once, reads go on; once space is freed the store serves again by itself,
// and every acknowledged record is there after a reopen.
func TestStoreFailDiskFullRecovers(t *testing.T) {
	// Not parallel: it bounds how fast appends are answered, which load from parallel tests would stretch.
	for _, p := range []SyncPolicy{SyncAlways, SyncInterval} {
		t.Run(p.String(), func(t *testing.T) { diskFullRecovers(t, p) })
	}
}

func diskFullRecovers(t *testing.T, policy SyncPolicy) {
	mnt := mountTmpfs(t, "8m")
	fill(t, filepath.Join(mnt, "filler"), 3<<20)
	dir := filepath.Join(mnt, "data")
	s, err := Open(dir, Options{Sync: policy, Logger: quietLogger(), DiskRetry: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	g := bridge.Guard(s, bridge.GuardOptions{Timeout: 5 * time.Second, Log: quietLogger()})
	if _, err := g.CreateTopic(ctx, "kafka", "t", 2); err != nil {
		t.Fatal(err)
	}
	batch := makeBatch(t, strings.Repeat("x", 16<<10), 4, 1) // ~64 KiB

	type ack struct {
		part int32
		base uint64
	}
	var (
		mu       sync.Mutex
		acks     []ack
		firstErr time.Time
		errs     []error
		wg       sync.WaitGroup
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(part int32) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				start := time.Now()
				base, err := g.Append(ctx, "kafka", "t", part, batch)
				mu.Lock()
				if err != nil {
					if firstErr.IsZero() {
						firstErr = start
					}
					errs = append(errs, err)
					mu.Unlock()
					if time.Since(start) > time.Second {
						t.Errorf("append failed after %v, want an answer within a second", time.Since(start))
					}
					return
				}
				acks = append(acks, ack{part, base})
				mu.Unlock()
			}
		}(int32(w % 2))
	}
	wg.Wait()
	if len(errs) != 4 {
		t.Fatalf("the 8 MiB disk never filled: %d acks", len(acks))
	}
	for _, err := range errs {
		if !errors.Is(err, bridge.ErrStorage) {
			t.Fatalf("append on a full disk: %v, want ErrStorage", err)
		}
	}
	h, _ := g.Health()
	if h.State != bridge.Degraded {
		t.Fatalf("health on a full disk: %+v", h)
	}
	// Refused at once, not hung.
	start := time.Now()
	if _, err := g.Append(ctx, "kafka", "t", 0, batch); !errors.Is(err, bridge.ErrStorage) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("append while full: %v after %v", err, time.Since(start))
	}
	// Reads and metadata go on.
	if _, err := g.Topics(ctx, "kafka"); err != nil {
		t.Fatalf("topics while full: %v", err)
	}
	if err := g.Poll(ctx, "kafka", "t", 0, 0, 1<<20, func([]byte) bool { return true }); err != nil {
		t.Fatalf("poll while full: %v", err)
	}

	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	await.Until(t, 10*time.Second, func() error {
		if h, _ := g.Health(); h.State != bridge.Healthy {
			return fmt.Errorf("store did not recover after space was freed: %+v (blocked %d, writing %d, hung %d)",
				h, s.health.blocked.Load(), s.health.writing.Load(), g.Hung())
		}
		return nil
	})
	base, err := g.Append(ctx, "kafka", "t", 0, makeBatch(t, "after", 1, 1))
	if err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	acks = append(acks, ack{0, base})
	if err := g.Close(); err != nil {
		t.Fatalf("close after recovery: %v", err)
	}

	// Reopen on a bigger disk: replaying the WAL flushes it to an sstable,
	// which needs as much space again as the small one had.
	big := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", dir, big).CombinedOutput(); err != nil {
		t.Fatalf("copy data: %v: %s", err, out)
	}
	s2 := openStore(t, big, SyncAlways)
	defer s2.Close()
	for _, a := range acks {
		found := false
		err := s2.Poll(ctx, "kafka", "t", a.part, a.base, 1, func(b []byte) bool {
			v, err := bridge.ParseIggyBatch(b)
			found = err == nil && v.BaseOffset <= a.base
			return false
		})
		if err != nil || !found {
			t.Fatalf("acknowledged batch at %d/%d missing after reopen: %v", a.part, a.base, err)
		}
	}
	t.Logf("%d acknowledged appends before the disk filled, all present after reopen", len(acks)-1)
}

// Fatalf neither returns nor panics: the store is failed for good, the
// goroutine that called it stays parked, and calls are answered.
func TestStoreFailFatalfParks(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncNever, 1)
	returned := make(chan struct{})
	go func() {
		pebbleLogger{l: quietLogger(), h: s.health}.Fatalf("pebble: fatal commit error: %v", errors.New("boom"))
		close(returned)
	}()
	await.True(t, 5*time.Second, "Fatalf marked the store failed", s.health.needsRestart)
	if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 1, 1)); !errors.Is(err, bridge.ErrStorage) {
		t.Fatalf("append after Fatalf: %v", err)
	}
	select {
	case <-returned:
		t.Fatal("Fatalf returned")
	case <-time.After(50 * time.Millisecond):
	}
	h, _ := s.Health()
	if h.State != bridge.NeedsRestart || !strings.Contains(h.Cause.Error(), "boom") {
		t.Fatalf("health %+v", h)
	}
}

// eioFS fails every write to a WAL file with EIO once fail is set, as a
// dying disk would.
type eioFS struct {
	vfs.FS
	fail *atomic.Bool
}

func (fs eioFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return eioFile{File: f, fail: fs.fail}, nil
}

func (fs eioFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil {
		return f, err
	}
	return eioFile{File: f, fail: fs.fail}, nil
}

type eioFile struct {
	vfs.File
	fail *atomic.Bool
}

func (f eioFile) Write(p []byte) (int, error) {
	if f.fail.Load() {
		return 0, &os.PathError{Op: "write", Path: "wal", Err: syscall.EIO}
	}
	return f.File.Write(p)
}

// WriteAt fails too: segment logs write with it.
func (f eioFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fail.Load() {
		return 0, &os.PathError{Op: "write", Path: "segment", Err: syscall.EIO}
	}
	return f.File.WriteAt(p, off)
}

// An I/O error on the WAL is "restart needed": the Append in flight is
// answered with ErrStorage at once (pebble never sees the error, so it
// neither panics nor calls Fatalf), later writes and disk reads are refused
// at once, the in-memory catalog still answers, Close returns at once, and
// a reopen finds every acknowledged record.
func TestStoreFailIOErrorNeedsRestart(t *testing.T) {
	// Not parallel: it bounds how fast calls are answered, which load from parallel tests would stretch.
	dir := t.TempDir()
	var fail atomic.Bool
	s, err := Open(dir, Options{Sync: SyncAlways, Logger: quietLogger(), baseFS: eioFS{FS: vfs.Default, fail: &fail}})
	if err != nil {
		t.Fatal(err)
	}
	g := bridge.Guard(s, bridge.GuardOptions{Timeout: 10 * time.Second, CloseTimeout: time.Second, Log: quietLogger()})
	if _, err := g.CreateTopic(ctx, "kafka", "t", 1); err != nil {
		t.Fatal(err)
	}
	var acked []uint64
	for i := 0; i < 5; i++ {
		base, err := g.Append(ctx, "kafka", "t", 0, makeBatch(t, "ok", 2, 1))
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, base)
	}
	fail.Store(true)
	start := time.Now()
	_, err = g.Append(ctx, "kafka", "t", 0, makeBatch(t, "lost", 2, 1))
	if !errors.Is(err, bridge.ErrStorage) || time.Since(start) > time.Second {
		t.Fatalf("append on a failing disk: %v after %v", err, time.Since(start))
	}
	h, _ := g.Health()
	if h.State != bridge.NeedsRestart || !strings.Contains(h.Cause.Error(), "input/output error") {
		t.Fatalf("health after EIO: %+v", h)
	}
	start = time.Now()
	if _, err := g.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 1, 1)); !errors.Is(err, bridge.ErrStorage) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("append after EIO: %v after %v", err, time.Since(start))
	}
	if err := g.Poll(ctx, "kafka", "t", 0, 0, 1<<20, func([]byte) bool { return true }); !errors.Is(err, bridge.ErrStorage) {
		t.Fatalf("poll after EIO: %v", err)
	}
	if st, err := g.Partition(ctx, "kafka", "t", 0); err != nil || st.Next != 10 {
		t.Fatalf("partition after EIO: %+v %v", st, err)
	}
	start = time.Now()
	if err := g.Close(); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("close after EIO: %v after %v", err, time.Since(start))
	}

	// The failed db still holds its lock in this process: reopen a copy,
	// as a restarted gateway would open the directory.
	cp := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
		t.Fatalf("copy data: %v: %s", err, out)
	}
	s2 := openStore(t, cp, SyncAlways)
	defer s2.Close()
	got := pollAll(t, s2, "t", 0, 0)
	if len(got) < 2*len(acked) {
		t.Fatalf("%d messages after reopen, want at least the %d acknowledged", len(got), 2*len(acked))
	}
	for i := 0; i < 2*len(acked); i++ {
		if got[i].offset != uint64(i) || !strings.HasPrefix(got[i].payload, "ok-") {
			t.Fatalf("message %d after reopen: %+v", i, got[i])
		}
	}
}
