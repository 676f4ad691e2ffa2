package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// requiredEnv turns a missing client from a skip into a failure.
const requiredEnv = "IGGY_KAFKA_E2E_REQUIRED"

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

// slow says whether the race detector is on; some loads are cut then.
var slow = raceEnabled || runtime.GOMAXPROCS(0) < 2

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = append([]string{fmt.Sprintf("... %d lines cut ...", len(parts)-lines)}, parts[len(parts)-lines:]...)
	}
	return strings.Join(parts, "\n")
}

// errClosed reports whether err means the peer closed the connection.
func errClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE)
}
