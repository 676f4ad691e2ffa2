package loop

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/testcert"
	"github.com/iggy-kafka/gateway/internal/tlsfiles"
)

// tlsServer is a gateway with a PLAINTEXT and an SSL listener, each
// advertising its own (made-up) address.
type tlsServer struct {
	srv       *Server
	plain, tl string // bound addresses
	files     testcert.Files
	src       *tlsfiles.Source
	hs        *hookStore // the store, whose appends a test may hold
}

func newTLSServer(t testing.TB, cfg Config, mtls bool) *tlsServer {
	t.Helper()
	f := testcert.Write(t, "localhost")
	ca := ""
	if mtls {
		ca = f.CA
	}
	src, err := tlsfiles.Load(f.ServerCert, f.ServerKey, ca)
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	gcfg := testGatewayConfig()
	gcfg.AdvertisedHost, gcfg.AdvertisedPort = "unused.example", 1
	cfg.Listeners = []Listener{
		{Name: "PLAINTEXT", Protocol: ProtoPlaintext, Addr: "127.0.0.1:0", AdvertisedHost: "plain.example", AdvertisedPort: 1111},
		{Name: "SSL", Protocol: ProtoSSL, Addr: "127.0.0.1:0", AdvertisedHost: "tls.example", AdvertisedPort: 2222, TLS: src.Config},
	}
	hs := &hookStore{Backend: st}
	srv := startServer(t, cfg, handlers.NewGateway(gcfg, hs, nil), st, func(err error) {
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	a := srv.ListenerAddrs()
	return &tlsServer{srv: srv, plain: a["PLAINTEXT"], tl: a["SSL"], files: f, src: src, hs: hs}
}

// clientConfig is the TLS configuration of a client of ts, with a client
// certificate or without.
func (ts *tlsServer) clientConfig(t testing.TB, clientCert bool) *tls.Config {
	cfg := testcert.ClientConfig(t, ts.files, clientCert)
	cfg.ServerName = "localhost"
	return cfg
}

func dialTLS(t testing.TB, ts *tlsServer, clientCert bool) (*rawConn, error) {
	t.Helper()
	cfg := ts.clientConfig(t, clientCert)
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", ts.tl, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c}, nil
}

// mustDialTLS is dialTLS for a handshake that must succeed.
func mustDialTLS(t testing.TB, ts *tlsServer, clientCert bool) *rawConn {
	t.Helper()
	rc, err := dialTLS(t, ts, clientCert)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// metadataBroker asks rc for Metadata and returns the broker it names.
func metadataBroker(t *testing.T, rc *rawConn) (string, int32) {
	t.Helper()
	b, _ := rc.frame(metadataReq())
	rc.write(b)
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(9)
	rc.readResp(resp)
	if len(resp.Brokers) != 1 {
		t.Fatalf("brokers: %+v", resp.Brokers)
	}
	return resp.Brokers[0].Host, resp.Brokers[0].Port
}

// Each listener advertises its own address; produce and pipelined
// replies work over TLS as over plaintext.
func TestTLSListenerServesAndAdvertisesItself(t *testing.T) {
	t.Parallel()
	ts := newTLSServer(t, Config{}, false)
	plain := dialRaw(t, ts.plain)
	if h, p := metadataBroker(t, plain); h != "plain.example" || p != 1111 {
		t.Fatalf("plaintext listener advertises %s:%d", h, p)
	}
	rc := mustDialTLS(t, ts, false)
	if h, p := metadataBroker(t, rc); h != "tls.example" || p != 2222 {
		t.Fatalf("SSL listener advertises %s:%d", h, p)
	}
	// Pipelined: ten produces and an ApiVersions in one write, answered
	// in order.
	var all []byte
	var corrs []int32
	for i := 0; i < 10; i++ {
		b, corr := rc.frame(produceReq("tls-topic", -1, strings.Repeat("x", 1000)))
		all, corrs = append(all, b...), append(corrs, corr)
	}
	b, corr := rc.frame(apiVersionsReq(3))
	all, corrs = append(all, b...), append(corrs, corr)
	rc.write(all)
	for _, want := range corrs {
		got, _, err := rc.read()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("reply %d, want %d", got, want)
		}
	}
	// A request larger than one TLS record (16 KiB) arrives in pieces.
	produceOK(t, rc, "tls-topic", strings.Repeat("y", 200<<10))
}

// expectClosed reads from c until the gateway closes it; it fails if the
// gateway answers anything.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 512)
	for {
		n, err := c.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the gateway did not close the connection")
			}
			return
		}
		if n > 0 && !strings.HasPrefix(t.Name(), "TestTLSPlaintextOnTLSPort") {
			t.Fatalf("the gateway answered %q", buf[:n])
		}
	}
}

// A client that connects to the TLS port and never finishes the handshake
// is closed within FrameTimeout; others are served meanwhile. Serial: the
// healthy client, too, must finish its handshake and first request within
// the 200 ms FrameTimeout, which a machine loaded by parallel tests may not
// allow.
func TestTLSHandshakeNeverFinishes(t *testing.T) {
	ts := newTLSServer(t, Config{FrameTimeout: 200 * time.Millisecond}, false)
	silent, err := net.Dial("tcp", ts.tl)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Half a ClientHello: a record header promising more than follows.
	half, err := net.Dial("tcp", ts.tl)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	if _, err := half.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); err != nil {
		t.Fatal(err)
	}
	rc := mustDialTLS(t, ts, false)
	produceOK(t, rc, "others", "served")
	expectClosed(t, silent)
	expectClosed(t, half)
	produceOK(t, rc, "others", "still served")
}

