package loop

// TLS listeners (SSL, SASL_SSL). gnet has no TLS, and crypto/tls cannot
// run its handshake over a non-blocking transport, so a TLS connection is
// served by goroutines of its own and handed to the same frame path as a
// gnet connection through tlsConn, a gnet.Conn:
//
//   - the reader goroutine accepts admission (OnOpen), runs the handshake
//     under a deadline of FrameTimeout, then reads decrypted bytes, appends
//     them to the connection's inbound buffer and runs OnTraffic;
//   - the event goroutine runs what gnet would run on the loop later:
//     write callbacks and Wake (OnTraffic again);
//   - the writer goroutine encrypts and writes what AsyncWritev queued.
//
// tlsConn.lmu stands in for the event loop: every event-handler call for
// the connection (OnOpen, OnTraffic, write callbacks, OnClose) holds it, so
// the loop-only state of connState still has one goroutine at a time.
// gnet connections never touch this file.

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
)

// tlsReadChunk is the most one read takes off a TLS connection:
// crypto/tls returns at most one record's plaintext per Read, and a record
// carries at most 16 KiB, so a larger buffer would only cost every idle
// TLS connection memory (docs/PERFORMANCE.md, "Memory per idle
// connection").
const tlsReadChunk = 16 << 10

// tlsSmallIn is the inbound buffer a connection keeps of its own; a
// request larger than that is read into a buffer from tlsLargeIn, sized
// for the whole frame once its length is known, and given back once the
// request has been taken. A buffer grown by appending would copy a large
// Produce again at every doubling and allocate it afresh for every request
// (docs/PERFORMANCE.md, "TLS", has what that cost).
const tlsSmallIn = 256 << 10

// tlsLargeIn recycles large inbound buffers across TLS connections. Any
// goroutine.
var tlsLargeIn bytebufferpool.Pool

// tlsConn is a TLS connection as the loop sees it. The embedded gnet.Conn
// is nil: the loop calls only the methods defined here (Peek, Discard,
// InboundBuffered, OutboundBuffered, AsyncWritev, Wake, Context,
// SetContext, Close, LocalAddr, RemoteAddr); any other would panic, and
// tlsconn_test.go drives every path of the loop through this type.
type tlsConn struct {
	gnet.Conn

	s   *Server
	ln  *listenerState
	raw net.Conn
	tc  *tls.Conn

	// Under lmu (the connection's "loop").
	lmu sync.Mutex
	ctx any
	in  []byte // inbound plaintext; in[off:] is unread
	off int
	// inLarge, when set, is the pooled buffer in lives in (tlsSmallIn).
	inLarge *bytebufferpool.ByteBuffer
	// paused: the loop muted the connection (mute.go); the reader waits
	// on resume before its next read.
	paused bool
	resume chan struct{}

	mu      sync.Mutex
	out     []byte // queued by AsyncWritev, not yet taken by the writer
	spare   []byte // the writer's last buffer, for reuse
	writing int    // bytes the writer is writing now
	cbs     []gnet.AsyncCallback
	wake    bool
	closing bool // Close was called
	gone    bool // torn down: OnClose ran, nothing more is queued
	sig     chan struct{}
	wsig    chan struct{}
	done    chan struct{}
}

// serveTLS accepts connections on a TLS listener until it is closed.
// Its own goroutine.
func (s *Server) serveTLS(l *listenerState) {
	defer s.tlsWG.Done()
	for {
		raw, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and friends: back off rather than spin.
			s.log.Warn("accept on TLS listener", "listener", l.Name, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		tc := &tlsConn{s: s, ln: l, raw: raw,
			sig: make(chan struct{}, 1), wsig: make(chan struct{}, 1), done: make(chan struct{}),
			resume: make(chan struct{}, 1)}
		s.tlsWG.Add(1)
		go tc.run(l.TLS())
	}
}

// run is the reader goroutine: admission, handshake, then reads until the
// connection ends, then teardown.
func (c *tlsConn) run(cfg *tls.Config) {
	defer c.s.tlsWG.Done()
	c.lmu.Lock()
	_, action := c.s.onOpen(c, c.ln)
	c.lmu.Unlock()
	if action == gnet.Close {
		_ = c.raw.Close()
		return
	}
	s := c.s
	s.tlsMu.Lock()
	s.tlsConns[c] = struct{}{}
	s.tlsMu.Unlock()
	go c.events()
	go c.writer()
	c.tc = tls.Server(c.raw, cfg)
	reason, err := c.handshake()
	if reason == keepOpen {
		reason, err = CloseClient, c.readLoop()
	}
	c.teardown(reason, err)
}

// handshake runs the TLS handshake within FrameTimeout of the accept (the
// time a plaintext connection has for its first request) and records the
// client certificate's subject. It returns keepOpen once the handshake is
// done, else the reason to close. Reader goroutine.
func (c *tlsConn) handshake() (CloseReason, error) {
	_ = c.raw.SetDeadline(time.Now().Add(c.s.cfg.FrameTimeout))
	if err := c.tc.Handshake(); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return CloseTLSHandshakeTimeout, err
		}
		return CloseTLSHandshake, err
	}
	_ = c.raw.SetDeadline(time.Time{})
	st := c.tc.ConnectionState()
	c.lmu.Lock()
	if cs, ok := c.ctx.(*connState); ok && len(st.PeerCertificates) > 0 {
		// Verified by crypto/tls against the client CAs (the listener
		// requires and verifies a client certificate when it has them).
		cs.tlsPrincipal = st.PeerCertificates[0].Subject.String()
	}
	c.lmu.Unlock()
	return keepOpen, nil
}

