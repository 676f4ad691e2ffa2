package embedded

import (
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// diskFS is the vfs.FS under pebble that keeps disk errors away from it
// (health.go says why): a full disk makes an operation wait and retry,
// any other write or sync error parks the goroutine for good after
// recording it. Reads, opens for reading and removals pass through.
// Methods run on whichever pebble goroutine does the I/O.
type diskFS struct {
	vfs.FS
	h *healthState
	// retryEvery is the pause between attempts while the disk is full: the
	// bounded rate of the space probe.
	retryEvery time.Duration
}

// Unwrap implements vfs.FS.
func (fs *diskFS) Unwrap() vfs.FS { return fs.FS }

// space runs op until it does not fail for lack of space. On another error
// it returns it when passErr (pebble handles those for this operation) or
// records it and parks forever.
func (fs *diskFS) space(what, path string, passErr bool, op func() error) error {
	err := op()
	if err == nil {
		return nil
	}
	if !isNoSpace(err) {
		if passErr {
			return err
		}
		fs.h.fatal(what+" "+path, err)
		waitForever()
	}
	fs.h.blocked.Add(1)
	fs.h.diskFull(what, path, err)
	start := time.Now()
	for {
		time.Sleep(fs.retryEvery)
		if err = op(); err == nil {
			break
		}
		if !isNoSpace(err) {
			fs.h.blocked.Add(-1)
			if passErr {
				return err
			}
			fs.h.fatal(what+" "+path, err)
			waitForever()
		}
		if every(&fs.h.lastWait, 30*time.Second) {
			fs.h.log.Error("embedded store: still waiting for disk space", "op", what, "path", path,
				"waiting", time.Since(start).Round(time.Second), "err", err)
		}
	}
	if fs.h.blocked.Add(-1) == 0 {
		fs.h.maybeRecover()
	}
	return nil
}

// Create implements vfs.FS. Pebble handles other creation errors itself
// (a failed flush is retried; a failed WAL creation ends in Fatalf).
func (fs *diskFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.space("create", name, true, func() (err error) {
		f, err = fs.FS.Create(name, cat)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f, fs: fs, name: name}, nil
}

// OpenReadWrite implements vfs.FS.
func (fs *diskFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	var f vfs.File
	err := fs.space("open", name, true, func() (err error) {
		f, err = fs.FS.OpenReadWrite(name, cat, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f, fs: fs, name: name}, nil
}

// ReuseForWrite implements vfs.FS.
func (fs *diskFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.space("reuse", newname, true, func() (err error) {
		f, err = fs.FS.ReuseForWrite(oldname, newname, cat)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &diskFile{File: f, fs: fs, name: newname}, nil
}

// Link implements vfs.FS.
func (fs *diskFS) Link(oldname, newname string) error {
	return fs.space("link", newname, true, func() error { return fs.FS.Link(oldname, newname) })
}

// Rename implements vfs.FS.
func (fs *diskFS) Rename(oldname, newname string) error {
	return fs.space("rename", newname, true, func() error { return fs.FS.Rename(oldname, newname) })
}

// MkdirAll implements vfs.FS.
func (fs *diskFS) MkdirAll(dir string, perm os.FileMode) error {
	return fs.space("mkdir", dir, true, func() error { return fs.FS.MkdirAll(dir, perm) })
}

// diskFile is a file opened for writing under diskFS.
type diskFile struct {
	vfs.File
	fs   *diskFS
	name string
}

// Write implements vfs.File: a short write for lack of space is continued
// from where it stopped once there is space.
func (f *diskFile) Write(p []byte) (int, error) {
	done := 0
	err := f.fs.space("write", f.name, false, func() error {
		n, err := f.File.Write(p[done:])
		done += n
		return err
	})
	return done, err
}

// WriteAt implements vfs.File.
func (f *diskFile) WriteAt(p []byte, off int64) (int, error) {
	done := 0
	err := f.fs.space("write", f.name, false, func() error {
		n, err := f.File.WriteAt(p[done:], off+int64(done))
		done += n
		return err
	})
	return done, err
}

// Preallocate is not wrapped: pebble ignores its errors (it is an
// optimisation), and a WAL preallocates 110% of the memtable, more than a
// small disk may have.

// Sync implements vfs.File. A failed fsync is never retried: the kernel
// may have dropped the unwritten pages and cleared the error, so a second
// fsync could succeed over lost data.
func (f *diskFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		f.syncFailed(err)
	}
	return nil
}

// SyncData implements vfs.File.
func (f *diskFile) SyncData() error {
	if err := f.File.SyncData(); err != nil {
		f.syncFailed(err)
	}
	return nil
}

// SyncTo implements vfs.File.
func (f *diskFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if err != nil {
		f.syncFailed(err)
	}
	return full, nil
}

func (f *diskFile) syncFailed(err error) {
	f.fs.h.fatal("fsync "+f.name, err)
	waitForever()
}
