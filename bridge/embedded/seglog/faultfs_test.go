package seglog

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// faultFS wraps a filesystem and injects faults into the log's files:
// failing writes (after writing part of them, as a disk filling up does),
// failing or slow or gated syncs, failing creations. Its files implement
// no Truncate, so a failed write is undone by zeroing (append.go, undo).
type faultFS struct {
	vfs.FS
	mu sync.Mutex
	// writeErr fails the next writeFails writes to .log files, each after
	// writing its first partial bytes.
	writeErr   error
	writeFails int
	partial    int
	// createErr fails creating files whose name ends with createSuffix.
	createErr    error
	createSuffix string
	syncErr      error         // fails data syncs of .log files
	syncGate     chan struct{} // when set, data syncs wait for it to close
	gateOnly     string        // when set, only syncs of the file of this name wait
	syncDelay    time.Duration
	syncs        atomic.Int64 // data syncs of .log files
	readAts      atomic.Int64 // reads of .log files
}

func (fs *faultFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	fs.mu.Lock()
	err := fs.createErr
	if err != nil && !strings.HasSuffix(name, fs.createSuffix) {
		err = nil
	}
	fs.mu.Unlock()
	if err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name, cat)
	return fs.wrap(name, f, err)
}

func (fs *faultFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, o ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, cat, o...)
	return fs.wrap(name, f, err)
}

func (fs *faultFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return &faultFile{File: f, fs: fs, name: name}, nil
}

// set changes the injected faults under the lock.
func (fs *faultFS) set(fn func(fs *faultFS)) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fn(fs)
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	var err error
	partial := 0
	if f.fs.writeFails > 0 {
		f.fs.writeFails--
		err, partial = f.fs.writeErr, min(f.fs.partial, len(p))
	}
	f.fs.mu.Unlock()
	if err == nil {
		return f.File.WriteAt(p, off)
	}
	if partial > 0 {
		if _, werr := f.File.WriteAt(p[:partial], off); werr != nil {
			return 0, werr
		}
	}
	return partial, err
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.readAts.Add(1)
	return f.File.ReadAt(p, off)
}

func (f *faultFile) SyncData() error {
	f.fs.mu.Lock()
	err, gate, delay := f.fs.syncErr, f.fs.syncGate, f.fs.syncDelay
	if f.fs.gateOnly != "" && !strings.HasSuffix(f.name, f.fs.gateOnly) {
		gate = nil
	}
	f.fs.mu.Unlock()
	if gate != nil {
		<-gate
	}
	time.Sleep(delay)
	if err != nil {
		return err
	}
	f.fs.syncs.Add(1)
	return f.File.SyncData()
}

func (f *faultFile) Sync() error { return f.SyncData() }
