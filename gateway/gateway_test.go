package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/testcert"
	"github.com/iggy-kafka/gateway/loop"
)

// closeSpy is an injected backend that records its Close.
type closeSpy struct {
	bridge.Backend
	closed atomic.Bool
}

func (s *closeSpy) Close() error {
	s.closed.Store(true)
	return s.Backend.Close()
}

func openSpy(t *testing.T) *closeSpy {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() }) // a no-op once the gateway closed it
	return &closeSpy{Backend: st}
}

func testConfig(b bridge.Backend) Config {
	return Config{
		Backend:  b,
		Handlers: handlers.Config{Stream: "kafka", NodeID: 1, ClusterID: "gateway-test", AutoCreateTopics: true, DefaultPartitions: 1},
		Loop:     loop.Config{EventLoops: 1, DrainTimeout: 5 * time.Second},
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// metadataBroker asks the gateway at addr for Metadata and returns the
// one broker it names.
func metadataBroker(t *testing.T, addr string, opts ...kgo.Opt) (string, int32) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 {
		t.Fatalf("brokers %+v", resp.Brokers)
	}
	return resp.Brokers[0].Host, resp.Brokers[0].Port
}

func port(t *testing.T, hostport string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n == 0 {
		t.Fatalf("port of %q", hostport)
	}
	return int32(n)
}

// Listeners on port 0 with no advertised port advertise the port they
// bound, from their first client on: the default listener, and an SSL
// listener whose TLS comes from Config.TLS. The injected backend is served
// under the guard, and Shutdown closes it.
func TestStartAdvertisesBoundPorts(t *testing.T) {
	t.Parallel()
	spy := openSpy(t)
	files := testcert.Write(t, "127.0.0.1")
	cfg := testConfig(spy)
	cfg.Handlers.AdvertisedHost = "127.0.0.1"
	cfg.Loop.Addr = "127.0.0.1:0"
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Backend.Inner() != spy {
		t.Fatalf("the gateway serves %T, not the injected backend under the guard", r.Backend.Inner())
	}
	if r.Handlers.Store != bridge.Backend(r.Backend) {
		t.Fatal("the handlers do not call the store through the guard")
	}
	if len(r.Listeners) != 1 || r.Listeners[0].Name != loop.ProtoPlaintext {
		t.Fatalf("listeners %+v", r.Listeners)
	}
	bound := port(t, r.Addr())
	if h, p := metadataBroker(t, r.Addr()); h != "127.0.0.1" || p != bound || r.Listeners[0].Advertised.Port != bound {
		t.Fatalf("bound port %d; Metadata names %s:%d, Listeners say %+v", bound, h, p, r.Listeners[0].Advertised)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !spy.closed.Load() {
		t.Fatal("Shutdown left the backend open")
	}

	// The same with two listeners, one SSL.
	spy = openSpy(t)
	cfg = testConfig(spy)
	cfg.TLS = TLSFiles{CertFile: files.ServerCert, KeyFile: files.ServerKey}
	cfg.Loop.Listeners = []loop.Listener{
		{Name: "PLAINTEXT", Protocol: loop.ProtoPlaintext, Addr: "127.0.0.1:0"},
		{Name: "SSL", Protocol: loop.ProtoSSL, Addr: "127.0.0.1:0"},
	}
	r, err = Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	for i, opts := range [][]kgo.Opt{nil, {kgo.DialTLSConfig(testcert.ClientConfig(t, files, false))}} {
		l := r.Listeners[i]
		bound := port(t, l.Addr)
		if h, p := metadataBroker(t, l.Addr, opts...); h != "127.0.0.1" || p != bound || l.Advertised.Port != bound {
			t.Fatalf("%s bound port %d; Metadata names %s:%d, Listeners say %+v", l.Name, bound, h, p, l.Advertised)
		}
	}
}

// Cluster mode registers the advertised endpoints before binding: port 0
// without an advertised port is refused, and the failed Start closes the
// injected backend.
func TestStartRefusesPortZeroInClusterMode(t *testing.T) {
	t.Parallel()
	spy := openSpy(t)
	cfg := testConfig(spy)
	cfg.Loop.Addr = "127.0.0.1:0"
	cfg.Cluster = ClusterConfig{Endpoints: []string{"http://127.0.0.1:1"}, TTL: 2 * time.Second}
	_, err := Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "cluster mode") {
		t.Fatalf("Start: %v, want the cluster-mode refusal", err)
	}
	if !spy.closed.Load() {
		t.Fatal("a failed Start left the backend open")
	}
}

// Without an injected backend Start opens Store's, under the guard.
func TestStartOpensStore(t *testing.T) {
	t.Parallel()
	cfg := testConfig(nil)
	cfg.Store = StoreConfig{DataDir: t.TempDir(), Fsync: "never"}
	cfg.Loop.Addr = "127.0.0.1:0"
	r, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := r.Backend.Inner().(*embedded.Store)
	if !ok {
		t.Fatalf("backend %T, want the embedded store", r.Backend.Inner())
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Topics(context.Background(), "kafka"); !errors.Is(err, bridge.ErrClosed) {
		t.Fatalf("after Shutdown the store answers %v, want ErrClosed", err)
	}
}
