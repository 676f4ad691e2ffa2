package loop

import (
	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/bytebufferpool"
)

// Frame assembly: a large request that has not fully arrived is read off
// the connection as it comes, straight into the pooled buffer its job will
// own, instead of waiting in gnet's inbound buffer for the rest.
//
// Without it, a 1 MB Produce is copied four times: by the kernel into
// gnet's read buffer, by gnet into the connection's inbound ring (each
// read the frame is not yet whole), by Peek into one contiguous slice (the
// frame spans the ring and the last read), and by queueFrame into the
// job's buffer. With it, twice: by the kernel, and from gnet's read buffer
// into the job's. A Produce of 1 KiB records spends about a third of the
// gateway's CPU on those copies (docs/PERFORMANCE.md).
//
// The assembled frame is the connection's until a job takes it: if the
// worker queue is full when it is whole, it stays assembled and the
// connection is held, as a peeked frame stays unread. Assembly starts only
// when the frame would be queued under the same caps a peeked one is
// (requestsFull), so memory stays bounded by MaxBufferedPerConn per
// connection (plus one frame of MaxFrameSize, as before).

// assembleMin is the smallest frame assembled: below it a frame that has
// not fully arrived waits in gnet's buffer, where it costs one small copy.
const assembleMin = 64 << 10

// assembly is a frame being read into a buffer of its own (buf nil: none).
// Loop only.
type assembly struct {
	buf   *bytebufferpool.ByteBuffer // the frame's body (the frame without its 4-byte size)
	total int                        // the frame's size, 4 included
}

// assembledBytes is how much of a frame being assembled has arrived (0:
// none is). Loop only.
func (cs *connState) assembledBytes() int {
	if cs.asm.buf == nil {
		return 0
	}
	return 4 + len(cs.asm.buf.B)
}

// canAssemble reports whether c's frames may be assembled: a plain gnet
// connection (TLS connections and the tests' fakes pause their own
// reading and buffer their plaintext themselves) with no SASL exchange to
// follow frame by frame. Loop only.
func canAssemble(cs *connState, c gnet.Conn) bool {
	if _, own := c.(readPauser); own {
		return false
	}
	return cs.sasl == nil
}

// startAssembly starts assembling a frame of total bytes whose size was
// read and which has not fully arrived, when it is large enough and would
// be let in now; it consumes what has arrived. Loop only.
func (s *Server) startAssembly(cs *connState, c gnet.Conn, total int) {
	if total < assembleMin || !canAssemble(cs, c) || s.requestsFull(cs, total) {
		return
	}
	buf := largeBufs.Get()
	if cap(buf.B) < total-4 {
		buf.B = make([]byte, 0, total-4)
	}
	buf.B = buf.B[:0]
	cs.asm = assembly{buf: buf, total: total}
	s.assembled.Add(1)
	_, _ = c.Discard(4)
	cs.fillAssembly(c)
}

// fillAssembly reads what has arrived of the frame being assembled, and
// reports whether it is whole. Loop only.
func (cs *connState) fillAssembly(c gnet.Conn) bool {
	a := &cs.asm
	need := a.total - 4 - len(a.buf.B)
	if n := min(need, c.InboundBuffered()); n > 0 {
		old := len(a.buf.B)
		a.buf.B = a.buf.B[:old+n]
		got, _ := c.Read(a.buf.B[old:])
		a.buf.B = a.buf.B[:old+got]
		need -= got
	}
	return need == 0
}

// assembledFrame goes on with the frame being assembled: it handles it
// once whole (more=false while it is not). Loop only.
func (s *Server) assembledFrame(cs *connState, c gnet.Conn) (more bool, reason CloseReason, err error) {
	if !cs.fillAssembly(c) {
		return false, keepOpen, nil
	}
	a := cs.asm
	return s.handleFrame(cs, c, a.buf.B, a.total, a.buf)
}

// frameTaken drops a frame that was answered on the loop: discarded from c
// when it was peeked, released when it was assembled. Loop only.
func (s *Server) frameTaken(cs *connState, c gnet.Conn, total int, owned *bytebufferpool.ByteBuffer) {
	if owned == nil {
		_, _ = c.Discard(total)
		return
	}
	cs.asm = assembly{}
	largeBufs.Put(owned)
}

// dropAssembly releases a frame being assembled when its connection
// closes. Loop only (OnClose).
func (cs *connState) dropAssembly() {
	if cs.asm.buf != nil {
		largeBufs.Put(cs.asm.buf)
		cs.asm = assembly{}
	}
}
