package e2e

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
)

// backendEnv picks the store the whole suite runs on: "embedded" (the
// default) or "iggy", where the gateway talks Iggy's binary protocol over
// real TCP to the in-process Iggy server (iggytest) on an embedded store.
// .ci/run runs the suite once per backend.
const backendEnv = "IGGY_KAFKA_E2E_BACKEND"

func iggyBackend() bool { return os.Getenv(backendEnv) == "iggy" }

// openBackend returns the Store an in-process gateway serves from, with its
// data under dir; everything is closed when the test ends.
func openBackend(t testing.TB, dir string, log *slog.Logger) bridge.Store {
	t.Helper()
	inner, err := embedded.Open(dir, embedded.Options{Logger: log})
	if err != nil {
		t.Fatalf("embedded.Open: %v", err)
	}
	if !iggyBackend() {
		return inner
	}
	srv, err := iggytest.Start(inner, iggytest.Options{Logger: log.With("component", "iggytest")})
	if err != nil {
		_ = inner.Close()
		t.Fatalf("iggytest.Start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := iggy.Open(ctx, iggy.Options{Addr: srv.Addr(), Logger: log.With("component", "iggy")})
	if err != nil {
		_ = srv.Close()
		_ = inner.Close()
		t.Fatalf("iggy.Open: %v", err)
	}
	// Runs after the gateway's own cleanup (registered later) closed st.
	t.Cleanup(func() {
		_ = srv.Close()
		_ = inner.Close()
	})
	return st
}

var (
	iggyServersMu sync.Mutex
	iggyServers   = map[string]*iggytest.Server{}
)

// backendArgs are the gateway flags for a spawned binary whose data lives
// in dataDir. On the iggy backend dataDir holds the in-process Iggy
// server's store instead, and that server outlives gateway restarts within
// the test, as a real Iggy server would.
func backendArgs(t testing.TB, dataDir string) []string {
	t.Helper()
	if !iggyBackend() {
		return []string{"--data-dir=" + dataDir}
	}
	iggyServersMu.Lock()
	defer iggyServersMu.Unlock()
	if srv := iggyServers[dataDir]; srv != nil {
		return []string{"--backend=iggy", "--iggy-addr=" + srv.Addr()}
	}
	inner, err := embedded.Open(dataDir, embedded.Options{})
	if err != nil {
		t.Fatalf("embedded.Open: %v", err)
	}
	srv, err := iggytest.Start(inner, iggytest.Options{})
	if err != nil {
		_ = inner.Close()
		t.Fatalf("iggytest.Start: %v", err)
	}
	iggyServers[dataDir] = srv
	t.Cleanup(func() {
		iggyServersMu.Lock()
		delete(iggyServers, dataDir)
		iggyServersMu.Unlock()
		_ = srv.Close()
		_ = inner.Close()
	})
	return []string{"--backend=iggy", "--iggy-addr=" + srv.Addr()}
}
