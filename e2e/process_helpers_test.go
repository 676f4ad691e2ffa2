package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

var buildDir string // holds the gateway binary built by gatewayBinary

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
	stderr *syncbuf.Buffer
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
		p = &process{t: t, Addr: addr, cmd: cmd, done: make(chan struct{}), stderr: &syncbuf.Buffer{}}
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

// waitListening reports whether the process accepts connections within
// timeout; it gives up early when the process exits.
func (p *process) waitListening(timeout time.Duration) bool {
	listening := false
	_ = await.Poll(timeout, 20*time.Millisecond, func() error {
		if p.exited() {
			return nil // stop waiting: it never will listen
		}
		c, err := net.DialTimeout("tcp", p.Addr, 200*time.Millisecond)
		if err != nil {
			return err
		}
		c.Close()
		listening = true
		return nil
	})
	return listening
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

// spawnListeners runs the gateway binary with args (which name its
// listeners) and waits until waitAddr accepts connections.
func spawnListeners(t testing.TB, waitAddr string, args ...string) *process {
	t.Helper()
	full := append([]string{"--log-level=debug"}, backendArgs(t, t.TempDir())...)
	cmd := exec.Command(gatewayBinary(t), append(full, args...)...)
	cmd.Env = childEnv()
	p := &process{t: t, Addr: waitAddr, cmd: cmd, done: make(chan struct{}), stderr: &syncbuf.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if !p.exited() {
			p.Kill()
		}
		if t.Failed() {
			t.Logf("spawned gateway log:\n%s", tail(p.stderr.String(), 200))
		}
	})
	if !p.waitListening(20 * time.Second) {
		t.Fatalf("gateway did not listen on %s; log:\n%s", waitAddr, tail(p.stderr.String(), 100))
	}
	return p
}

// stopWithin sends SIGTERM and fails unless the process exits 0 within limit.
func stopWithin(t testing.TB, p *process, limit time.Duration) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("gateway did not exit within %v of SIGTERM; log:\n%s", limit, tail(p.Log(), 60))
	}
	if p.err != nil {
		t.Fatalf("gateway exited with %v after SIGTERM; log:\n%s", p.err, tail(p.Log(), 60))
	}
	t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// runCmd runs a client tool with stdin and a deadline, returning stdout and
// stderr separately.
func runCmd(t testing.TB, timeout time.Duration, stdin string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runCmdContext(context.Background(), timeout, stdin, name, args...)
}

// runCmdContext is runCmd that also stops (kills) the command when parent
// is done: for commands run on a goroutine that must not outlive the test.
func runCmdContext(parent context.Context, timeout time.Duration, stdin string, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
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
	switch {
	case parent.Err() != nil:
		err = fmt.Errorf("%s stopped: %w", name, parent.Err())
	case ctx.Err() != nil:
		err = fmt.Errorf("%s timed out after %v: %w", name, timeout, err)
	}
	return out.String(), errOut.String(), err
}