// Kafka frames in clear text on the TLS port close the connection (the
// handshake fails; crypto/tls may answer with an alert record) and leave
// the gateway serving.
func TestTLSPlaintextOnTLSPort(t *testing.T) {
	t.Parallel()
	ts := newTLSServer(t, Config{}, false)
	c, err := net.Dial("tcp", ts.tl)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := &rawConn{t: t, c: c}
	b, _ := rc.frame(apiVersionsReq(3))
	rc.write(b)
	expectClosed(t, c)
	tc := mustDialTLS(t, ts, false)
	produceOK(t, tc, "after-plain", "ok")
}

// A TLS client on the plaintext port is closed (frame_tls) and the
// plaintext port keeps serving.
func TestTLSClientOnPlaintextPort(t *testing.T) {
	t.Parallel()
	ts := newTLSServer(t, Config{}, false)
	cfg := ts.clientConfig(t, false)
	d := &net.Dialer{Timeout: 5 * time.Second}
	raw, err := d.Dial("tcp", ts.plain)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tls.Client(raw, cfg).Handshake(); err == nil {
		t.Fatal("a TLS handshake succeeded on the plaintext port")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the plaintext port did not close the TLS client: %v", err)
	}
	produceOK(t, dialRaw(t, ts.plain), "after-tls", "ok")
}

// With client CAs, a client without a certificate is refused and one with
// a certificate gets the certificate's subject as its principal.
func TestTLSMutual(t *testing.T) {
	t.Parallel()
	ts := newTLSServer(t, Config{}, true)
	if rc, err := dialTLS(t, ts, false); err == nil {
		// TLS 1.3: the refusal arrives after the client's handshake ends.
		b, _ := rc.frame(apiVersionsReq(3))
		_, _ = rc.c.Write(b)
		if _, _, err := rc.read(); err == nil {
			t.Fatal("a client without a certificate was served")
		}
	}
	rc := mustDialTLS(t, ts, true)
	produceOK(t, rc, "mtls", "ok")
	var principals []string
	ts.srv.connMu.Lock()
	for cs := range ts.srv.all {
		if cs.tlsPrincipal != "" {
			principals = append(principals, cs.tlsPrincipal)
		}
	}
	ts.srv.connMu.Unlock()
	if len(principals) != 1 || principals[0] != testcert.ClientSubject {
		t.Fatalf("principals %q, want [%q]", principals, testcert.ClientSubject)
	}
}

// A reload changes the certificate of new handshakes; connections already
// open keep working.
func TestTLSReload(t *testing.T) {
	t.Parallel()
	ts := newTLSServer(t, Config{}, false)
	old := mustDialTLS(t, ts, false)
	cn := func(rc *rawConn) string {
		return rc.c.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := cn(old); got != "localhost" {
		t.Fatalf("first certificate CN %q", got)
	}
	cert, key := testcert.Issue(t, ts.files, "server2", pkix.Name{CommonName: "reloaded"}, true)
	if err := copyFile(cert, ts.files.ServerCert); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(key, ts.files.ServerKey); err != nil {
		t.Fatal(err)
	}
	if err := ts.src.Reload(); err != nil {
		t.Fatal(err)
	}
	fresh := mustDialTLS(t, ts, false)
	if got := cn(fresh); got != "reloaded" {
		t.Fatalf("after reload CN %q", got)
	}
	produceOK(t, old, "reload", "old conn")
	produceOK(t, fresh, "reload", "new conn")
}

// TLS below 1.2 is refused.
func TestTLSRefusesOldVersions(t *testing.T) {
	t.Parallel()
	ts := newTLSServer(t, Config{}, false)
	cfg := ts.clientConfig(t, false)
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	c, err := tls.Dial("tcp", ts.tl, cfg)
	if err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
	mustDialTLS(t, ts, false)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// Large requests over TLS, pipelined in one write so reads span frame
// boundaries: the inbound buffer is sized per frame from a shared pool
// (reserve) and reused; each produce lands whole, in order, with its
// batch checksum intact (the gateway verifies it), and a small request
// between large ones is not lost.
func TestTLSLargePipelinedRequests(t *testing.T) {
	t.Parallel()
	ts := newTLSServer(t, Config{}, false)
	rc := mustDialTLS(t, ts, false)
	var all []byte
	var corrs []int32
	sizes := []int{700 << 10, 10, 900 << 10, 300 << 10, 900 << 10}
	for i, n := range sizes {
		b, corr := rc.frame(produceReq("tls-large", -1, strings.Repeat(string(rune('a'+i)), n)))
		all, corrs = append(all, b...), append(corrs, corr)
	}
	rc.write(all)
	for i, want := range corrs {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if got := rc.readResp(resp); got != want {
			t.Fatalf("reply %d, want %d", got, want)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(i) {
			t.Fatalf("produce %d (%d bytes): %v at offset %d", i, sizes[i], kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
		}
	}
	// The connection still serves after the pooled buffer went back.
	produceOK(t, rc, "tls-large", "after")
}
