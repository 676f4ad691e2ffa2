// Package testcert makes a throwaway CA, a server certificate for
// 127.0.0.1/localhost and client certificates, as PEM files, for tests of
// the TLS listeners and for the bench harness's TLS target. Nothing here
// is fit for production keys.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
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
	f, err := Generate(t.TempDir(), serverCN)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Generate makes a set in dir (which must exist): a CA valid for a day,
// a server certificate with common name serverCN and a client
// certificate with subject ClientSubject.
func Generate(dir, serverCN string) (Files, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, err
	}
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
		return Files{}, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Files{}, err
	}
	f := Files{Dir: dir, CA: filepath.Join(dir, "ca.pem"), CAKey: caKey, CACert: caCert}
	if err := writePEM(f.CA, "CERTIFICATE", caDER); err != nil {
		return Files{}, err
	}
	if f.ServerCert, f.ServerKey, err = issue(f, "server-"+serverCN, pkix.Name{CommonName: serverCN}, true); err != nil {
		return Files{}, err
	}
	f.ClientCert, f.ClientKey, err = issue(f, "client",
		pkix.Name{CommonName: "kafka-client", Organization: []string{"iggy-kafka-e2e"}}, false)
	return f, err
}

// Issue signs a new certificate for subject with f's CA and writes it and
// its key as NAME.pem and NAME-key.pem. A server certificate names
// 127.0.0.1, ::1 and localhost.
func Issue(t testing.TB, f Files, name string, subject pkix.Name, server bool) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := issue(f, name, subject, server)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func issue(f Files, name string, subject pkix.Name, server bool) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return "", "", err
	}
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
		return "", "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile = filepath.Join(f.Dir, name+".pem")
	keyFile = filepath.Join(f.Dir, name+"-key.pem")
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	return certFile, keyFile, writePEM(keyFile, "PRIVATE KEY", keyDER)
}

// ClientConfig is a TLS client configuration trusting f's CA; with
// clientCert it presents f's client certificate.
func ClientConfig(t testing.TB, f Files, clientCert bool) *tls.Config {
	t.Helper()
	cfg, err := LoadClientConfig(f, clientCert)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// LoadClientConfig is ClientConfig for code without a testing.TB.
func LoadClientConfig(f Files, clientCert bool) (*tls.Config, error) {
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("testcert: no certificate in " + f.CA)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if clientCert {
		c, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
