package e2e

// TLS listeners (SSL, SASL_SSL) with real clients: kcat (librdkafka),
// franz-go and the Java console tools, server and client certificates
// made by the test (internal/testcert). docs/SECURITY.md.

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/testcert"
	"github.com/iggy-kafka/gateway/internal/tlsfiles"
	"github.com/iggy-kafka/gateway/loop"
)

// tlsSetup is where withTLS put the TLS listeners of a gateway.
type tlsSetup struct {
	files        testcert.Files
	ssl, saslSSL string // host:port of the SSL and SASL_SSL listeners
}

// withTLS gives the gateway an SSL listener and, when SASL is configured
// (withSasl must come first), a SASL_SSL one, beside its PLAINTEXT
// listener; with mtls every TLS client must present a certificate.
func withTLS(t testing.TB, mtls bool, ts *tlsSetup) gwOption {
	ts.files = testcert.Write(t, "localhost")
	ca := ""
	if mtls {
		ca = ts.files.CA
	}
	src, err := tlsfiles.Load(ts.files.ServerCert, ts.files.ServerKey, ca)
	if err != nil {
		t.Fatal(err)
	}
	return func(h *handlers.Config, lc *loop.Config) {
		_, p, _ := net.SplitHostPort(lc.Addr)
		port, _ := strconv.Atoi(p)
		ls := []loop.Listener{{Name: "PLAINTEXT", Protocol: loop.ProtoPlaintext, Addr: lc.Addr,
			AdvertisedHost: "127.0.0.1", AdvertisedPort: int32(port)}}
		add := func(proto string) string {
			port := freePort(t)
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			ls = append(ls, loop.Listener{Name: proto, Protocol: proto, Addr: addr,
				AdvertisedHost: "127.0.0.1", AdvertisedPort: int32(port), TLS: src.Config})
			return addr
		}
		ts.ssl = add(loop.ProtoSSL)
		if h.Sasl != nil {
			ts.saslSSL = add(loop.ProtoSaslSSL)
		}
		lc.Listeners = ls
	}
}

// kcatTLS is kcat's -b and -X options for the SSL or SASL_SSL listener.
func kcatTLS(ts *tlsSetup, mech string, clientCert bool) []string {
	args := []string{"-X", "ssl.ca.location=" + ts.files.CA}
	if clientCert {
		args = append(args, "-X", "ssl.certificate.location="+ts.files.ClientCert,
			"-X", "ssl.key.location="+ts.files.ClientKey)
	}
	if mech == "" {
		return append([]string{"-b", ts.ssl, "-X", "security.protocol=ssl"}, args...)
	}
	return append([]string{"-b", ts.saslSSL, "-X", "security.protocol=sasl_ssl", "-X", "sasl.mechanisms=" + mech,
		"-X", "sasl.username=" + saslUser, "-X", "sasl.password=" + saslPass}, args...)
}

// kcat over security.protocol=ssl and sasl_ssl (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512): every request after bootstrap goes to the address
// Metadata advertised for the TLS listener, so a wrong answer fails here.
func TestTLSKcat(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	var ts tlsSetup
	startGateway(t, withSasl(t), withTLS(t, false, &ts))
	t.Run("ssl", func(t *testing.T) {
		m := kcatList(t, kcat, ts.ssl, kcatTLS(&ts, "", false)[2:]...)
		if len(m.Brokers) != 1 || m.Brokers[0].Name != ts.ssl {
			t.Fatalf("kcat sees brokers %+v, want %s", m.Brokers, ts.ssl)
		}
		kcatRoundTrip(t, kcat, "tls-kcat-ssl", kcatTLS(&ts, "", false))
	})
	for _, mech := range allMechs {
		t.Run("sasl_ssl-"+mech, func(t *testing.T) {
			kcatRoundTrip(t, kcat, "tls-kcat-"+strings.ToLower(mech), kcatTLS(&ts, mech, false))
		})
	}
	t.Run("wrong ca", func(t *testing.T) {
		other := testcert.Write(t, "localhost")
		kcatListRefused(t, kcat, "trusting another CA", "certificate verify failed",
			"-b", ts.ssl, "-X", "security.protocol=ssl", "-X", "ssl.ca.location="+other.CA)
	})
}

// mTLS: kcat and franz-go with a client certificate are served on the SSL
// listener; without one they are refused.
func TestTLSMutual(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	var ts tlsSetup
	gw := startGateway(t, withTLS(t, true, &ts))
	kcatRoundTrip(t, kcat, "mtls-kcat", kcatTLS(&ts, "", true))
	kcatListRefused(t, kcat, "without a client certificate", "", kcatTLS(&ts, "", false)...)

	cl := clientWithTopic(t, ts.ssl, "mtls-kgo", 2, kgo.DialTLSConfig(kgoTLS(t, &ts, true)))
	want := produceAll(t, cl, testRecords("mtls-kgo", 20))
	got := consumeN(t, ts.ssl, "mtls-kgo", len(want), consumeWith(kgo.DialTLSConfig(kgoTLS(t, &ts, true))))
	sameRecs(t, want, got)

	notServed(t, ts.ssl, "franz-go without a client certificate was served", kgo.DialTLSConfig(kgoTLS(t, &ts, false)))
	if !strings.Contains(gw.Log.String(), "tls_handshake") {
		t.Errorf("no tls_handshake close in the log")
	}
}