// readLoop reads decrypted bytes and runs OnTraffic on them until the
// connection fails or closes; while the loop has it muted it reads nothing.
// Reader goroutine.
func (c *tlsConn) readLoop() error {
	buf := make([]byte, tlsReadChunk)
	for {
		n, err := c.tc.Read(buf)
		paused := false
		if n > 0 {
			c.lmu.Lock()
			c.reserve(n)
			c.in = append(c.in, buf[:n]...)
			c.s.OnTraffic(c)
			c.compact()
			paused = c.paused
			c.lmu.Unlock()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if paused {
			c.waitUnpaused()
		}
	}
}

// waitUnpaused returns once the loop unmuted the connection or it is
// closing. Reader goroutine.
func (c *tlsConn) waitUnpaused() {
	for {
		<-c.resume
		c.lmu.Lock()
		paused := c.paused
		c.lmu.Unlock()
		c.mu.Lock()
		closing := c.closing || c.gone
		c.mu.Unlock()
		if !paused || closing {
			return
		}
	}
}

// pauseReading mutes (on) or unmutes the connection. lmu held.
func (c *tlsConn) pauseReading(on bool) {
	c.paused = on
	if !on {
		c.poke()
	}
}

// poke wakes a reader waiting in waitUnpaused. Any goroutine.
func (c *tlsConn) poke() {
	select {
	case c.resume <- struct{}{}:
	default:
	}
}

// reserve makes room in c.in for add more bytes. When the unread bytes
// begin with a frame's size the room is for that whole frame (at most
// MaxFrameSize; OnTraffic refuses larger ones), so a large request is
// copied once. lmu held.
func (c *tlsConn) reserve(add int) {
	if len(c.in)+add <= cap(c.in) {
		return
	}
	unread := c.in[c.off:]
	need := len(unread) + add
	if size, ok, err := codec.FrameSize(unread, c.s.cfg.MaxFrameSize); ok && err == nil {
		need = max(need, 4+int(size))
	}
	var large *bytebufferpool.ByteBuffer
	var nb []byte
	if need > tlsSmallIn {
		large = tlsLargeIn.Get()
		nb = slices.Grow(large.B[:0], need)
	} else {
		nb = make([]byte, 0, max(need, tlsReadChunk))
	}
	nb = append(nb, unread...)
	c.releaseIn()
	c.in, c.off, c.inLarge = nb, 0, large
}

// releaseIn gives a pooled inbound buffer back; c.in must not be used
// after it until reassigned. Nothing the loop took from the buffer
// outlives OnTraffic (frames are copied out). lmu held.
func (c *tlsConn) releaseIn() {
	if c.inLarge != nil {
		c.inLarge.B = c.in[:0]
		tlsLargeIn.Put(c.inLarge)
		c.inLarge = nil
	}
	c.in, c.off = nil, 0
}

// compact drops consumed inbound bytes. lmu held.
func (c *tlsConn) compact() {
	switch {
	case c.off == len(c.in):
		// reserve gives a connection's own buffer at most tlsSmallIn;
		// anything larger is pooled.
		if c.inLarge != nil {
			c.releaseIn() // a large request passed: give the memory back
		} else {
			c.in, c.off = c.in[:0], 0
		}
	case c.off > cap(c.in)/2:
		n := copy(c.in, c.in[c.off:])
		c.in, c.off = c.in[:n], 0
	}
}

// events runs write callbacks and wake-ups on the connection's loop.
// Its own goroutine; ends with the connection.
func (c *tlsConn) events() {
	for {
		select {
		case <-c.sig:
		case <-c.done:
			return
		}
		c.lmu.Lock()
		c.mu.Lock()
		if c.gone {
			c.mu.Unlock()
			c.lmu.Unlock()
			return
		}
		cbs, wake := c.cbs, c.wake
		c.cbs, c.wake = nil, false
		c.mu.Unlock()
		for _, cb := range cbs {
			_ = cb(c, nil)
		}
		if wake {
			c.s.OnTraffic(c)
			c.compact()
		}
		c.lmu.Unlock()
	}
}

// writer encrypts and writes the queued bytes. Its own goroutine. A client
// that stops reading blocks it; the loop's write-stall timeout then closes
// the connection, which ends the write.
func (c *tlsConn) writer() {
	for {
		select {
		case <-c.wsig:
		case <-c.done:
			return
		}
		c.mu.Lock()
		b := c.out
		c.out, c.spare = c.spare[:0], nil
		c.writing = len(b)
		c.mu.Unlock()
		if len(b) == 0 {
			continue
		}
		_, err := c.tc.Write(b)
		c.mu.Lock()
		c.writing = 0
		if cap(b) <= 4<<20 {
			c.spare = b[:0]
		}
		c.mu.Unlock()
		if err != nil {
			_ = c.Close()
			return
		}
	}
}

// teardown closes the socket and runs OnClose, then the callbacks of
// writes still queued; a reason other than CloseClient (the client ended
// the connection) is recorded first. Reader goroutine.
func (c *tlsConn) teardown(reason CloseReason, err error) {
	if cs, ok := c.ctx.(*connState); ok && reason != CloseClient {
		cs.close(reason, err)
	}
	_ = c.raw.Close()
	c.lmu.Lock()
	c.mu.Lock()
	c.gone = true
	cbs := c.cbs
	c.cbs = nil
	c.mu.Unlock()
	_ = c.s.OnClose(c, err)
	for _, cb := range cbs {
		_ = cb(c, net.ErrClosed)
	}
	c.releaseIn()
	c.lmu.Unlock()
	close(c.done)
	c.s.tlsMu.Lock()
	delete(c.s.tlsConns, c)
	c.s.tlsMu.Unlock()
}

// signal pokes the event goroutine. c.mu held or not.
func (c *tlsConn) signal() {
	select {
	case c.sig <- struct{}{}:
	default:
	}
}

// The gnet.Conn methods the loop uses.

// Peek returns the next n unread bytes (n <= 0: all), or what there is and
// io.ErrShortBuffer. Loop only.
func (c *tlsConn) Peek(n int) ([]byte, error) {
	avail := c.in[c.off:]
	if n <= 0 {
		return avail, nil
	}
	if n > len(avail) {
		return avail, io.ErrShortBuffer
	}
	return avail[:n], nil
}

// Discard consumes n unread bytes. Loop only.
func (c *tlsConn) Discard(n int) (int, error) {
	if avail := len(c.in) - c.off; n > avail || n < 0 {
		n = avail
	}
	c.off += n
	return n, nil
}

// InboundBuffered is the unread bytes. Loop only.
func (c *tlsConn) InboundBuffered() int { return len(c.in) - c.off }

// OutboundBuffered is the bytes queued or being written. Any goroutine.
func (c *tlsConn) OutboundBuffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out) + c.writing
}

