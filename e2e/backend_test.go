package e2e

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

// backendEnv picks the store the whole suite runs on: "embedded" (the
// default); "iggy", where the gateway talks Iggy's binary protocol over
// real TCP to the in-process Iggy server (iggytest) on an embedded store; or
// "iggy-server", the real Apache Iggy server (internal/iggyreal: the one
// .ci/run started, or one this test binary starts), each test in a stream of
// its own. .ci/run runs the suite once per backend.
const backendEnv = "IGGY_KAFKA_E2E_BACKEND"

// iggyBackend reports a gateway on the Iggy backend, imitation or real.
func iggyBackend() bool { b := os.Getenv(backendEnv); return b == "iggy" || b == "iggy-server" }

// realIggyBackend reports the real Iggy server as the backend.
func realIggyBackend() bool { return os.Getenv(backendEnv) == "iggy-server" }

// realBackend is what a test on the real server uses: the server and the
// test's own streams.
type realBackend struct {
	addr, stream, state string
}

// gatewayArgs are the flags of a gateway binary on rb: the server, the
// Kafka stream and the state stream; extra are appended.
func (rb realBackend) gatewayArgs(extra ...string) []string {
	return append([]string{"--backend=iggy", "--iggy-addr=" + rb.addr, "--stream=" + rb.stream, "--iggy-state-stream=" + rb.state}, extra...)
}

// newRealBackend picks the shared real server and names the test's streams;
// they are deleted when the test ends.
func newRealBackend(t testing.TB) realBackend {
	t.Helper()
	rb := realBackend{addr: iggyreal.Shared(t), stream: iggyreal.Stream(t)}
	rb.state = rb.stream + ".gw"
	t.Cleanup(func() { dropStreams(t, rb) })
	return rb
}

// dropStreams deletes a test's streams from the shared server.
func dropStreams(t testing.TB, rb realBackend) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := iggy.Dial(ctx, iggy.Options{Addr: rb.addr, PoolSize: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer c.Close()
	for _, s := range []string{rb.stream, rb.state} {
		if err := c.DeleteStream(ctx, iggy.Name(s)); err != nil && !errors.Is(err, iggy.ErrStreamNotFound) {
			t.Logf("cleanup: deleting stream %s: %v", s, err)
		}
	}
}

// dialIggy is a plain client (one connection) of the Iggy server at
// addr, closed when the test ends.
func dialIggy(ctx context.Context, t testing.TB, addr string) *iggy.Client {
	t.Helper()
	c, err := iggy.Dial(ctx, iggy.Options{Addr: addr, PoolSize: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testStreams maps a test to its real-backend streams, so every gateway of
// one test (restarts included) uses the same ones.
var (
	testStreamsMu sync.Mutex
	testStreams   = map[string]realBackend{}
)

func realBackendFor(t testing.TB) realBackend {
	t.Helper()
	testStreamsMu.Lock()
	rb, ok := testStreams[t.Name()]
	testStreamsMu.Unlock()
	if ok {
		return rb
	}
	rb = newRealBackend(t)
	testStreamsMu.Lock()
	testStreams[t.Name()] = rb
	testStreamsMu.Unlock()
	t.Cleanup(func() {
		testStreamsMu.Lock()
		delete(testStreams, t.Name())
		testStreamsMu.Unlock()
	})
	return rb
}

// realServerTest marks a test that always runs on the real Iggy server,
// whatever the backend of the pass: it runs in the default pass only
// (`go test ./...`), not again when .ci/run repeats the suite per backend,
// and skips when the server is missing.
func realServerTest(t testing.TB) {
	t.Helper()
	if b := os.Getenv(backendEnv); b != "" {
		t.Skipf("runs on the real Iggy server in the default pass; this pass is %s=%s", backendEnv, b)
	}
	iggyreal.Need(t)
}

// kafkaStream is the Iggy stream holding the test's Kafka topics.
func kafkaStream(t testing.TB) string {
	if realIggyBackend() {
		return realBackendFor(t).stream
	}
	return "kafka"
}

// openBackend returns the Store an in-process gateway serves from, with its
// data under dir; everything is closed when the test ends.
func openBackend(t testing.TB, dir string, log *slog.Logger) bridge.Backend {
	t.Helper()
	if realIggyBackend() {
		rb := realBackendFor(t)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		st, err := iggy.Open(ctx, iggy.Options{Addr: rb.addr, StateStream: rb.state, Logger: log.With("component", "iggy")})
		if err != nil {
			t.Fatalf("iggy.Open on the real server: %v", err)
		}
		return st
	}
	inner, err := embedded.Open(dir, embedded.Options{Logger: log, RetentionCheckInterval: e2eRetentionCheck})
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
	if realIggyBackend() {
		rb := realBackendFor(t)
		return rb.gatewayArgs()
	}
	if !iggyBackend() {
		return []string{"--data-dir=" + dataDir}
	}
	return iggytestArgs(t, dataDir)
}

// iggyArgs are the flags of a gateway binary on an Iggy server whatever the
// e2e backend: the real server under iggy-server, else the imitation over
// an embedded store in dataDir (one per dataDir, shared by the gateways
// spawned on it).
func iggyArgs(t testing.TB, dataDir string) []string {
	t.Helper()
	if realIggyBackend() {
		return backendArgs(t, dataDir)
	}
	return iggytestArgs(t, dataDir)
}

// iggytestArgs starts (once per dataDir) an imitation Iggy server and
// returns the flags of a gateway on it.
func iggytestArgs(t testing.TB, dataDir string) []string {
	t.Helper()
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

// realGateway is an in-process gateway on the shared real server, on the
// test's own streams, and the iggy CLI on that server.
func realGateway(t *testing.T, opts ...gwOption) (*gateway, realBackend, *iggyCLI) {
	t.Helper()
	realServerTest(t)
	rb := newRealBackend(t)
	return startRealGateway(t, rb, opts...), rb, newIggyCLI(t, rb.addr)
}

// startRealGateway is an in-process gateway on the real server, on rb's
// streams; each call is a fresh gateway (a new Store: nothing in memory).
func startRealGateway(t *testing.T, rb realBackend, opts ...gwOption) *gateway {
	t.Helper()
	return gatewayOnIggy(t, iggy.Options{Addr: rb.addr, StateStream: rb.state}, rb.stream, opts...)
}

// privateIggyGateway runs an in-process gateway on a real Iggy server of
// the test's own (which the test may kill), started with the server
// settings env (iggyreal.Options.Env).
func privateIggyGateway(t *testing.T, env ...string) (*gateway, *iggyreal.Server) {
	t.Helper()
	realServerTest(t)
	srv := iggyreal.StartPrivate(t, env...)
	return gatewayOnIggy(t, iggy.Options{Addr: srv.Addr(), ReconnectMin: 20 * time.Millisecond, ReconnectMax: 500 * time.Millisecond}, "kafka"), srv
}

// gatewayOnIggy runs an in-process gateway on an Iggy store opened with o
// (its logger set here), its Kafka topics in stream.
func gatewayOnIggy(t *testing.T, o iggy.Options, stream string, opts ...gwOption) *gateway {
	t.Helper()
	logBuf := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Logger = log.With("component", "iggy")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := iggy.Open(ctx, o)
	if err != nil {
		t.Fatalf("iggy.Open: %v", err)
	}
	return startGatewayOn(t, st, stream, logBuf, opts...)
}
