package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	gatewaypkg "github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
	"github.com/iggy-kafka/gateway/internal/metrics"
	"github.com/iggy-kafka/gateway/loop"
)

// requiredEnv turns a missing client from a skip into a failure.
const requiredEnv = "IGGY_KAFKA_E2E_REQUIRED"

var buildDir string // holds the gateway binary built by gatewayBinary

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	iggyreal.StopShared()
	os.Exit(code)
}

// missing skips t, or fails it under IGGY_KAFKA_E2E_REQUIRED=1, saying what
// to install.
func missing(t testing.TB, what, install string) {
	t.Helper()
	if os.Getenv(requiredEnv) == "1" {
		t.Fatalf("%s is missing and %s=1: %s", what, requiredEnv, install)
	}
	t.Skipf("%s is not available (%s); set %s=1 to make this a failure", what, install, requiredEnv)
}

// needKcat returns kcat's path or skips.
func needKcat(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		missing(t, "kcat", "install it: apt-get install kcat")
	}
	return p
}

// javaLib is where e2e/java/fetch.sh puts the Kafka jars.
const javaLib = "java/target/lib"

// needJava returns the java path and classpath, or skips.
func needJava(t testing.TB) (java, classpath string) {
	t.Helper()
	p, err := exec.LookPath("java")
	if err != nil {
		missing(t, "java", "install a JDK 17+: apt-get install openjdk-17-jdk-headless maven, then run e2e/java/fetch.sh")
	}
	jars, _ := filepath.Glob(filepath.Join(javaLib, "kafka-tools-*.jar"))
	if len(jars) == 0 {
		missing(t, "the Kafka Java tools jars", "run e2e/java/fetch.sh (needs Maven)")
	}
	abs, err := filepath.Abs(javaLib)
	if err != nil {
		t.Fatal(err)
	}
	return p, filepath.Join(abs, "*")
}

// checkFor polls fn every `every` until it returns nil, failing t with the
// last error after timeout. Tests use it instead of sleeping.
func checkFor(t testing.TB, timeout, every time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", timeout, err)
		}
		time.Sleep(every)
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writers of a log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gateway is an in-process gateway serving on 127.0.0.1.
type gateway struct {
	Addr   string
	Store  bridge.Backend // the embedded store, or the Iggy client over iggytest or the real server (backend_test.go)
	Stream string         // the Iggy stream holding its Kafka topics
	G      *handlers.Gateway
	Srv    *loop.Server
	Log    *syncBuffer
}

type gwOption func(*handlers.Config, *loop.Config)

// withAutoCreate sets handlers.Config.AutoCreateTopics, as
// --auto-create-topics does.
func withAutoCreate(on bool) gwOption {
	return func(h *handlers.Config, _ *loop.Config) { h.AutoCreateTopics = on }
}

// freePort returns a port that was free a moment ago, for addresses that
// must be known before a gateway starts (the binary's flags, the admin
// listeners); an in-process gateway binds port 0 and advertises what it got.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startGateway runs an embedded store in a temp dir and a gateway
// (gateway.Start) on 127.0.0.1, on a port the kernel picks, with the
// defaults the command uses; the gateway and store are shut down when the
// test ends, and their log is printed if it failed.
func startGateway(t testing.TB, opts ...gwOption) *gateway {
	t.Helper()
	logBuf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := openBackend(t, t.TempDir(), log.With("component", "store"))
	return startGatewayOn(t, store, kafkaStream(t), logBuf, opts...)
}

// startGatewayOn is startGateway on a given store, whose Kafka topics are
// in stream; the gateway owns the store (closes it) from here on. logBuf
// receives the gateway's log (nil: a new buffer).
func startGatewayOn(t testing.TB, store bridge.Backend, stream string, logBuf *syncBuffer, opts ...gwOption) *gateway {
	t.Helper()
	if logBuf == nil {
		logBuf = &syncBuffer{}
	}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := gatewaypkg.Config{
		Backend: store, // served under the deadline guard, as the binary serves its store
		Handlers: handlers.Config{
			Stream:            stream,
			AdvertisedHost:    "127.0.0.1",
			NodeID:            1,
			ClusterID:         "e2e",
			AutoCreateTopics:  true,
			DefaultPartitions: 1,
			MaxFrameSize:      8 << 20,
			MaxFetchWait:      10 * time.Second,
			MaxMessageSize:    64 << 20,
			TailCacheBytes:    256 << 20, // --tail-cache-mb's default
		},
		Loop: loop.Config{
			Addr:         "127.0.0.1:0", // the gateway advertises the port it binds
			MaxFrameSize: 8 << 20,
			DrainTimeout: 5 * time.Second,
			Metrics:      metrics.New(nil), // exercised under -race; not scraped
		},
		Log: log,
	}
	if iggyBackend() {
		cfg.Handlers.FetchConcurrency = 8 // as the binary on --backend iggy
	}
	for _, o := range opts {
		o(&cfg.Handlers, &cfg.Loop)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	running, err := gatewaypkg.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting the gateway: %v\n%s", err, tail(logBuf.String(), 50))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := running.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", tail(logBuf.String(), 200))
		}
	})
	return &gateway{Addr: running.Addr(), Store: store, Stream: cfg.Handlers.Stream, G: running.Handlers, Srv: running.Loop, Log: logBuf}
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = append([]string{fmt.Sprintf("... %d lines cut ...", len(parts)-lines)}, parts[len(parts)-lines:]...)
	}
	return strings.Join(parts, "\n")
}

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
)

