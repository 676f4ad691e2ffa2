package loop

// Muting: a connection the loop holds (in-flight cap, request copies, write
// cap, a login in flight) stops being read from the socket, as a Kafka
// broker mutes a channel, so TCP holds the client's further requests in
// the client and a fast pipelining producer is slowed, never disconnected.
//
// gnet has no call to pause reading: on every readable event it reads the
// socket into the connection's inbound buffer, which has no bound, whether
// or not OnTraffic took anything. So the loop changes the connection's
// epoll interest itself, as gnet does when it starts and stops watching
// for writability: EPOLL_CTL_MOD on the event loop's epoll instance,
// without EPOLLIN while the connection is held and with it again when the
// loop takes frames again. The interest set and the event data are those
// gnet's default Linux poller registers in level-triggered mode (the data
// is the fd; netpoll.ReadEvents, netpoll.WriteEvents while gnet has bytes
// to write). gnet's own later changes (it re-adds EPOLLIN when its outbound
// buffer drains or a write is left partial) let one more read of at most
// ReadBufferCap in; OnTraffic sees the bytes arrive and mutes again.
//
// gnet does not say which epoll instance an event loop polls; the kernel
// does, in /proc/self/fdinfo (each epoll fd lists the fds it watches, with
// their event data). The loop looks once per event loop, and checks there
// that the data is the fd, so a gnet built another way (its poll_opt
// poller keeps a pointer there) is never written to: such a connection,
// or a system without /proc, is not muted and keeps the old bound (closed
// past MaxBufferedPerConn unread bytes), and the server logs it once.
//
// TLS connections are read by a goroutine of their own (tlsconn.go): it
// simply stops reading while muted.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/netpoll"
	"golang.org/x/sys/unix"
)

// socketReadChunk is the most gnet reads off one socket per readable
// event (its read buffer). A muted connection holds at most a partial frame
// and one such read unread, so the unread-bytes cap that closes a
// connection is MaxBufferedPerConn plus this: a client is closed for what
// it sent only when its reading could not be muted.
const socketReadChunk = 256 << 10

// readPauser is a connection that pauses its own reading: tlsConn, and the
// tests' fake connections.
type readPauser interface {
	pauseReading(on bool)
}

// epollMuter finds and keeps the epoll instance of each event loop. Any
// goroutine.
type epollMuter struct {
	mu     sync.Mutex
	byLoop map[gnet.EventLoop]int
	failed bool // logged once: muting is not available
}

// errNotMutable says the connection's epoll registration is not one the
// loop can change safely.
var errNotMutable = errors.New("connection cannot be muted")

// setMuted mutes (on) or unmutes the connection's reading. entry is the
// inbound bytes at the start of this OnTraffic: an epoll connection already
// muted is muted again only when gnet read since (its interest was changed
// back). Loop only.
func (cs *connState) setMuted(c gnet.Conn, on bool, entry int) {
	if p, ok := c.(readPauser); ok {
		p.pauseReading(on)
	} else {
		if cs.muteOff || (on && cs.muted && entry <= cs.exitBuffered) || (!on && !cs.muted) {
			return
		}
		if err := cs.s.mute.set(cs, c, on); err != nil {
			cs.muteOff = true
			cs.s.logMuteUnavailable(err)
			return
		}
	}
	if on && !cs.muted {
		cs.s.mutes.Add(1)
		cs.s.cfg.Metrics.ConnMuted()
	}
	cs.muted = on
}

// set changes c's epoll interest: without EPOLLIN when on. Loop only (the
// interest gnet sets is changed on the loop too).
func (m *epollMuter) set(cs *connState, c gnet.Conn, on bool) error {
	fd := c.Fd()
	if cs.epfd == 0 {
		epfd, err := m.epollOf(c.EventLoop(), fd)
		if err != nil {
			return err
		}
		cs.epfd = epfd
	}
	var ev uint32 = netpoll.ReadEvents
	if on {
		ev = 0
	}
	if c.OutboundBuffered() > 0 {
		// gnet waits for writability to flush; keep that.
		ev |= netpoll.WriteEvents
	}
	if err := unix.EpollCtl(cs.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)}); err != nil {
		return fmt.Errorf("epoll_ctl mod fd %d on epoll %d: %w", fd, cs.epfd, err)
	}
	return nil
}

// epollOf returns the epoll fd of event loop el, which watches fd, looking
// it up in /proc the first time. Any goroutine.
func (m *epollMuter) epollOf(el gnet.EventLoop, fd int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if epfd, ok := m.byLoop[el]; ok {
		return epfd, nil
	}
	epfd, err := findEpoll(fd)
	if err != nil {
		return 0, err
	}
	if m.byLoop == nil {
		m.byLoop = make(map[gnet.EventLoop]int)
	}
	m.byLoop[el] = epfd
	return epfd, nil
}

// findEpoll returns the epoll fd of this process that watches fd with the
// fd itself as its event data. Any goroutine.
func findEpoll(fd int) (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		data, found := watchedData(info, fd)
		if !found {
			continue
		}
		if data != uint64(fd) {
			return 0, fmt.Errorf("%w: epoll %s keeps %#x for fd %d, not the fd", errNotMutable, e.Name(), data, fd)
		}
		epfd, err := strconv.Atoi(e.Name())
		if err != nil {
			return 0, err
		}
		return epfd, nil
	}
	return 0, fmt.Errorf("%w: no epoll instance watches fd %d", errNotMutable, fd)
}

// watchedData reads an epoll fdinfo text ("tfd: FD events: HEX data: HEX
// ...", one line per watched fd) and returns the event data kept for fd.
func watchedData(info []byte, fd int) (data uint64, found bool) {
	for line := range bytes.Lines(info) {
		f := bytes.Fields(line)
		if len(f) < 6 || string(f[0]) != "tfd:" || string(f[2]) != "events:" || string(f[4]) != "data:" {
			continue
		}
		if n, err := strconv.Atoi(string(f[1])); err != nil || n != fd {
			continue
		}
		d, err := strconv.ParseUint(string(f[5]), 16, 64)
		if err != nil {
			return 0, false
		}
		return d, true
	}
	return 0, false
}

// logMuteUnavailable logs, once per server, that a connection could not be
// muted. Any goroutine.
func (s *Server) logMuteUnavailable(err error) {
	s.mute.mu.Lock()
	first := !s.mute.failed
	s.mute.failed = true
	s.mute.mu.Unlock()
	if first {
		s.log.Warn("connections cannot be muted: a client pipelining faster than the store takes its requests "+
			"is closed past --max-buffered-per-conn unread bytes instead of slowed", "err", err)
	}
}
