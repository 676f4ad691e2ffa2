package loop

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/panjf2000/gnet/v2"
)

// fakeConn is a gnet.Conn driven by a test "event loop" goroutine. Like
// gnet, it hands OnTraffic slices of a buffer shared by the whole loop and,
// once OnTraffic returns, keeps the unread bytes elsewhere and scribbles
// over the shared buffer: any peeked slice kept past OnTraffic reads junk.
// Methods not listed panic through the nil embedded interface.
type fakeConn struct {
	gnet.Conn

	loop   *fakeLoop
	ctx    any
	unread []byte // bytes not yet consumed, owned by the conn between calls
	view   []byte // during OnTraffic: the loop buffer holding unread

	mu     sync.Mutex
	out    []byte
	closed bool
	// backlog imitates gnet's outbound buffer for a client that does not
	// read: with holdOut set, written bytes count here until drain.
	holdOut bool
	backlog int

	// deferCB, when set, keeps the write callback in pendingCB for the
	// test to run, instead of queueing it on the loop (no allocation).
	deferCB   bool
	pendingCB gnet.AsyncCallback
}

// pauseReading is a no-op: the fake loop reads only what a test feeds it.
func (c *fakeConn) pauseReading(bool) {}

// fakeLoop runs OnTraffic calls and write callbacks one at a time.
type fakeLoop struct {
	mu     sync.Mutex
	closed bool
	h      gnet.EventHandler
	shared []byte
	tasks  chan func()
	done   chan struct{}
}

func newFakeLoop(h gnet.EventHandler) *fakeLoop {
	l := &fakeLoop{h: h, shared: make([]byte, 1<<20), tasks: make(chan func(), 1024), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for fn := range l.tasks {
			fn()
		}
	}()
	return l
}

func (l *fakeLoop) stop() {
	l.mu.Lock()
	l.closed = true
	close(l.tasks)
	l.mu.Unlock()
	<-l.done
}

// post queues fn on the loop; after stop it is dropped.
func (l *fakeLoop) post(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.tasks <- fn
	}
}

// do runs fn on the loop and waits for it.
func (l *fakeLoop) do(fn func()) {
	ch := make(chan struct{})
	l.post(func() { fn(); close(ch) })
	<-ch
}

// startFakeLoop runs a fake event loop for s until the test ends.
func startFakeLoop(t testing.TB, s *Server) *fakeLoop {
	l := newFakeLoop(s)
	t.Cleanup(l.stop)
	return l
}

func (l *fakeLoop) open(c *fakeConn) {
	c.loop = l
	l.do(func() { _, _ = l.h.OnOpen(c) })
}

// dial opens a new connection on the loop.
func (l *fakeLoop) dial() *fakeConn {
	c := &fakeConn{}
	l.open(c)
	return c
}

// reasonOf is the close reason recorded on c (CloseClient: none).
func (l *fakeLoop) reasonOf(c *fakeConn) CloseReason {
	var r CloseReason
	l.do(func() { r = CloseReason(c.ctx.(*connState).reason.Load()) })
	return r
}

// feed appends b to the connection's inbound bytes and runs OnTraffic.
func (l *fakeLoop) feed(c *fakeConn, b []byte) {
	l.do(func() {
		c.unread = append(c.unread, b...)
		l.traffic(c)
	})
}

// feedByteByByte feeds b one byte per OnTraffic, the loop buffer
// scribbled after each.
func (l *fakeLoop) feedByteByByte(c *fakeConn, b []byte) {
	for i := range b {
		l.feed(c, b[i:i+1])
	}
}

// traffic runs OnTraffic over the shared buffer, then keeps what is unread
// and scribbles the shared buffer. Loop only.
func (l *fakeLoop) traffic(c *fakeConn) {
	c.view = l.shared[:copy(l.shared, c.unread)]
	c.unread = c.unread[:0]
	_ = l.h.OnTraffic(c)
	c.unread = append(c.unread, c.view...)
	c.view = nil
	for i := range l.shared {
		l.shared[i] = 0xEE
	}
}

func (c *fakeConn) Peek(n int) ([]byte, error) {
	if n > len(c.view) {
		return c.view, io.ErrShortBuffer
	}
	if n <= 0 {
		n = len(c.view)
	}
	return c.view[:n], nil
}

func (c *fakeConn) Discard(n int) (int, error) {
	if n > len(c.view) {
		n = len(c.view)
	}
	c.view = c.view[n:]
	return n, nil
}

func (c *fakeConn) InboundBuffered() int { return len(c.view) }

func (c *fakeConn) OutboundBuffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backlog
}

// drain lets the imaginary client read n bytes of the backlog (all when
// n < 0), as a socket would: gnet tells nobody.
func (c *fakeConn) drain(n int) {
	c.mu.Lock()
	if n < 0 || n > c.backlog {
		n = c.backlog
	}
	c.backlog -= n
	c.mu.Unlock()
}
func (c *fakeConn) Context() any         { return c.ctx }
func (c *fakeConn) SetContext(ctx any)   { c.ctx = ctx }
func (c *fakeConn) RemoteAddr() net.Addr { return nil }

// AsyncWritev copies the bytes out (as gnet does into its outbound buffer)
// and runs the callback on the loop.
func (c *fakeConn) AsyncWritev(bs [][]byte, cb gnet.AsyncCallback) error {
	c.mu.Lock()
	for _, b := range bs {
		c.out = append(c.out, b...)
		if c.holdOut {
			c.backlog += len(b)
		}
	}
	if c.deferCB {
		c.pendingCB = cb
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	c.loop.post(func() { _ = cb(c, nil) })
	return nil
}

func (c *fakeConn) Wake(cb gnet.AsyncCallback) error {
	c.loop.post(func() { c.loop.traffic(c) })
	return nil
}

func (c *fakeConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return nil
}

// isClosed reports whether the gateway closed c.
func (c *fakeConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// stopReading makes the imaginary client read nothing from here on: its
// replies pile up in the imitated outbound buffer (drain reads them). What
// it was sent so far is forgotten.
func (c *fakeConn) stopReading() {
	c.mu.Lock()
	c.out = c.out[:0]
	c.holdOut = true
	c.mu.Unlock()
}

// output returns a copy of everything written so far.
func (c *fakeConn) output() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.out...)
}
