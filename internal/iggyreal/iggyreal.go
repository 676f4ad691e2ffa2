// Package iggyreal runs the real Apache Iggy server that sits beside the
// repository in ../shared/iggy/server (binaries built from apache/iggy; its
// BUILD.md says how) for tests and the bench harness: on a free 127.0.0.1
// port, in its own data directory, killed or stopped on demand.
//
// Tests reach it through Shared (one server per test binary, or the one
// .ci/run started, named by IGGY_KAFKA_IGGY_TEST_ADDR) and isolate
// themselves with a stream of their own (Stream). Tests that kill or restart
// the server start a private one with Start.
//
// Test and bench support only: nothing in the gateway imports it.
package iggyreal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables.
const (
	// DirEnv names the directory holding run.sh and iggy-server, instead
	// of ../shared/iggy/server found from the module root.
	DirEnv = "IGGY_KAFKA_IGGY_SERVER_DIR"
	// AddrEnv is the address of a server someone else started (.ci/run);
	// Shared uses it instead of starting one.
	AddrEnv = "IGGY_KAFKA_IGGY_TEST_ADDR"
	// RequiredEnv turns a missing server from a skip into a failure, as
	// for every other real part the tests use.
	RequiredEnv = "IGGY_KAFKA_E2E_REQUIRED"
)

// Root credentials run.sh gives the server.
const (
	Username = "iggy"
	Password = "iggy"
)

// Dir returns the directory with run.sh and the binaries, or an error
// saying what is missing.
func Dir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return checkDir(d)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return checkDir(filepath.Join(root, "..", "shared", "iggy", "server"))
}

func checkDir(d string) (string, error) {
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", err
	}
	for _, f := range []string{"run.sh", "iggy-server"} {
		if _, err := os.Stat(filepath.Join(abs, f)); err != nil {
			return "", fmt.Errorf("no real Iggy server at %s (%s missing; see shared/iggy/server/BUILD.md)", abs, f)
		}
	}
	return abs, nil
}

// moduleRoot walks up from the working directory to the go.mod.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("iggyreal: go.mod not found above the working directory")
		}
		d = up
	}
}

// Binary returns the path of one of the shipped binaries (iggy-server,
// iggy, iggy-bench).
func Binary(name string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(d, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("iggyreal: %s: %w", p, err)
	}
	return p, nil
}

