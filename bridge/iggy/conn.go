package iggy

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Login identity sent in the protocol-version prefix (PROTOCOL.md 6.2).
const (
	sdkName    = "iggy-kafka-gateway"
	sdkVersion = "0.1.0"
)

// transientPause is how long to wait before replaying a request answered
// with 57/58, as the official SDKs do.
const transientPause = 50 * time.Millisecond

// idleProbeAfter: a connection idle this long is checked for a close from
// the server before a request is written to it (a cheap non-blocking read,
// no round trip).
const idleProbeAfter = 200 * time.Millisecond

// errPeerClosed is why a connection found closed by the server before use
// is replaced.
var errPeerClosed = errors.New("closed by the server while idle")

// keepBuf is the largest read buffer a connection keeps between calls;
// a larger one (a big poll) is dropped so idle connections stay small.
const keepBuf = 4 << 20

// connConfig is what every connection of a pool shares.
type connConfig struct {
	addr        string
	tls         *tls.Config // nil: plain TCP
	dialTimeout time.Duration
	callTimeout time.Duration
	username    string
	password    string
	token       string // personal access token; used instead of the password when set
}

// conn is one TCP (or TLS) connection with its own Iggy session. It is not
// safe for concurrent use: the protocol allows one request in flight
// (PROTOCOL.md 2.6), and the pool's slot serialises callers.
type conn struct {
	cfg  *connConfig
	nc   net.Conn
	fr   wire.FrameReader
	s    session
	wbuf []byte
	rbuf []byte
	out  [2][]byte
	bufs net.Buffers
	// Login reply, kept for logs and tests.
	login LoginReply
	// lastUse is when the last round trip ended (zero: never).
	lastUse time.Time
}

// dialConn connects, logs in and returns a ready connection.
func dialConn(ctx context.Context, cfg *connConfig) (*conn, error) {
	d := net.Dialer{Timeout: cfg.dialTimeout, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", cfg.addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // the protocol is request/reply: never wait for more bytes
	}
	if cfg.tls != nil {
		tc := tls.Client(nc, cfg.tls)
		hctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		nc = tc
	}
	c := &conn{cfg: cfg, nc: nc, fr: wire.FrameReader{R: nc}, wbuf: make([]byte, 0, 64<<10), lastUse: time.Now()}
	c.s.clientLo, c.s.clientHi = newClientID()
	c.s.next = 1
	if err := c.doLogin(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// newClientID draws a random non-zero u128 (PROTOCOL.md 3.1).
func newClientID() (lo, hi uint64) {
	var b [16]byte
	for lo == 0 && hi == 0 {
		_, _ = rand.Read(b[:])
		lo, hi = le.Uint64(b[:8]), le.Uint64(b[8:])
	}
	return lo, hi
}

// doLogin sends LoginRegister (or its PAT form) and binds the session.
func (c *conn) doLogin(ctx context.Context) error {
	body := c.begin()
	if c.cfg.token != "" {
		body = appendLoginRegisterWithPAT(body, sdkName, sdkVersion, c.cfg.token)
	} else {
		body = appendLoginRegister(body, sdkName, sdkVersion, c.cfg.username, c.cfg.password)
	}
	rep, err := c.roundTrip(ctx, wire.OpRegister, 0, body, nil)
	if err != nil {
		return err
	}
	p, err := rep.payload()
	if err != nil {
		return err
	}
	l, err := decodeLogin(p)
	if err != nil {
		return err
	}
	c.login = l
	c.s.bind(l.Session)
	return nil
}

// begin returns the frame buffer with room for the header; callers append
// the body.
func (c *conn) begin() []byte {
	return c.wbuf[:wire.HeaderSize]
}

// roundTrip sends one request (frame = header room + body, then tail, which
// is written without copying) and returns its reply. Transient answers
// (57, 58) are replayed with the same request id until the call deadline.
// Errors are *ConnError when the connection can no longer be used, and
// *Error for a status the server sent.
func (c *conn) roundTrip(ctx context.Context, op uint8, code uint32, frame, tail []byte) (reply, error) {
	c.wbuf = frame[:0] // keep a grown buffer
	if cap(c.rbuf) > keepBuf {
		c.rbuf = nil
	}
	h := c.s.header(op, code, len(frame)-wire.HeaderSize+len(tail))
	putReqHeader(frame, h)
	dl, stop, err := c.arm(ctx)
	if err != nil {
		return reply{}, err
	}
	defer stop()
	defer c.touch()
	for {
		rep, err := c.exchange(frame, tail, h.request, op)
		if err != nil {
			return reply{}, c.fail(ctx, err)
		}
		if !transient(&rep) {
			return rep, nil
		}
		if time.Until(dl) < 2*transientPause || c.pause(ctx) != nil {
			return rep, nil // out of time: the caller sees the transient code
		}
	}
}

func (c *conn) touch() { c.lastUse = time.Now() }

// idle is how long the connection has had no request.
func (c *conn) idle() time.Duration { return time.Since(c.lastUse) }

// peerClosed reports whether the server closed the connection while it
// was idle (a restart, an idle cut): a non-blocking peek at the socket
// finds end-of-file or an error where a healthy idle connection has
// nothing to read. Bytes waiting count as alive (under TLS they can be a
// session ticket; on plain TCP an unasked reply fails the request-id
// check anyway). A deadline cannot do this: Go fails a read whose
// deadline has passed without looking at the socket.
func (c *conn) peerClosed() bool {
	nc := c.nc
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var b [1]byte
	closed := false
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
		case rerr != nil || n == 0:
			closed = true
		}
		return true // never wait for readiness
	})
	return closed || err != nil
}