func kgoTLS(t testing.TB, ts *tlsSetup, clientCert bool) *tls.Config {
	cfg := testcert.ClientConfig(t, ts.files, clientCert)
	cfg.ServerName = "localhost"
	return cfg
}

// franz-go over TLS (kgo.DialTLSConfig): SSL, and SASL_SSL with sasl/plain
// and sasl/scram.
func TestTLSKgo(t *testing.T) {
	t.Parallel()
	var ts tlsSetup
	startGateway(t, withSasl(t), withTLS(t, false, &ts))
	cases := []struct {
		name string
		addr string
		mech sasl.Mechanism
	}{
		{"ssl", ts.ssl, nil},
		{"sasl_ssl-plain", ts.saslSSL, kgoMech(handlers.MechPlain, saslUser, saslPass)},
		{"sasl_ssl-scram-sha-256", ts.saslSSL, kgoMech(handlers.MechScramSHA256, saslUser, saslPass)},
		{"sasl_ssl-scram-sha-512", ts.saslSSL, kgoMech(handlers.MechScramSHA512, saslUser, saslPass)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := []kgo.Opt{kgo.DialTLSConfig(kgoTLS(t, &ts, false))}
			if c.mech != nil {
				opts = append(opts, kgo.SASL(c.mech))
			}
			topic := "tls-kgo-" + c.name
			cl := clientWithTopic(t, c.addr, topic, 3, opts...)
			want := produceAll(t, cl, testRecords(topic, 100))
			sameRecs(t, want, consumeN(t, c.addr, topic, len(want), consumeWith(opts...)))
		})
	}
	// A SASL_SSL client that does not log in is served nothing.
	notServed(t, ts.saslSSL, "Metadata without logging in was answered on SASL_SSL", kgo.DialTLSConfig(kgoTLS(t, &ts, false)))
}

// The Java console producer and consumer over SSL and SASL_SSL
// (SCRAM-SHA-256), trusting the test CA through a PEM truststore
// (ssl.truststore.type=PEM, KIP-651), hostname verification on.
func TestTLSJava(t *testing.T) {
	t.Parallel()
	needJava(t)
	var ts tlsSetup
	startGateway(t, withSasl(t), withTLS(t, false, &ts))
	trust := fmt.Sprintf("ssl.truststore.type=PEM\nssl.truststore.location=%s\n", ts.files.CA)
	cases := []struct{ name, addr, props string }{
		{"SSL", ts.ssl, "security.protocol=SSL\n" + trust},
		{"SASL_SSL", ts.saslSSL, "security.protocol=SASL_SSL\n" + trust + "sasl.mechanism=SCRAM-SHA-256\n" +
			jaasConfig(scramLogin, saslUser, saslPass)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			javaConsoleRoundTrip(t, c.addr, "tls-java-"+strings.ToLower(c.name), "tls", c.props)
		})
	}
}

// The binary: --listeners with an SSL listener from --tls-cert-file/
// --tls-key-file serves kcat, and SIGHUP makes new handshakes use the
// rewritten files while an open connection keeps working.
func TestTLSBinaryListenersAndSIGHUP(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	files := testcert.Write(t, "localhost")
	plainPort, sslPort := freePort(t), freePort(t)
	plain := net.JoinHostPort("127.0.0.1", strconv.Itoa(plainPort))
	ssl := net.JoinHostPort("127.0.0.1", strconv.Itoa(sslPort))
	p := spawnListeners(t, plain,
		"--listeners=PLAINTEXT://"+plain+",SSL://"+ssl,
		"--tls-cert-file="+files.ServerCert, "--tls-key-file="+files.ServerKey)
	ts := tlsSetup{files: files, ssl: ssl}
	kcatRoundTrip(t, kcat, "tls-binary", kcatTLS(&ts, "", false))

	cn := func() (string, error) {
		c, err := tls.Dial("tcp", ssl, kgoTLS(t, &ts, false))
		if err != nil {
			return "", err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
	}
	open := clientWithTopic(t, ssl, "tls-reload", 1, kgo.DialTLSConfig(kgoTLS(t, &ts, false)))
	produceAll(t, open, testRecords("tls-reload", 5))

	cert, key := testcert.Issue(t, files, "server2", pkix.Name{CommonName: "reloaded"}, true)
	for from, to := range map[string]string{cert: files.ServerCert, key: files.ServerKey} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := cn(); err != nil || got != "localhost" {
		t.Fatalf("before SIGHUP: CN %q, %v", got, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	await.Until(t, 10*time.Second, func() error {
		got, err := cn()
		if err != nil || got != "reloaded" {
			return fmt.Errorf("CN %q, %v", got, err)
		}
		return nil
	})
	produceAll(t, open, testRecords("tls-reload", 5))
	if !strings.Contains(p.Log(), "TLS files reloaded") {
		t.Errorf("no reload line in the log")
	}
	p.Stop()
}
