package iggy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
)

// selfSigned makes a certificate for 127.0.0.1 and returns the server
// config and the PEM of the certificate (its own CA).
func selfSigned(t *testing.T) (*tls.Config, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "iggytest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestTLS(t *testing.T) {
	t.Parallel()
	srvCfg, caPEM := selfSigned(t)
	srv, err := iggytest.Start(newEmbedded(t), iggytest.Options{TLS: srvCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	opts := testOptions(srv.Addr())
	opts.TLS, opts.TLSCAFile = true, ca
	st, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTopic(ctx, "kafka", "tls", 1); err != nil {
		t.Fatal(err)
	}
	if base, err := st.Append(ctx, "kafka", "tls", 0, testBatch(t, "x", 0, 3)); err != nil || base != 0 {
		t.Fatalf("append over tls: %d %v", base, err)
	}
	st.Close()

	opts.TLSServerName = "localhost"
	if st, err := Open(ctx, opts); err != nil {
		t.Fatalf("server name localhost: %v", err)
	} else {
		st.Close()
	}

	noCA := testOptions(srv.Addr())
	noCA.TLS = true
	if _, err := Open(ctx, noCA); err == nil {
		t.Fatal("a self-signed server was trusted without its CA")
	}
	plain := testOptions(srv.Addr())
	plain.CallTimeout = 300 * time.Millisecond
	if _, err := Open(ctx, plain); err == nil {
		t.Fatal("plain TCP against a TLS server succeeded")
	}
}
