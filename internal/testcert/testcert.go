// Package testcert makes a throwaway CA, a server certificate for
// 127.0.0.1/localhost and client certificates, as PEM files, for tests of
// the TLS listeners. Test code only; nothing here is fit for production
// keys.
package testcert

import (
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
)

// Files are the paths of one generated set.
type Files struct {
	Dir                   string
	CA                    string // CA certificate (PEM): the clients' truststore
	ServerCert, ServerKey string
	ClientCert, ClientKey string // subject ClientSubject, signed by the CA
	CAKey                 *ecdsa.PrivateKey
	CACert                *x509.Certificate
}

// ClientSubject is the subject of the client certificate as Go (and
// Kafka's default principal builder) prints it.
const ClientSubject = "CN=kafka-client,O=iggy-kafka-e2e"

// Write makes a set under t.TempDir() with the server certificate's
// common name serverCN.
func Write(t testing.TB, serverCN string) Files {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "iggy-kafka test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	f := Files{Dir: dir, CA: filepath.Join(dir, "ca.pem"), CAKey: caKey, CACert: caCert}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	f.ServerCert, f.ServerKey = Issue(t, f, "server-"+serverCN, pkix.Name{CommonName: serverCN}, true)
	f.ClientCert, f.ClientKey = Issue(t, f, "client",
		pkix.Name{CommonName: "kafka-client", Organization: []string{"iggy-kafka-e2e"}}, false)
	return f
}

// Issue signs a new certificate for subject with f's CA and writes it and
// its key as NAME.pem and NAME-key.pem. A server certificate names
// 127.0.0.1, ::1 and localhost.
func Issue(t testing.TB, f Files, name string, subject pkix.Name, server bool) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.CACert, &key.PublicKey, f.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(f.Dir, name+".pem")
	keyFile = filepath.Join(f.Dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// ClientConfig is a TLS client configuration trusting f's CA; with
// clientCert it presents f's client certificate.
func ClientConfig(t testing.TB, f Files, clientCert bool) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if clientCert {
		c, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
