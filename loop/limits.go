package loop

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Connection fairness: one client must not be able to hold every slot.
//
//   - MaxConnectionsPerAddr caps the connections of one client address (an
//     IPv4 address, or an IPv6 /64, the smallest block one host is usually
//     given), so a single host cannot take the whole MaxConnections.
//   - FrameTimeout bounds how long a request may take to arrive once its
//     first byte has (and how long a new connection may wait before its
//     first request): a client that trickles half a frame (slowloris) loses
//     its slot after FrameTimeout instead of after IdleTimeout.
//   - Refused connections are logged at most once per refusalLogEvery per
//     reason, with a count of the ones not logged, so a connect loop cannot
//     flood the log; every refusal still counts in the metrics.

// refusalLogEvery is the least time between two refusal log lines of one
// kind.
const refusalLogEvery = 10 * time.Second

// addrKey is the per-address accounting key of a peer: the IPv4 address, or
// the /64 of an IPv6 one. Unknown peers share the zero key. Any goroutine.
func addrKey(a net.Addr) netip.Addr {
	ip := peerIP(a)
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			ip = p.Addr()
		}
	}
	return ip
}

// addrCounts counts open connections per client address. Any goroutine
// (OnOpen and OnClose run on different loops).
type addrCounts struct {
	mu sync.Mutex
	n  map[netip.Addr]int
}

// acquire takes a slot for k, or reports false when k already has max.
func (a *addrCounts) acquire(k netip.Addr, max int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = make(map[netip.Addr]int)
	}
	if a.n[k] >= max {
		return false
	}
	a.n[k]++
	return true
}

// release gives back a slot taken by acquire.
func (a *addrCounts) release(k netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n[k] <= 1 {
		delete(a.n, k) // the map holds only addresses with open connections
		return
	}
	a.n[k]--
}

// logLimiter lets one log line through per interval and counts the rest.
// Any goroutine.
type logLimiter struct {
	mu         sync.Mutex
	next       time.Time
	suppressed int
}

// allow reports whether to log now, and how many lines were held back
// since the last one that was.
func (l *logLimiter) allow(now time.Time, every time.Duration) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.suppressed++
		return false, 0
	}
	l.next = now.Add(every)
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// refuse logs a refused connection through lim. Loop only (OnOpen).
func (s *Server) refuse(lim *logLimiter, msg string, c gnet.Conn, attrs ...any) {
	ok, held := lim.allow(time.Now(), refusalLogEvery)
	if !ok {
		return
	}
	args := append([]any{"remote", remoteAddr(c), "refused_unlogged", held,
		"next_log_in", refusalLogEvery.String()}, attrs...)
	s.log.Warn(msg, args...)
}

// noteServed records that a whole request arrived. Loop only.
func (cs *connState) noteServed(now time.Time) {
	cs.lastActive.Store(now.UnixNano())
	// The whole request is here: its FrameTimeout is met.
	cs.served = true
	if cs.frameStart.Load() != 0 {
		cs.frameStart.Store(0)
	}
}

// noteFrameProgress keeps the connection's frame deadline after OnTraffic
// consumed what it could: a partial request (or, before the first request,
// nothing yet) starts the clock if it is not running; an empty buffer
// after a request stops it. Loop only.
func (cs *connState) noteFrameProgress(buffered int) {
	switch {
	case buffered > 0:
		if cs.frameStart.Load() == 0 {
			cs.frameStart.Store(time.Now().UnixNano())
		}
	case cs.served:
		if cs.frameStart.Load() != 0 {
			cs.frameStart.Store(0)
		}
	}
}

// frameLate reports whether the connection has been sending one request
// (or waiting to send its first) for longer than timeout. Any goroutine.
func (cs *connState) frameLate(now int64, timeout time.Duration) bool {
	start := cs.frameStart.Load()
	return start != 0 && now-start > int64(timeout)
}

// tickEvery is how often OnTick runs: once a second, or often enough to
// close a late frame within a quarter of FrameTimeout of its deadline.
// Any goroutine (Config is read-only once the server is built).
func (c *Config) tickEvery() time.Duration {
	d := time.Second
	if q := c.FrameTimeout / 4; q < d {
		d = q
	}
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	return d
}
