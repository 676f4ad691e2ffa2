// Package iggytest is an in-process Iggy server that speaks the subset of
// Iggy's binary protocol (server 0.9.0-edge, protocol 0.11) the gateway's
// client uses, over any bridge.Backend. Tests use it to run the client and
// the iggy Store over real TCP without an Iggy installation.
//
// It checks frames the way the real server does (PROTOCOL.md sections 2,
// 3 and 6.10): frame sizes (connection closed), header validity (frame
// dropped silently), login first (status 40 or Eviction NoSession),
// protocol version (Eviction 14), credentials (Eviction 9/10), legacy
// logins (Eviction 15), request ids on the metadata plane (replayed ids
// get the cached reply), and send batches byte for byte, checksums
// included (a bad batch is dropped without a reply, as Iggy does).
//
// Topic options, UpdateTopic and partition changes follow the real
// server's rules (docs/IGGY.md, "The differential test"); renames and
// partition changes need a PartitionStore (the embedded store is one).
// Not served: consumer groups, users, PATs management, stats, segments;
// those commands get status 3 (InvalidCommand) or 5.
// Streams other than those holding topics live in memory only, as do
// consumer offsets.
package iggytest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Options configures a Server.
type Options struct {
	// Addr to listen on; default 127.0.0.1:0 (a free port).
	Addr string
	// Username and Password accepted at login; default iggy/iggy.
	Username, Password string
	// Token, when set, is a personal access token accepted at login.
	Token string
	// TLS, when set, serves TLS with this config.
	TLS *tls.Config
	// ServerVersion is sent in the login reply; default "0.9.0-edge.5".
	ServerVersion string
	// Logger; default discards.
	Logger *slog.Logger
}

// Server is a running test server.
type Server struct {
	store bridge.Backend
	opts  Options
	ln    net.Listener
	log   *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	rejected atomic.Int64
	frames   atomic.Int64
	fences   atomic.Uint64

	cat catalog
}

// Start listens and serves until Close. The store is not closed by Close:
// a test may start a new Server over the same store to simulate a restart.
func Start(store bridge.Backend, opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Username == "" && opts.Password == "" {
		opts.Username, opts.Password = "iggy", "iggy"
	}
	if opts.ServerVersion == "" {
		opts.ServerVersion = "0.9.0-edge.5"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, err
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	s := &Server{store: store, opts: opts, ln: ln, log: opts.Logger, conns: make(map[net.Conn]struct{})}
	s.cat.init(store)
	s.wg.Go(s.accept)
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Rejected counts frames dropped and connections closed for malformed
// input, so tests can wait for a silent rejection instead of sleeping.
func (s *Server) Rejected() int64 { return s.rejected.Load() }

// Frames counts frames read.
func (s *Server) Frames() int64 { return s.frames.Load() }

// Close stops listening, closes every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// DropConnections closes every open connection but keeps listening, as a
// network blip would.
func (s *Server) DropConnections() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

func (s *Server) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(nc)
	}
}

// serve runs one connection: read a frame, answer it (or not), repeat.
func (s *Server) serve(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		nc.Close()
	}()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	cs := &connState{srv: s}
	br := bufio.NewReaderSize(nc, 64<<10)
	var buf []byte
	for {
		var err error
		buf, err = wire.ReadFrame(br, buf)
		if err != nil {
			if errors.Is(err, wire.ErrFrameSize) {
				s.rejected.Add(1)
				s.log.Warn("iggytest: frame size out of range, closing")
			}
			return
		}
		s.frames.Add(1)
		out, closeAfter := cs.handle(buf)
		if out != nil {
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
		if closeAfter {
			return
		}
	}
}
