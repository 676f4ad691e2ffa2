// Package tlsfiles loads the gateway's TLS listener configuration from PEM
// files (certificate chain, private key, optional client CAs) and reloads
// it on demand (SIGHUP in cmd): handshakes that start after a reload use
// the new files, connections already open keep theirs.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Source is a reloadable TLS server configuration. Any goroutine.
type Source struct {
	certFile, keyFile, clientCAFile string
	cur                             atomic.Pointer[tls.Config]
}

// Load reads the files once; clientCAFile "" means no client certificates
// are asked for.
func Load(certFile, keyFile, clientCAFile string) (*Source, error) {
	s := &Source{certFile: certFile, keyFile: keyFile, clientCAFile: clientCAFile}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again. On an error the configuration in use
// stays as it was.
func (s *Source) Reload() error {
	cfg, err := build(s.certFile, s.keyFile, s.clientCAFile)
	if err != nil {
		return err
	}
	s.cur.Store(cfg)
	return nil
}

// Config is the configuration for the next handshake; callers must not
// change it.
func (s *Source) Config() *tls.Config { return s.cur.Load() }

// MutualTLS reports whether client certificates are required.
func (s *Source) MutualTLS() bool { return s.clientCAFile != "" }

func build(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: certificate %s / key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
	}
	if clientCAFile != "" {
		pem, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("tls: client CA file " + clientCAFile + " holds no PEM certificate")
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
