package loop

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/handlers"
)

// reply is one slot of the ordered writer: an encoded response frame, or a
// skip (buf == nil) for a request that gets no bytes back.
type reply struct {
	buf   *bytebufferpool.ByteBuffer
	pool  *bytebufferpool.Pool
	ready bool
}

// connState is the gateway's state for one client connection.
//
// Replies leave strictly in request order: every request that expects a
// reply takes the next sequence number on the loop; whoever finishes it (the
// loop for inline keys, a worker otherwise) parks the encoded frame in the
// ring at seq % len(ring); the writer sends the longest run of ready slots
// starting at flushSeq with one AsyncWritev, and only one write is
// outstanding at a time, so gnet (which keeps AsyncWritev order) cannot
// reorder them. The ring has MaxInFlightPerConn slots and the loop never
// lets more requests be in flight, so a slot is always free.
type connState struct {
	s *Server
	c gnet.Conn

	// Loop only.
	nextSeq uint64
	// served is set once a whole request has arrived; stalled while the
	// loop left frames unread for lack of room (not the client's delay).
	served, stalled bool
	// Muting (mute.go): muted while the socket is not read; muteOff once
	// muting failed on this connection; epfd the epoll instance of its
	// event loop (0: not looked up); exitBuffered the inbound bytes when
	// OnTraffic last returned.
	muted, muteOff bool
	epfd           int
	exitBuffered   int
	// asm is the frame being assembled (assemble.go), if any.
	asm assembly
	// addr is the per-address accounting key (limits.go); set at accept.
	addr netip.Addr
	// id names the connection to the handlers (Call.ConnID), unique in
	// the server's life; set at accept.
	id uint64
	// frameStart is the unix-nano time the request now arriving started
	// (0: none; at accept: the connection's start), for FrameTimeout.
	// Written by the loop, read by the ticker.
	frameStart atomic.Int64

	// inflight counts requests taken off the wire and not yet answered
	// (including acks=0 Produce). The loop stops reading frames at the cap.
	inflight atomic.Int32
	// held is set by the loop when it left frames unread (in-flight cap or
	// full job queue); whoever frees room wakes the connection.
	held atomic.Bool
	// lastActive is the unix-nano time of the last frame (idle timeout).
	lastActive atomic.Int64
	closed     atomic.Bool
	reason     atomic.Uint32

	// Write backpressure (backpressure.go). queued is the bytes of replies
	// finished and not yet through gnet's AsyncWritev (parked in the ring
	// or in the outstanding write); outbound is gnet's outbound buffer as
	// last seen on the loop; reqHeld is the bytes of request copies held by
	// this connection's jobs. Any goroutine reads them.
	queued   atomic.Int64
	outbound atomic.Int64
	reqHeld  atomic.Int64
	// Loop only: the stall being timed (see writeBlocked).
	stall stallState
	// throttledUntil is the unix-nano time a client-quota throttle ends
	// (throttle.go); 0: none. Any goroutine.
	throttledUntil atomic.Int64

	// Worker jobs of one connection run one at a time, in arrival order,
	// as a Kafka broker handles a connection: pipelined Produce requests
	// must reach the store in the order they were sent.
	jobMu   sync.Mutex
	running bool
	backlog []*job

	mu       sync.Mutex
	ring     []reply
	flushSeq uint64
	writing  bool // an AsyncWritev is outstanding
	dead     bool // connection closed: drop replies
	iov      [][]byte
	iovBufs  []reply
	// writingBytes is the size of the outstanding write.
	writingBytes int64
	// host is the peer IP as Kafka shows it ("/127.0.0.1"), for
	// DescribeGroups; computed once at accept.
	host string
	// sasl is the connection's SASL state on a SASL listener (sasl.go),
	// else nil; set at accept. opened is the accept time (unix nanos),
	// for the login deadline. Both written once before the connection
	// is shared.
	sasl   *handlers.SaslConn
	opened int64
	// ln is the listener the connection came in on; set at accept.
	// tlsPrincipal is the verified client certificate's subject (mTLS),
	// set by the TLS reader goroutine after the handshake, before the
	// first request is read.
	ln           *listenerState
	tlsPrincipal string
	// writtenCB is cs.written bound once: a method value made per write
	// would allocate.
	writtenCB gnet.AsyncCallback
}

