package loop

// Backpressure to the socket: a client that keeps sending requests and
// reads no replies must not make the gateway hold its replies without
// bound (each Fetch answer can be MiB).
//
// gnet's AsyncWritev copies a reply into the connection's outbound buffer,
// which has no bound, and calls back at once: a reply that left the ring
// is not gone, it waits in gnet for a client that may never read. So a
// connection's write load is counted until the bytes reach the socket:
// replies finished and not yet through AsyncWritev (connState.queued) plus
// gnet's outbound buffer (Conn.OutboundBuffered, readable on the loop only,
// mirrored in connState.outbound). While that is at or over
// MaxOutboundPerConn the loop decodes no new frame from the connection;
// Fetch handlers size their answer to the room left (handlers.Call.ReplyRoom),
// so the requests already taken cannot pile far past the cap either.
//
// gnet says nothing when its outbound buffer drains, so a blocked
// connection is re-checked by a timer that Wakes it (1 ms, doubling to
// 20 ms); meanwhile the connection is muted (mute.go), so what its client
// keeps sending waits in TCP. A blocked
// connection whose client reads nothing at all for WriteStallTimeout is
// closed with CloseWriteStall.

import (
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Defaults of the write caps.
const (
	// 8 MiB: one Fetch answer as large as the default frame (MaxFrameSize)
	// fits, so a consumer of many partitions gets a whole answer per round
	// trip instead of one cut to the cap (docs/PERFORMANCE.md, "Scaling
	// rows", has the measurements).
	DefaultMaxOutboundPerConn = 8 << 20
	DefaultWriteStallTimeout  = 30 * time.Second

	stallPollMin = time.Millisecond
	stallPollMax = 20 * time.Millisecond
)

// stallState times a blocked connection. Loop only.
type stallState struct {
	// handed counts bytes gnet took through AsyncWritev; handed minus the
	// outbound buffer is what reached the socket, which only grows.
	handed int64
	since  int64 // unix nanos the current stall (or its last progress) began; 0: not blocked
	sent   int64 // bytes on the socket when since was set
	delay  time.Duration
	timer  *time.Timer
	wakeCB func() // cs.stallWake, bound once
}

// writeQueued is the bytes the connection holds for writing. Any goroutine;
// the outbound part is as of the loop's last look.
func (cs *connState) writeQueued() int64 {
	return cs.queued.Load() + cs.outbound.Load()
}

// replyRoom is handlers.Call.ReplyRoom for a call starting now: the bytes
// left under the cap, or -1 when none are. Any goroutine.
func (cs *connState) replyRoom() int {
	room := int64(cs.s.cfg.MaxOutboundPerConn) - cs.writeQueued()
	if room <= 0 {
		return -1
	}
	return int(room)
}

// writeBlocked refreshes the outbound count and reports whether the
// connection is at its write cap. While it is, a timer wakes the connection
// to look again, and a stall without progress past WriteStallTimeout closes
// it. Allocation-free unless a stall starts on a connection that never
// stalled before. Loop only.
func (cs *connState) writeBlocked(c gnet.Conn) bool {
	ob := int64(c.OutboundBuffered())
	cs.outbound.Store(ob)
	q := ob + cs.queued.Load()
	st := &cs.stall
	if q < int64(cs.s.cfg.MaxOutboundPerConn) {
		st.since, st.delay = 0, 0
		return false
	}
	if cs.closed.Load() {
		return true
	}
	now := time.Now().UnixNano()
	sent := st.handed - ob
	switch {
	case st.since == 0 || sent > st.sent:
		// A new stall, or the client read something: the clock restarts.
		st.since, st.sent = now, sent
	case now-st.since >= int64(cs.s.cfg.WriteStallTimeout):
		cs.s.logStallClose(remoteAddr(cs.c), q)
		cs.close(CloseWriteStall, fmt.Errorf("%d bytes queued for writing, none read for %v", q, cs.s.cfg.WriteStallTimeout))
		return true
	}
	st.delay = min(max(2*st.delay, stallPollMin), stallPollMax)
	if st.timer == nil {
		st.timer = time.AfterFunc(st.delay, st.wakeCB)
	} else {
		st.timer.Reset(st.delay)
	}
	return true
}

// stallWake is the stall timer's function: OnTraffic runs writeBlocked
// again on the loop. Timer goroutine.
func (cs *connState) stallWake() {
	if !cs.closed.Load() {
		_ = cs.c.Wake(nil)
	}
}

// stopStallTimer ends the re-checks of a closed connection. Loop only.
func (cs *connState) stopStallTimer() {
	if cs.stall.timer != nil {
		cs.stall.timer.Stop()
	}
}

// stallLogEvery is the least time between two write-stall log lines: a
// crowd of stuck clients must not flood the log.
const stallLogEvery = 10 * time.Second

// logStallClose logs one write-stall close through the server's limiter.
// Loop only.
func (s *Server) logStallClose(remote string, queued int64) {
	ok, held := s.stallLog.allow(time.Now(), stallLogEvery)
	if !ok {
		return
	}
	s.log.Warn("closing a connection whose client stopped reading its replies",
		"remote", remote, "queued_bytes", queued, "max_outbound_per_conn", s.cfg.MaxOutboundPerConn,
		"write_stall_timeout", s.cfg.WriteStallTimeout, "closes_unlogged", held, "next_log_in", stallLogEvery.String())
}