// Options of a server started by Start.
type Options struct {
	// Dir holds run.sh and iggy-server; empty means Dir() (the bench
	// harness passes the one found from its module dir, since its working
	// directory may be anywhere).
	Dir string
	// DataDir holds the server's data; required. A restart on the same
	// DataDir finds what the last run stored.
	DataDir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Shards is IGGY_SHARDS for run.sh (default 2, the machine's cores).
	Shards int
	// Log receives the server's output (default: discarded).
	Log io.Writer
	// Env adds server settings, KEY=value, to run.sh's environment
	// (IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=1s: the segment cleaner's
	// period, 1 minute by default).
	Env []string

	// KillWithParent has the kernel SIGKILL the server when the process
	// that started it dies (the bench harness: a killed run leaves no
	// server behind on a shared machine).
	KillWithParent bool

	deathSignal syscall.Signal // sent by the kernel when the starter dies
}

// Server is one running (or stopped) iggy-server process.
type Server struct {
	opts Options
	dir  string
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Start waits until nothing listens on the port, runs run.sh DataDir Port
// and waits until the server accepts TCP connections (at most 30 s in all).
func Start(ctx context.Context, opts Options) (*Server, error) {
	var dir string
	var err error
	if opts.Dir != "" {
		dir, err = checkDir(opts.Dir)
	} else {
		dir, err = Dir()
	}
	if err != nil {
		return nil, err
	}
	if opts.DataDir == "" {
		return nil, errors.New("iggyreal: Options.DataDir is required")
	}
	if opts.Port == 0 {
		if opts.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	if opts.Shards == 0 {
		opts.Shards = 2
	}
	s := &Server{opts: opts, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port))}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Addr is host:port of the server's TCP listener; it stays the same across
// restarts.
func (s *Server) Addr() string { return s.addr }

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return s.opts.DataDir }

func (s *Server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("iggyreal: server already running")
	}
	deadline := time.Now().Add(30 * time.Second)
	// The readiness check below means "the new server listens" only if
	// nothing else did before it started. The listening socket of a killed
	// server can outlive its process for a moment (the kernel releases an
	// io_uring ring's files, the server's, by deferred work after the
	// process is reaped) and completes handshakes until then.
	switch err := waitPort(ctx, s.addr, false, deadline, nil); {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("iggyreal: %s still takes connections before iggy-server starts: an earlier server's socket or another program holds the port", s.addr)
	case err != nil:
		return err
	}
	out := s.opts.Log
	if out == nil {
		out = io.Discard
	}
	// The server would refuse, one restart later, a segment a kill tore (see TrimTornTails).
	cut, err := TrimTornTails(s.opts.DataDir)
	if err != nil {
		return fmt.Errorf("iggyreal: cutting torn segment tails in %s: %w", s.opts.DataDir, err)
	}
	for _, line := range cut {
		fmt.Fprintf(out, "iggyreal: before start, cut %s\n", line)
	}
	cmd := exec.Command(filepath.Join(s.dir, "run.sh"), s.opts.DataDir, strconv.Itoa(s.opts.Port))
	cmd.Env = append(serverEnv(), "IGGY_SHARDS="+strconv.Itoa(s.opts.Shards))
	cmd.Env = append(cmd.Env, s.opts.Env...)
	tail := &tailBuffer{max: 8 << 10}
	cmd.Stdout = io.MultiWriter(out, tail)
	cmd.Stderr = cmd.Stdout
	// Its own process group, so a signal meant for the test runner (^C)
	// does not reach it first, and Kill reaches everything it started.
	sig := s.opts.deathSignal
	if s.opts.KillWithParent {
		sig = syscall.SIGKILL
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("iggyreal: starting %s: %w", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	switch err := waitPort(ctx, s.addr, true, deadline, done); {
	case err == nil:
		return nil
	case errors.Is(err, errExited):
		s.cmd = nil
		return fmt.Errorf("iggyreal: iggy-server exited before listening on %s; its output:\n%s", s.addr, tail.String())
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.killLocked()
		return fmt.Errorf("iggyreal: iggy-server not listening on %s after 30s; its output:\n%s", s.addr, tail.String())
	default:
		s.killLocked()
		return err
	}
}

// errExited: the process waitPort watched ended.
var errExited = errors.New("iggyreal: process exited")

// waitPort dials addr every 50 ms until it is listening (a connection is
// made) or, with listening false, until nothing is (the dial is refused).
// It gives up at deadline (os.ErrDeadlineExceeded), when ctx ends, or when
// exited is closed (errExited; nil: no process to watch).
func waitPort(ctx context.Context, addr string, listening bool, deadline time.Time, exited <-chan struct{}) error {
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		if listening && err == nil || !listening && errors.Is(err, syscall.ECONNREFUSED) {
			return nil
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return os.ErrDeadlineExceeded
		}
	}
}

// serverEnv is the environment without the gateway's own variables.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IGGY_") {
			env = append(env, kv)
		}
	}
	return env
}

// Kill sends SIGKILL to the server and waits until it is gone: whatever it
// had not made durable is lost, as in a crash.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Stop sends SIGTERM and waits (up to timeout, then SIGKILL) for a clean
// exit. It reports whether the server exited by itself.
func (s *Server) Stop(timeout time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return true
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
		s.cmd = nil
		return true
	case <-time.After(timeout):
		s.killLocked()
		return false
	}
}

// Restart starts the server again on the same data directory and port
// after Kill or Stop.
func (s *Server) Restart(ctx context.Context) error { return s.start(ctx) }

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// PID is the server's process id (0 when not running).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Close stops the server (SIGTERM, then SIGKILL after 10 s).
func (s *Server) Close() error {
	s.Stop(10 * time.Second)
	return nil
}

// FreePort asks the kernel for a free 127.0.0.1 port. Another process may
// take it before it is used, so a caller retries a start that fails on it
// (the bench harness's child-process targets use it too).
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
