package seglog

import (
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// maxChunk bounds one read of a walk (and so a pooled buffer), whatever
// maxBytes a caller asks for; a single batch larger than it is read whole
// into a buffer of its own size.
const maxChunk = 8 << 20

// minChunk is the smallest read of a walk: small polls still read a few
// batches' worth at once.
const minChunk = 16 << 10

// bufPool holds read buffers (*[]byte) of up to 2*maxChunk bytes.
var bufPool sync.Pool

// window holds bytes [off, off+n) of one segment file in a pooled buffer,
// so a walk reads a file in few large preads and hands out sub-slices.
// One goroutine.
type window struct {
	buf *[]byte
	off int64
	n   int
}

// at returns the need bytes at file position pos, reading from pos when
// they are not held: at least need bytes, up to want, never past limit.
// The slice is valid until the next call or release.
func (w *window) at(f vfs.File, pos int64, need, want int, limit int64) ([]byte, error) {
	if w.buf != nil && pos >= w.off && pos+int64(need) <= w.off+int64(w.n) {
		i := int(pos - w.off)
		return (*w.buf)[i : i+need], nil
	}
	size := max(need, int(min(int64(want), limit-pos)))
	w.grow(size)
	w.n = 0
	if err := readFull(f, (*w.buf)[:size], pos); err != nil {
		return nil, err
	}
	w.off, w.n = pos, size
	return (*w.buf)[:need], nil
}

// grow makes the buffer hold at least size bytes.
func (w *window) grow(size int) {
	if w.buf == nil {
		if b, ok := bufPool.Get().(*[]byte); ok {
			w.buf = b
		}
	}
	if w.buf != nil && cap(*w.buf) >= size {
		*w.buf = (*w.buf)[:cap(*w.buf)]
		return
	}
	b := make([]byte, max(size, minChunk))
	w.buf = &b
}

// forget drops the held bytes (the file changed or another file follows).
func (w *window) forget() { w.n = 0 }

// release returns the buffer to the pool.
func (w *window) release() {
	if w.buf != nil && cap(*w.buf) <= 2*maxChunk {
		bufPool.Put(w.buf)
	}
	w.buf, w.n = nil, 0
}