// gatewayBinary builds ./cmd/iggy-kafka-gateway once per test run.
func gatewayBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "iggy-kafka-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		buildBin = filepath.Join(dir, "iggy-kafka-gateway")
		cmd := exec.Command("go", "build", "-o", buildBin, "./cmd/iggy-kafka-gateway")
		cmd.Dir = ".." // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// process is a gateway binary running as a child.
type process struct {
	t      testing.TB
	Addr   string
	cmd    *exec.Cmd
	done   chan struct{}
	err    error // from Wait, valid after done
	stderr *syncBuffer
}

// childEnv is the test's environment without IGGY_KAFKA_* variables, so the
// child sees only the flags a test passes (and no IGGY_KAFKA_E2E_REQUIRED).
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IGGY_KAFKA_") {
			env = append(env, kv)
		}
	}
	return env
}

// spawnGateway runs the gateway binary on dataDir and a free port, and
// waits until it accepts connections. It is killed when the test ends if
// still running; its log is printed if the test failed.
func spawnGateway(t testing.TB, dataDir string, args ...string) *process {
	t.Helper()
	bin := gatewayBinary(t)
	var p *process
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		full := []string{"--bind-addr=" + addr, "--log-level=debug"}
		if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--backend=") }) {
			full = append(full, backendArgs(t, dataDir)...)
		}
		full = append(full, args...)
		cmd := exec.Command(bin, full...)
		cmd.Env = childEnv()
		p = &process{t: t, Addr: addr, cmd: cmd, done: make(chan struct{}), stderr: &syncBuffer{}}
		cmd.Stdout = p.stderr
		cmd.Stderr = p.stderr
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		if p.waitListening(20 * time.Second) {
			break
		}
		if !p.exited() {
			p.Kill()
			t.Fatalf("gateway did not listen on %s within 20s; log:\n%s", addr, tail(p.stderr.String(), 100))
		}
		if !strings.Contains(p.stderr.String(), "address already in use") {
			t.Fatalf("gateway exited before listening (%v); log:\n%s", p.err, tail(p.stderr.String(), 100))
		}
		p = nil // port raced with someone; try another
	}
	if p == nil {
		t.Fatal("gateway could not bind a free port in 3 attempts")
	}
	t.Cleanup(func() {
		if !p.exited() {
			p.Kill()
		}
		if t.Failed() {
			t.Logf("spawned gateway log:\n%s", tail(p.stderr.String(), 200))
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) waitListening(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.exited() {
			return false
		}
		c, err := net.DialTimeout("tcp", p.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Stop sends SIGTERM and waits (up to 40s) for a clean exit; it fails the
// test on a non-zero exit.
func (p *process) Stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
		p.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		p.Kill()
		p.t.Fatalf("gateway did not exit within 40s of SIGTERM; log:\n%s", tail(p.stderr.String(), 100))
	}
	if p.err != nil {
		p.t.Fatalf("gateway exited with %v after SIGTERM; log:\n%s", p.err, tail(p.stderr.String(), 100))
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Log returns what the child wrote so far.
func (p *process) Log() string { return p.stderr.String() }

// runCmd runs a client tool with stdin and a deadline, returning stdout and
// stderr separately.
func runCmd(t testing.TB, timeout time.Duration, stdin string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = childEnv()
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	// A killed parent must not leave grandchildren (a JVM's own threads
	// are fine, but kcat could fork a shell for -E hooks) holding the
	// pipes open and blocking Wait forever.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out after %v: %w", name, timeout, err)
	}
	return out.String(), errOut.String(), err
}

// javaRun runs a Kafka tool class on the fetched classpath.
func javaRun(t testing.TB, timeout time.Duration, stdin, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	java, cp := needJava(t)
	jvm := []string{
		// A short-lived tool: start fast, stay small.
		"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, class,
	}
	return runCmd(t, timeout, stdin, java, append(jvm, args...)...)
}

// errClosed reports whether err means the peer closed the connection.
func errClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE)
}

// slow says whether the race detector is on; some loads are cut then.
var slow = raceEnabled || runtime.GOMAXPROCS(0) < 2
