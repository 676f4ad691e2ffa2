package loop

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

// dialFrom connects to addr from local IP src (any 127/8 address works on
// Linux loopback).
func dialFrom(t testing.TB, src, addr string) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c}
}

// apiVersionsOK makes one ApiVersions round trip and reports whether it
// was answered (false: the gateway closed the connection).
func apiVersionsOK(rc *rawConn) bool {
	b, _ := rc.frame(apiVersionsReq(3))
	if _, err := rc.c.Write(b); err != nil {
		return false
	}
	_, _, err := rc.read()
	return err == nil
}

// waitClosed waits up to timeout for the gateway to close rc; it fails the
// test when rc stays open.
func waitClosed(t *testing.T, rc *rawConn, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	_ = rc.c.SetReadDeadline(start.Add(timeout))
	var one [1]byte
	_, err := rc.c.Read(one[:])
	if err == nil {
		t.Fatal("the gateway sent bytes on a connection it should close")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", timeout)
	}
	if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read: %v", err)
	}
}

// A connection that sends half a request is closed FrameTimeout after its
// first byte, not after the idle timeout; meanwhile other connections are
// served, and a connection idle between whole requests is left alone.
// Serial: the healthy connections must send their first request within the
// 400 ms FrameTimeout of connecting, which a machine loaded by parallel
// tests may not allow.
func TestFrameTimeoutClosesPartialFrame(t *testing.T) {
	const timeout = 400 * time.Millisecond
	srv, _ := newTestServer(t, Config{FrameTimeout: timeout, IdleTimeout: time.Hour})

	idle := dialRaw(t, srv.Addr())
	if !apiVersionsOK(idle) {
		t.Fatal("first request on the idle connection not answered")
	}

	start := time.Now() // before the dial: the clock runs from accept at the latest
	slow := dialRaw(t, srv.Addr())
	frame, _ := slow.frame(apiVersionsReq(3))
	slow.write(frame[:7])
	other := dialRaw(t, srv.Addr())
	for i := 0; i < 3; i++ {
		if !apiVersionsOK(other) {
			t.Fatal("a healthy connection was not served while a partial frame was pending")
		}
	}
	// The clock runs from the first byte: trickling more bytes does not
	// reset it.
	time.Sleep(timeout / 2)
	_, _ = slow.c.Write(frame[7:9]) // may fail: on a loaded machine the deadline can have passed already
	waitClosed(t, slow, 5*time.Second)
	if took := time.Since(start); took < timeout {
		t.Fatalf("closed %v after connecting, before the frame timeout %v", took, timeout)
	}
	if !apiVersionsOK(idle) {
		t.Fatal("a connection idle between whole requests was closed by the frame timeout")
	}
}

// A connection that never sends a request is closed after FrameTimeout.
func TestFrameTimeoutFirstRequest(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	srv, _ := newTestServer(t, Config{FrameTimeout: timeout, IdleTimeout: time.Hour})
	start := time.Now()
	silent := dialRaw(t, srv.Addr())
	waitClosed(t, silent, 5*time.Second)
	if took := time.Since(start); took < timeout {
		t.Fatalf("closed after %v, before the frame timeout %v", took, timeout)
	}
}

// Connections beyond MaxConnectionsPerAddr from one address are refused
// while another address still connects; a closed connection frees its slot.
func TestPerAddrConnectionCap(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{MaxConnectionsPerAddr: 3})
	var held []*rawConn
	for i := 0; i < 3; i++ {
		rc := dialFrom(t, "127.0.0.1", srv.Addr())
		if !apiVersionsOK(rc) {
			t.Fatalf("connection %d under the cap refused", i)
		}
		held = append(held, rc)
	}
	over := dialFrom(t, "127.0.0.1", srv.Addr())
	if apiVersionsOK(over) {
		t.Fatal("a fourth connection from 127.0.0.1 was served; cap is 3")
	}
	other := dialFrom(t, "127.0.0.2", srv.Addr())
	if !apiVersionsOK(other) {
		t.Fatal("a connection from 127.0.0.2 was refused while 127.0.0.1 was at its cap")
	}
	_ = held[0].c.Close()
	await.True(t, 5*time.Second, "a closed connection gave its slot back", func() bool {
		return apiVersionsOK(dialFrom(t, "127.0.0.1", srv.Addr()))
	})
}

// A connect loop against a full gateway logs one refusal line, not one per
// connection, and the line counts the ones it held back next time. Serial:
// the 40 refusals must fall in one 10 s log interval, and gnet logs through
// the logger of whichever engine started last, which a parallel test's
// server could make this one.
func TestRefusalLogRateLimited(t *testing.T) {
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, _ := newTestServer(t, Config{MaxConnectionsPerAddr: 1, Log: log})
	keep := dialRaw(t, srv.Addr())
	if !apiVersionsOK(keep) {
		t.Fatal("first connection refused")
	}
	const tries = 40
	for i := 0; i < tries; i++ {
		rc := dialRaw(t, srv.Addr())
		if apiVersionsOK(rc) {
			t.Fatalf("connection %d over the cap was served", i)
		}
		_ = rc.c.Close()
	}
	if n := strings.Count(logs.String(), "connection refused"); n != 1 {
		t.Fatalf("%d refusal log lines for %d refusals, want 1:\n%s", n, tries, logs.String())
	}
	var l logLimiter
	now := time.Now()
	if ok, _ := l.allow(now, time.Second); !ok {
		t.Fatal("first line held back")
	}
	for i := 0; i < 5; i++ {
		if ok, _ := l.allow(now.Add(time.Millisecond), time.Second); ok {
			t.Fatal("line inside the interval let through")
		}
	}
	if ok, held := l.allow(now.Add(time.Second), time.Second); !ok || held != 5 {
		t.Fatalf("after the interval: ok %v held %d, want true 5", ok, held)
	}
}

// addrKey groups IPv6 peers by /64 and unmaps IPv4-in-IPv6.
func TestAddrKey(t *testing.T) {
	t.Parallel()
	k := func(s string) string { return addrKey(&net.TCPAddr{IP: net.ParseIP(s), Port: 1}).String() }
	if a, b := k("2001:db8::1"), k("2001:db8::ffff:1"); a != b || a != "2001:db8::" {
		t.Fatalf("v6 keys %s %s, want one /64", a, b)
	}
	if got := k("::ffff:10.0.0.1"); got != "10.0.0.1" {
		t.Fatalf("v4-mapped key %s", got)
	}
	if got := addrKey(nil); got.IsValid() {
		t.Fatalf("nil addr key %v", got)
	}
}
