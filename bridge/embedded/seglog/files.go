package seglog

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// File helpers over vfs.FS. A Log writes OS files directly (pwritev,
// ftruncate) only when Config.Direct says its FS is the OS's own, never
// through a wrapping FS, so fault-injecting test filesystems see every
// write.

// SyncDir makes the entries of dir durable (new or removed files). The
// embedded store uses it for its own directories too.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// writer writes a header and a body at one position: with one pwritev on a
// direct descriptor, else with two WriteAt calls. iov is the writer's own
// (it lives in the Log, so the syscall's argument does not escape to the
// heap per call). Writer goroutine, under Log.mu.
type writer struct {
	iov [2]unix.Iovec
}

// writeAt writes hdr then body at pos of sf, all of it or an error.
func (w *writer) writeAt(sf *segFile, pos int64, hdr, body []byte) error {
	if sf.fd < 0 {
		if _, err := sf.f.WriteAt(hdr, pos); err != nil {
			return err
		}
		if len(body) == 0 {
			return nil
		}
		_, err := sf.f.WriteAt(body, pos+int64(len(hdr)))
		return err
	}
	for len(hdr)+len(body) > 0 {
		n, err := w.pwritev(sf.fd, pos, hdr, body)
		if err != nil {
			return &os.PathError{Op: "pwritev", Path: "segment", Err: err}
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		pos += int64(n)
		k := min(n, len(hdr))
		hdr, body = hdr[k:], body[n-k:]
	}
	return nil
}

// pwritev is one pwritev(2) of hdr and body at pos; EINTR is retried.
func (w *writer) pwritev(fd int, pos int64, hdr, body []byte) (int, error) {
	iov := w.iov[:0]
	for _, b := range [2][]byte{hdr, body} {
		if len(b) > 0 {
			v := unix.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			iov = append(iov, v)
		}
	}
	// The kernel takes the position as two longs, low then high (x/sys's
	// offs2lohi); on 64-bit the high one is 0.
	lo, hi := uintptr(pos), uintptr(0)
	if unsafe.Sizeof(uintptr(0)) == 4 {
		hi = uintptr(uint64(pos) >> 32)
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_PWRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])),
			uintptr(len(iov)), lo, hi, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, errno
	}
}

// truncater is a file that can be cut (an OS file).
type truncater interface{ Truncate(size int64) error }

// truncate cuts the file at path, open as sf, to size and syncs it. A
// file that cannot truncate itself (a test filesystem) is rewritten: its
// first size bytes are copied to path.tmp, synced and renamed over it. It
// returns the file to use from now on (a new one after a rewrite; sf is
// then closed). Open's goroutine, or the writer under Log.mu.
func truncate(fs vfs.FS, path string, sf *segFile, size int64) (*segFile, error) {
	if t, ok := sf.f.(truncater); ok {
		if err := t.Truncate(size); err != nil {
			return sf, err
		}
		return sf, sf.f.SyncData()
	}
	tmp := path + tmpSuffix
	nf, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return sf, err
	}
	if _, err := io.Copy(nf, io.NewSectionReader(sf.f, 0, size)); err != nil {
		_ = nf.Close()
		return sf, err
	}
	if err := nf.Sync(); err != nil {
		_ = nf.Close()
		return sf, err
	}
	if err := fs.Rename(tmp, path); err != nil {
		_ = nf.Close()
		return sf, err
	}
	if err := SyncDir(fs, fs.PathDir(path)); err != nil {
		_ = nf.Close()
		return sf, err
	}
	_ = sf.f.Close()
	return &segFile{f: nf, fd: -1}, nil
}

// readFull reads len(b) bytes at off; a short file is ErrCorrupt-worthy
// for the caller, reported as io.ErrUnexpectedEOF.
func readFull(f vfs.File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// isNotExist reports a missing file or directory, through vfs wrappers.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
