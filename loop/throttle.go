package loop

// Client-quota throttling (handlers/quotas.go, KIP-219): Produce and Fetch
// set their byte-rate throttle themselves; the loop adds the
// request_percentage one for every key, from the time each request's
// handler ran (handleJob, answerInline). A response that carries
// throttle_time_ms is sent at once, and then the connection is not read
// until the throttle time has passed, as a Kafka broker mutes a
// throttled channel after sending its response. A client that honours the
// field (every current one) sends nothing meanwhile; one that does not
// finds its requests waiting in TCP. The loop takes no frame of a
// throttled connection (OnTraffic) and mutes it (mute.go) like any held
// connection; a timer wakes it when the throttle ends. Requests already
// taken off the wire are still answered. A client of a version older than
// KIP-219 (Produce < 6, Fetch < 8, ...) is not told to wait, so, as Kafka,
// the gateway holds its answer for the throttle time instead (worker keys;
// the inline ones answer at once).

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"
)

// throttle stops the loop reading cs for ms from now (a longer throttle
// already running stays). Any goroutine (the worker finishing the call).
func (cs *connState) throttle(ms int32) {
	if ms <= 0 {
		return
	}
	d := time.Duration(ms) * time.Millisecond
	until := time.Now().Add(d).UnixNano()
	for {
		old := cs.throttledUntil.Load()
		if old >= until {
			return
		}
		if cs.throttledUntil.CompareAndSwap(old, until) {
			break
		}
	}
	time.AfterFunc(d, cs.stallWake)
}

// throttleLeft is how long the throttle of cs still runs (0: none). Any
// goroutine.
func (cs *connState) throttleLeft() time.Duration {
	return max(time.Duration(cs.throttledUntil.Load()-time.Now().UnixNano()), 0)
}

// throttledBefore reports that resp, throttled for ms, goes to a client
// that predates KIP-219 (its version's throttle is applied before the
// response, as kmsg records per key): Kafka delays such a response by the
// throttle time instead of sending it at once. Any goroutine.
func throttledBefore(resp kmsg.Response, ms int32) bool {
	if ms <= 0 {
		return false
	}
	tr, ok := resp.(kmsg.ThrottleResponse)
	if !ok {
		return false
	}
	_, after := tr.Throttle()
	return !after
}

// delayReply finishes the reply for seq once the connection's throttle
// has passed (replies behind it wait in order). Any goroutine.
func delayReply(cs *connState, seq uint64, out *bytebufferpool.ByteBuffer, pool *bytebufferpool.Pool, d time.Duration) {
	time.AfterFunc(d, func() { cs.finish(seq, out, pool) })
}

// throttled reports whether a throttle holds cs now. Any goroutine.
func (cs *connState) throttled(now int64) bool {
	return cs.throttledUntil.Load() > now
}

// errConnectionRate is the detail of a connection closed for its IP's
// connection rate.
var errConnectionRate = errors.New("over the connection_creation_rate quota of its address")

// refuseAfter holds a connection over its IP's connection rate unread and
// closes it after d, as a Kafka broker delays closing a throttled socket
// (so a client that reconnects at once is slowed too). Loop only (OnOpen).
func (cs *connState) refuseAfter(d time.Duration) {
	cs.throttledUntil.Store(1 << 62)
	time.AfterFunc(d, func() { cs.close(CloseConnectionRate, errConnectionRate) })
}

// peerIP is a's IP address (IPv4-mapped addresses unmapped); the zero
// Addr when a is not TCP. Any goroutine.
func peerIP(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip, _ := netip.AddrFromSlice(ta.IP)
	return ip.Unmap()
}