// newConnState returns the state of a connection just accepted. Loop only
// (OnOpen).
func newConnState(s *Server, c gnet.Conn) *connState {
	cs := &connState{
		s:       s,
		c:       c,
		ring:    make([]reply, s.cfg.MaxInFlightPerConn),
		backlog: make([]*job, 0, s.cfg.MaxInFlightPerConn),
		iov:     make([][]byte, 0, s.cfg.MaxInFlightPerConn),
		iovBufs: make([]reply, 0, s.cfg.MaxInFlightPerConn),
	}
	cs.writtenCB = cs.written
	cs.stall.wakeCB = cs.stallWake
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		cs.host = "/" + a.IP.String()
	}
	now := time.Now().UnixNano()
	cs.lastActive.Store(now)
	cs.frameStart.Store(now) // the first request is due within FrameTimeout
	cs.opened = now
	return cs
}

// dispatch hands j to the pool, or behind the connection's running job.
// It reports false when the pool queue is full and j was not taken.
// Loop only.
func (cs *connState) dispatch(j *job) bool {
	cs.jobMu.Lock()
	defer cs.jobMu.Unlock()
	if cs.running {
		cs.backlog = append(cs.backlog, j)
		return true
	}
	if !cs.s.trySubmit(j) {
		return false
	}
	cs.running = true
	return true
}

// runNext starts the connection's next waiting job, if any, once the
// running one has finished. Any goroutine.
func (cs *connState) runNext() {
	cs.jobMu.Lock()
	if len(cs.backlog) == 0 {
		cs.running = false
		cs.jobMu.Unlock()
		return
	}
	j := cs.backlog[0]
	copy(cs.backlog, cs.backlog[1:])
	cs.backlog[len(cs.backlog)-1] = nil
	cs.backlog = cs.backlog[:len(cs.backlog)-1]
	cs.jobMu.Unlock()
	cs.s.resubmit(j)
}

// takeSeq reserves the next reply slot. Loop only.
func (cs *connState) takeSeq() uint64 {
	seq := cs.nextSeq
	cs.nextSeq++
	return seq
}

// finish records the reply for seq (buf nil: nothing to send) and starts a
// write when the head of the order is ready. Any goroutine. The buffer is
// owned by the connection from here on.
func (cs *connState) finish(seq uint64, buf *bytebufferpool.ByteBuffer, pool *bytebufferpool.Pool) {
	cs.s.requestDone()
	cs.mu.Lock()
	if cs.dead {
		cs.mu.Unlock()
		if buf != nil {
			pool.Put(buf)
		}
		return
	}
	if buf != nil {
		cs.queued.Add(int64(len(buf.B)))
	}
	cs.ring[seq%uint64(len(cs.ring))] = reply{buf: buf, pool: pool, ready: true}
	freed := 0
	if !cs.writing && seq == cs.flushSeq {
		freed = cs.startWriteLocked()
	}
	cs.mu.Unlock()
	cs.release(freed)
}

// finishNoReply ends a request that holds no reply slot (acks=0 Produce).
// Any goroutine.
func (cs *connState) finishNoReply() {
	cs.s.requestDone()
	cs.release(1)
}

// release frees n in-flight slots and wakes the connection if the loop left
// frames unread for lack of room. A slot is freed only once its reply left
// the ring, so the ring can never wrap onto a live slot. Any goroutine.
func (cs *connState) release(n int) {
	if n == 0 {
		return
	}
	left := cs.inflight.Add(int32(-n))
	if int(left) < cs.s.cfg.MaxInFlightPerConn && cs.held.CompareAndSwap(true, false) {
		_ = cs.c.Wake(nil)
	}
}

// holdWhile leaves the connection's frames unread for lack of room, full
// saying whether room is still lacking: it marks the connection held, so
// whoever frees room wakes it (release, requestDone), then looks once
// more, since room freed between the caller's look and the mark would wake
// no one. It returns true when there is room after all: look again at
// once. Loop only.
func (cs *connState) holdWhile(full func() bool) bool {
	cs.held.Store(true)
	if !full() && cs.held.CompareAndSwap(true, false) {
		return true
	}
	cs.stalled = true
	return false
}

// inflightFull reports that the connection has MaxInFlightPerConn requests
// in flight. Any goroutine.
func (cs *connState) inflightFull() bool {
	return int(cs.inflight.Load()) >= cs.s.cfg.MaxInFlightPerConn
}

