// Package loop is the gnet v2 side of the gateway: connections, framing,
// ordered replies, the worker pool, limits and shutdown.
//
// Data flow: OnTraffic cuts whole frames off the connection buffer, parses
// the header in place and runs the version firewall. Inline keys are
// decoded and answered on the loop from the peeked bytes; every other
// request is copied once into a pooled buffer and queued for a bounded
// worker pool. Replies pass through the connection's ordered writer
// (conn.go). Nothing peeked outlives the OnTraffic call that peeked it.
package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
	"golang.org/x/sys/unix"

	"github.com/iggy-kafka/gateway/handlers"
)

// Server serves the Kafka protocol for one handlers.Gateway.
type Server struct {
	gnet.BuiltinEventEngine

	cfg Config
	g   *handlers.Gateway
	log *slog.Logger

	jobs        chan *job
	quit        chan struct{}
	workersDone sync.WaitGroup

	engine  gnet.Engine
	booted  chan struct{}
	stopped chan error
	addr    string

	conns    atomic.Int64
	connIDs  atomic.Uint64 // the last connection id handed out (connState.id)
	inflight atomic.Int64  // requests accepted and not finished, server-wide
	draining atomic.Bool

	parkMu    sync.Mutex
	parkedSet map[*parked]struct{}

	connMu sync.Mutex
	all    map[*connState]struct{}

	// Connection fairness (limits.go).
	perAddr        addrCounts
	refusedGlobal  logLimiter // refusals at MaxConnections
	refusedPerAddr logLimiter // refusals at MaxConnectionsPerAddr

	// ctx is the context every call gets; cancelled when the server stops.
	ctx    context.Context
	cancel context.CancelFunc

	heldMu sync.Mutex
	heldQ  []*connState // connections waiting for room in the job queue
	nHeld  atomic.Int32
	// assembled counts frames whose assembly started (assemble.go).
	assembled atomic.Uint64

	stallLog logLimiter   // write-stall closes (backpressure.go)
	mute     epollMuter   // muting held connections (mute.go)
	mutes    atomic.Int64 // connections muted so far

	// Listeners (listeners.go): all of them, and the ones gnet serves.
	// lnErr is what resolving them found wrong; Start returns it.
	lns, gnetLns []*listenerState
	lnErr        error
	// TLS connections (tlsconn.go): the open ones, and a group for every
	// accept and connection goroutine.
	tlsMu    sync.Mutex
	tlsConns map[*tlsConn]struct{}
	tlsWG    sync.WaitGroup
	// tickStop ends the ticker goroutine that runs OnTick when no gnet
	// listener does (TLS listeners only).
	tickStop chan struct{}

	shutdownOnce sync.Once
}

// NewServer returns a server; nothing listens until Start.
func NewServer(cfg Config, g *handlers.Gateway) *Server {
	cfg.setDefaults()
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		tlsConns:  make(map[*tlsConn]struct{}),
		ctx:       ctx,
		cancel:    cancel,
		cfg:       cfg,
		g:         g,
		log:       log,
		jobs:      make(chan *job, cfg.QueueDepth),
		quit:      make(chan struct{}),
		booted:    make(chan struct{}),
		stopped:   make(chan error, 1),
		parkedSet: make(map[*parked]struct{}),
		all:       make(map[*connState]struct{}),
	}
	s.lnErr = s.resolveListeners()
	return s
}