// AsyncWritev copies bufs for the writer and queues cb for the loop, as
// gnet copies into its outbound buffer. Any goroutine.
func (c *tlsConn) AsyncWritev(bufs [][]byte, cb gnet.AsyncCallback) error {
	c.mu.Lock()
	if c.gone || c.closing {
		c.mu.Unlock()
		return net.ErrClosed
	}
	for _, b := range bufs {
		c.out = append(c.out, b...)
	}
	if cb != nil {
		c.cbs = append(c.cbs, cb)
	}
	c.mu.Unlock()
	select {
	case c.wsig <- struct{}{}:
	default:
	}
	if cb != nil {
		c.signal()
	}
	return nil
}

// Wake runs OnTraffic again on the connection's loop. Any goroutine.
func (c *tlsConn) Wake(cb gnet.AsyncCallback) error {
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.wake = true
	if cb != nil {
		c.cbs = append(c.cbs, cb)
	}
	c.mu.Unlock()
	c.signal()
	return nil
}

// Close closes the socket; the reader goroutine then tears the connection
// down (OnClose). Any goroutine.
func (c *tlsConn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	c.mu.Unlock()
	c.poke()
	// No close_notify: a writer blocked on a client that does not read
	// must not hold the close up (crypto/tls would wait for it).
	return c.raw.Close()
}

func (c *tlsConn) Context() any         { return c.ctx }
func (c *tlsConn) SetContext(ctx any)   { c.ctx = ctx }
func (c *tlsConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *tlsConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }
