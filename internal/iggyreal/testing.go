package iggyreal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Need returns the server directory, or skips t saying what is missing
// (fails it under IGGY_KAFKA_E2E_REQUIRED=1, as .ci/run sets).
func Need(t testing.TB) string {
	t.Helper()
	d, err := Dir()
	if err != nil {
		if os.Getenv(RequiredEnv) == "1" {
			t.Fatalf("%v; %s=1 makes this a failure", err, RequiredEnv)
		}
		t.Skipf("%v; set %s=1 to make this a failure", err, RequiredEnv)
	}
	return d
}

var shared struct {
	once sync.Once
	srv  *Server
	dir  string
	err  error
}

// Shared returns the address of a real Iggy server tests share: the one
// named by IGGY_KAFKA_IGGY_TEST_ADDR, else one started for this test binary
// on first use (stopped by Main, and killed with the test binary in any
// case). Tests on it must keep to streams of their own (Stream).
func Shared(t testing.TB) string {
	t.Helper()
	if a := os.Getenv(AddrEnv); a != "" {
		return a
	}
	Need(t)
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "iggyreal-shared-")
		if shared.err != nil {
			return
		}
		shared.srv, shared.err = startOrphanSafe(shared.dir)
	})
	if shared.err != nil {
		t.Fatalf("starting the shared Iggy server: %v", shared.err)
	}
	return shared.srv.Addr()
}

// startOrphanSafe starts a server that the kernel kills when the test
// binary dies, so a crashed or interrupted run leaves no server behind.
func startOrphanSafe(dir string) (*Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	s, err := Start(ctx, Options{DataDir: dir, deathSignal: syscall.SIGKILL})
	return s, err
}

// Main runs the tests, then stops the shared server if this binary started
// one. Packages with real-server tests call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the shared server started by Shared, if any, and
// removes its data.
func StopShared() {
	if shared.srv != nil {
		shared.srv.Close()
		shared.srv = nil
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
		shared.dir = ""
	}
}

// StartPrivate starts a server of t's own (data in t.TempDir()) for tests
// that kill, stop or restart it, or need settings of their own (env, as
// Options.Env); it is stopped when t ends.
func StartPrivate(t testing.TB, env ...string) *Server {
	t.Helper()
	Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	log := &tailBuffer{max: 64 << 10}
	s, err := Start(ctx, Options{DataDir: t.TempDir(), Log: log, Env: env, deathSignal: syscall.SIGKILL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("iggy-server output (tail):\n%s", log.String())
		}
	})
	return s
}

// Stream returns a stream name no other test uses: a short form of t's
// name and a random suffix, within Iggy's 255-byte name limit.
func Stream(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '.'
	}, t.Name())
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	return fmt.Sprintf("t.%s.%s", name, hex.EncodeToString(b[:]))
}