// setDefaults fills the zero fields of c. NewServer only.
func (c *Config) setDefaults() {
	procs := runtime.GOMAXPROCS(0)
	if c.Addr == "" {
		c.Addr = "127.0.0.1:9092"
	}
	if c.EventLoops <= 0 {
		c.EventLoops = procs
	}
	if c.Workers <= 0 {
		c.Workers = 4 * procs
	}
	if c.QueueDepth <= 0 {
		c.QueueDepth = 4096
	}
	if c.MaxInFlightPerConn <= 0 {
		c.MaxInFlightPerConn = 64
	}
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = 8 << 20
	}
	if c.MaxBufferedPerConn <= 0 {
		c.MaxBufferedPerConn = 4 * int(c.MaxFrameSize)
	}
	if c.MaxOutboundPerConn <= 0 {
		c.MaxOutboundPerConn = DefaultMaxOutboundPerConn
	}
	if c.WriteStallTimeout <= 0 {
		c.WriteStallTimeout = DefaultWriteStallTimeout
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 1024
	}
	if c.MaxConnectionsPerAddr <= 0 {
		c.MaxConnectionsPerAddr = 256
	}
	if c.FrameTimeout <= 0 {
		c.FrameTimeout = 30 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 600 * time.Second
	}
	if c.DrainTimeout < 0 {
		c.DrainTimeout = 0
	} else if c.DrainTimeout == 0 {
		c.DrainTimeout = 25 * time.Second
	}
}

// Start listens and serves in the background; it returns once the listener
// is bound (or failed). Any goroutine.
func (s *Server) Start() error {
	if s.lnErr != nil {
		return fmt.Errorf("loop: %w", s.lnErr)
	}
	if err := s.listenTLS(); err != nil {
		return err
	}
	s.startWorkers()
	if len(s.gnetLns) == 0 {
		// TLS listeners only: no gnet engine, so OnTick needs a ticker.
		s.tickStop = make(chan struct{})
		go s.ownTicker()
		close(s.booted)
		s.startTLS()
		return nil
	}
	addrs := make([]string, len(s.gnetLns))
	for i, l := range s.gnetLns {
		addrs[i] = "tcp://" + l.Addr
	}
	go func() {
		err := gnet.Rotate(s, addrs,
			gnet.WithMulticore(true),
			gnet.WithNumEventLoop(s.cfg.EventLoops),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
			gnet.WithReuseAddr(true),
			gnet.WithTicker(true),
			gnet.WithReadBufferCap(socketReadChunk),
			gnet.WithLogger(gnetLogger{s.log}),
			gnet.WithLogLevel(logging.ErrorLevel),
		)
		s.stopped <- err
	}()
	select {
	case <-s.booted:
		s.startTLS()
		return nil
	case err := <-s.stopped:
		close(s.quit)
		s.workersDone.Wait()
		s.closeTLSListeners()
		if err == nil {
			err = errors.New("loop: engine stopped before it booted")
		}
		return fmt.Errorf("loop: listen %s: %w", strings.Join(addrs, ","), err)
	}
}

// listenTLS binds every TLS listener (before gnet, so a taken port fails
// Start with nothing else running). Start's goroutine.
func (s *Server) listenTLS() error {
	for _, l := range s.lns {
		if !l.tls {
			continue
		}
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			s.closeTLSListeners()
			return fmt.Errorf("loop: listen %s (%s): %w", l.Addr, l.Name, err)
		}
		l.ln, l.bound = ln, ln.Addr().String()
		l.advertiseBound()
	}
	return nil
}

// startTLS starts accepting on the TLS listeners. Start's goroutine.
func (s *Server) startTLS() {
	for _, l := range s.lns {
		if l.ln != nil {
			s.tlsWG.Add(1)
			go s.serveTLS(l)
		}
	}
}

// closeTLSListeners closes the bound TLS listeners, which ends their accept
// goroutines. Start's goroutine or Shutdown.
func (s *Server) closeTLSListeners() {
	for _, l := range s.lns {
		if l.ln != nil {
			_ = l.ln.Close()
		}
	}
}

// stopTLS closes the TLS listeners and connections and waits for their
// goroutines (each connection's OnClose has run). Shutdown only.
func (s *Server) stopTLS() {
	s.closeTLSListeners()
	s.tlsMu.Lock()
	for c := range s.tlsConns {
		_ = c.Close()
	}
	s.tlsMu.Unlock()
	s.tlsWG.Wait()
}

// ownTicker runs OnTick when no gnet engine does. Its own goroutine, until
// Shutdown closes tickStop.
func (s *Server) ownTicker() {
	for {
		d, _ := s.OnTick()
		select {
		case <-time.After(d):
		case <-s.tickStop:
			return
		}
	}
}

// startWorkers starts the Config.Workers worker goroutines. Start's
// goroutine (or a test's, before any traffic).
func (s *Server) startWorkers() {
	for i := 0; i < s.cfg.Workers; i++ {
		s.workersDone.Add(1)
		go s.worker()
	}
}

// Addr is the bound host:port of the first listener, valid after Start.
// Any goroutine.
func (s *Server) Addr() string {
	if len(s.lns) > 0 && s.lns[0].bound != "" {
		return s.lns[0].bound
	}
	return s.addr
}

// OnBoot records the engine and the bound address. Engine goroutine.
func (s *Server) OnBoot(e gnet.Engine) gnet.Action {
	s.engine = e
	for _, l := range s.gnetLns {
		l.bound = l.Addr
	}
	s.addr = s.gnetLns[0].Addr
	if len(s.gnetLns) > 1 {
		// Several listeners: their ports are fixed (resolveListeners).
	} else if fd, err := e.Dup(); err == nil {
		if sa, err := unix.Getsockname(fd); err == nil {
			if in4, ok := sa.(*unix.SockaddrInet4); ok {
				s.addr = net.JoinHostPort(net.IP(in4.Addr[:]).String(), strconv.Itoa(in4.Port))
			} else if in6, ok := sa.(*unix.SockaddrInet6); ok {
				s.addr = net.JoinHostPort(net.IP(in6.Addr[:]).String(), strconv.Itoa(in6.Port))
			}
		}
		_ = unix.Close(fd)
		s.gnetLns[0].bound = s.addr
	}
	// gnet starts its event loops (and so serves connections) only after
	// OnBoot returns.
	for _, l := range s.gnetLns {
		l.advertiseBound()
	}
	close(s.booted)
	return gnet.None
}

// OnOpen admits a connection under the connection cap. Loop only.
func (s *Server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	port := 0
	if len(s.gnetLns) > 1 {
		if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
			port = a.Port
		}
	}
	ln := s.gnetListener(port)
	if ln == nil {
		// Cannot happen: gnet listens on the gnet listeners' ports only.
		s.log.Error("connection on an unknown listener", "local", c.LocalAddr())
		return nil, gnet.Close
	}
	return s.onOpen(c, ln)
}

// onOpen admits a connection of listener ln. Loop only (gnet's, or the
// TLS connection's lock).
func (s *Server) onOpen(c gnet.Conn, ln *listenerState) ([]byte, gnet.Action) {
	if s.draining.Load() {
		return nil, gnet.Close
	}
	if int(s.conns.Add(1)) > s.cfg.MaxConnections {
		s.conns.Add(-1)
		s.cfg.Metrics.ConnClosed(CloseMaxConnections.String())
		s.refuse(&s.refusedGlobal, "connection refused: at the connection cap", c,
			"max_connections", s.cfg.MaxConnections)
		return nil, gnet.Close
	}
	key := addrKey(c.RemoteAddr())
	if !s.perAddr.acquire(key, s.cfg.MaxConnectionsPerAddr) {
		s.conns.Add(-1)
		s.cfg.Metrics.ConnClosed(CloseMaxConnectionsPerAddr.String())
		s.refuse(&s.refusedPerAddr, "connection refused: at the per-address connection cap", c,
			"addr", key.String(), "max_connections_per_addr", s.cfg.MaxConnectionsPerAddr)
		return nil, gnet.Close
	}
	cs := newConnState(s, c)
	cs.id = s.connIDs.Add(1)
	cs.addr = key
	cs.ln = ln
	if d := s.g.ConnectionThrottle(peerIP(c.RemoteAddr())); d > 0 {
		cs.refuseAfter(d)
	}
	if ln.sasl {
		cs.sasl = handlers.NewSaslConn(key)
	}
	c.SetContext(cs)
	s.connMu.Lock()
	s.all[cs] = struct{}{}
	s.connMu.Unlock()
	s.cfg.Metrics.ConnOpened()
	return nil, gnet.None
}

// OnClose drops the connection's parked replies. Loop only.
func (s *Server) OnClose(c gnet.Conn, err error) gnet.Action {
	cs, ok := c.Context().(*connState)
	if !ok {
		return gnet.None
	}
	cs.closed.Store(true)
	cs.dropAssembly()
	cs.onClosed()
	s.g.ConnClosed(cs.id)
	s.conns.Add(-1)
	s.perAddr.release(cs.addr)
	s.connMu.Lock()
	delete(s.all, cs)
	s.connMu.Unlock()
	s.cfg.Metrics.ConnClosed(CloseReason(cs.reason.Load()).String())
	return gnet.None
}

// OnTick closes idle connections and those whose request is late to
// arrive (FrameTimeout). Runs on one loop, every Config.tickEvery.
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	now := time.Now().UnixNano()
	cutoff := now - int64(s.cfg.IdleTimeout)
	s.connMu.Lock()
	for cs := range s.all {
		switch {
		case cs.frameLate(now, s.cfg.FrameTimeout):
			cs.close(CloseFrameTimeout, nil)
		case cs.loginLate(now, s.cfg.FrameTimeout):
			cs.close(CloseSaslLoginTimeout, nil)
		case cs.inflight.Load() == 0 && cs.lastActive.Load() < cutoff:
			cs.close(CloseIdle, nil)
		}
	}
	s.connMu.Unlock()
	return s.cfg.tickEvery(), gnet.None
}

// requestDone counts a finished request and gives a connection held for
// lack of queue room its turn. Any goroutine.
func (s *Server) requestDone() {
	s.inflight.Add(-1)
	if s.nHeld.Load() == 0 {
		return
	}
	s.heldMu.Lock()
	var cs *connState
	if len(s.heldQ) > 0 {
		cs = s.heldQ[0]
		s.heldQ[0] = nil
		s.heldQ = s.heldQ[1:]
		s.nHeld.Add(-1)
	}
	s.heldMu.Unlock()
	if cs != nil {
		_ = cs.c.Wake(nil)
	}
}

// holdForQueue parks a connection whose next frame found the job queue
// full; requestDone wakes it. Loop only.
func (s *Server) holdForQueue(cs *connState) {
	s.heldMu.Lock()
	s.heldQ = append(s.heldQ, cs)
	s.nHeld.Add(1)
	s.heldMu.Unlock()
}

// Shutdown stops taking requests, lets in-flight ones finish within the
// drain timeout (or until ctx ends), then closes every connection and the
// listener. Parked fetches are answered at once. Any goroutine.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdownOnce.Do(func() {
		s.draining.Store(true)
		s.wakeAllParked()
		deadline := time.NewTimer(s.cfg.DrainTimeout)
		defer deadline.Stop()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
	wait:
		for s.inflight.Load() > 0 {
			select {
			case <-ctx.Done():
				break wait
			case <-deadline.C:
				s.log.Warn("drain timeout: closing with requests in flight", "inflight", s.inflight.Load())
				break wait
			case <-tick.C:
			}
		}
		// Past the drain: store calls still in flight see their context
		// cancelled and answer at once, so the workers can stop.
		s.cancel()
		s.connMu.Lock()
		for cs := range s.all {
			// No reason recorded yet: the engine's stop closes it.
			cs.reason.CompareAndSwap(uint32(CloseClient), uint32(CloseShutdown))
		}
		s.connMu.Unlock()
		s.stopTLS()
		if s.engine != (gnet.Engine{}) {
			stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = s.engine.Stop(stopCtx)
			<-s.stopped
		} else if s.tickStop != nil {
			close(s.tickStop)
		}
		close(s.quit)
		s.workersDone.Wait()
	})
	return err
}

// gnetLogger routes gnet's own log lines into slog.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) Debugf(f string, a ...any) { g.l.Debug("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Infof(f string, a ...any)  { g.l.Debug("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Warnf(f string, a ...any)  { g.l.Warn("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Errorf(f string, a ...any) { g.l.Error("gnet: " + fmt.Sprintf(f, a...)) }
func (g gnetLogger) Fatalf(f string, a ...any) { g.l.Error("gnet: " + fmt.Sprintf(f, a...)) }