// busy reports that the connection has a request in flight. Any goroutine.
func (cs *connState) busy() bool { return cs.inflight.Load() > 0 }

// startWriteLocked gathers the ready run at flushSeq into one AsyncWritev
// (skips advance flushSeq without bytes) and returns how many slots it
// freed; the caller passes that to release after unlocking.
// cs.mu must be held.
func (cs *connState) startWriteLocked() int {
	cs.iov = cs.iov[:0]
	cs.iovBufs = cs.iovBufs[:0]
	n := uint64(len(cs.ring))
	freed := 0
	for {
		slot := &cs.ring[cs.flushSeq%n]
		if !slot.ready {
			break
		}
		if slot.buf != nil {
			cs.iov = append(cs.iov, slot.buf.B)
			cs.iovBufs = append(cs.iovBufs, *slot)
		}
		*slot = reply{}
		cs.flushSeq++
		freed++
	}
	if len(cs.iov) == 0 {
		return freed
	}
	cs.writing = true
	bytes := 0
	for _, b := range cs.iov {
		bytes += len(b)
	}
	cs.writingBytes = int64(bytes)
	cs.s.cfg.Metrics.BytesOut(bytes)
	if err := cs.c.AsyncWritev(cs.iov, cs.writtenCB); err != nil {
		// The loop is gone (shutdown): nothing will call back.
		cs.writing = false
		cs.queued.Add(-cs.writingBytes)
		cs.writingBytes = 0
		cs.putIOVLocked()
	}
	return freed
}

// written is the AsyncWritev callback: it runs on the loop once gnet has
// copied or sent the bytes, returns the buffers and starts the next write.
// The bytes now sit in gnet's outbound buffer (or the socket), where
// writeBlocked keeps counting them against the cap until the client reads.
func (cs *connState) written(c gnet.Conn, _ error) error {
	cs.mu.Lock()
	cs.writing = false
	n := cs.writingBytes
	cs.writingBytes = 0
	cs.putIOVLocked()
	freed := 0
	dead := cs.dead
	if !dead {
		freed = cs.startWriteLocked()
	}
	cs.mu.Unlock()
	cs.stall.handed += n
	cs.queued.Add(-n)
	if !dead {
		// Starts timing a stall even when the client sends nothing more,
		// and resumes reading at once when this write ended one.
		wasBlocked := cs.stall.since != 0
		if !cs.writeBlocked(c) && wasBlocked {
			_ = c.Wake(nil)
		}
	}
	cs.release(freed)
	return nil
}

// putIOVLocked returns the buffers of the finished write to their pools.
// cs.mu must be held.
func (cs *connState) putIOVLocked() {
	for i := range cs.iovBufs {
		cs.iovBufs[i].pool.Put(cs.iovBufs[i].buf)
		cs.iovBufs[i] = reply{}
	}
	cs.iovBufs = cs.iovBufs[:0]
	for i := range cs.iov {
		cs.iov[i] = nil
	}
	cs.iov = cs.iov[:0]
}

// onClosed marks the connection dead and returns every parked reply to its
// pool. Loop only (OnClose). An outstanding write's callback still runs and
// returns its own buffers.
func (cs *connState) onClosed() {
	cs.stopStallTimer()
	cs.mu.Lock()
	cs.dead = true
	for i := range cs.ring {
		if cs.ring[i].buf != nil {
			cs.ring[i].pool.Put(cs.ring[i].buf)
		}
		cs.ring[i] = reply{}
	}
	cs.mu.Unlock()
}

// close closes the connection once, recording why. Any goroutine.
func (cs *connState) close(reason CloseReason, detail error) {
	if !cs.closed.CompareAndSwap(false, true) {
		return
	}
	cs.reason.Store(uint32(reason))
	if detail != nil {
		cs.s.log.Debug("closing connection", "remote", remoteAddr(cs.c), "reason", reason.String(), "err", detail)
	} else {
		cs.s.log.Debug("closing connection", "remote", remoteAddr(cs.c), "reason", reason.String())
	}
	_ = cs.c.Close()
}

// remoteAddr is c's peer for logs ("" when unknown). Any goroutine.
func remoteAddr(c gnet.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return ""
}