// arm sets the deadline of a call: the earlier of ctx's and CallTimeout,
// and makes a cancelled ctx abort blocked I/O.
func (c *conn) arm(ctx context.Context) (time.Time, func(), error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, nil, err
	}
	dl := time.Now().Add(c.cfg.callTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	if err := c.nc.SetDeadline(dl); err != nil {
		return dl, nil, &ConnError{Addr: c.cfg.addr, Op: "set deadline", Err: err}
	}
	if ctx.Done() == nil {
		return dl, func() {}, nil
	}
	// The abort may start after the reply arrived; stop waits for it so it
	// cannot land on the next call's deadline.
	done := make(chan struct{})
	release := context.AfterFunc(ctx, func() {
		_ = c.nc.SetDeadline(time.Unix(1, 0))
		close(done)
	})
	return dl, func() {
		if !release() {
			<-done
		}
	}, nil
}

// exchange writes the frame and reads the matching reply.
func (c *conn) exchange(frame, tail []byte, request uint64, op uint8) (reply, error) {
	if err := c.write(frame, tail); err != nil {
		return reply{}, err
	}
	var err error
	c.rbuf, err = c.fr.Read(c.rbuf)
	if err != nil {
		return reply{}, err
	}
	rep, err := decodeFrame(c.rbuf, op)
	if err != nil {
		return reply{}, err
	}
	if rep.request != request {
		// The stream is out of step: nothing read after this can be trusted.
		return reply{}, fmt.Errorf("%w: reply for request %d, sent %d", ErrProtocol, rep.request, request)
	}
	return rep, nil
}

func (c *conn) write(frame, tail []byte) error {
	if len(tail) == 0 {
		_, err := c.nc.Write(frame)
		return err
	}
	c.out[0], c.out[1] = frame, tail
	c.bufs = c.out[:]
	_, err := c.bufs.WriteTo(c.nc) // writev on plain TCP
	c.out[0], c.out[1] = nil, nil
	return err
}

// transient reports a 57/58 answer, in the status or the result section.
func transient(r *reply) bool {
	code := r.status
	if code == wire.StatusOK && wire.ResultFramed(r.operation) && len(r.body) >= 12 && le.Uint32(r.body) > 0 {
		code = le.Uint32(r.body[8:])
	}
	return code == wire.StatusTransientNotCommitted || code == wire.StatusTransientNotAccepted
}

// pause waits before a replay, within the call's deadline.
func (c *conn) pause(ctx context.Context) error {
	t := time.NewTimer(transientPause)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fail turns an I/O, framing or eviction error into a *ConnError: after
// any of them the connection is out of step or gone.
func (c *conn) fail(ctx context.Context, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && ctx.Err() != nil {
		err = ctx.Err()
	}
	return &ConnError{Addr: c.cfg.addr, Op: "request", Err: err}
}

// logout ends the session politely; errors are ignored (the server logs
// out a closed connection by itself).
func (c *conn) logout() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = c.roundTrip(ctx, wire.OpLogout, 0, c.begin(), nil)
}

func (c *conn) close() error { return c.nc.Close() }
