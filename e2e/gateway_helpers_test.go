package e2e

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	gatewaypkg "github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/metrics"
	"github.com/iggy-kafka/gateway/internal/syncbuf"
	"github.com/iggy-kafka/gateway/loop"
)

// gateway is an in-process gateway serving on 127.0.0.1.
type gateway struct {
	Addr   string
	Store  bridge.Backend // the embedded store, or the Iggy client over iggytest or the real server (backend_test.go)
	Stream string         // the Iggy stream holding its Kafka topics
	G      *handlers.Gateway
	Srv    *loop.Server
	Log    *syncbuf.Buffer
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
	logBuf := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	store := openBackend(t, t.TempDir(), log.With("component", "store"))
	return startGatewayOn(t, store, kafkaStream(t), logBuf, opts...)
}

// startGatewayOn is startGateway on a given store, whose Kafka topics are
// in stream; the gateway owns the store (closes it) from here on. logBuf
// receives the gateway's log (nil: a new buffer).
func startGatewayOn(t testing.TB, store bridge.Backend, stream string, logBuf *syncbuf.Buffer, opts ...gwOption) *gateway {
	t.Helper()
	if logBuf == nil {
		logBuf = &syncbuf.Buffer{}
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

// stopGateway shuts an in-process gateway down before the test ends (its
// cleanup then finds it stopped).
func stopGateway(t *testing.T, gw *gateway) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.Srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
