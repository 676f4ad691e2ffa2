package gateway

// The loop's listeners: the configured ones, or the one default listener,
// with their TLS configuration and advertised host filled. docs/SECURITY.md
// describes the rules the command checks before.

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"

	"github.com/iggy-kafka/gateway/internal/tlsfiles"
	"github.com/iggy-kafka/gateway/loop"
)

// TLSFiles are the PEM files of the SSL and SASL_SSL listeners that bring
// no TLS configuration of their own; Running.TLS re-reads them.
type TLSFiles struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, makes every TLS client present a
	// certificate these CAs signed (mTLS); its subject is the principal.
	ClientCAFile string
}

// defaultListenAddr is loop.Config's default Addr.
const defaultListenAddr = "127.0.0.1:9092"

// buildListeners returns the loop's listeners and the TLS source (nil
// without TLS files). A listener's advertised host defaults to its bind
// host and its advertised port to its bind port; a listener on port 0
// keeps advertised port 0, which the loop replaces with the port it bound
// before serving. Cluster mode registers the advertised endpoints before
// anything binds, so there port 0 needs an advertised port.
func buildListeners(cfg Config, sasl bool, log *slog.Logger) ([]loop.Listener, *tlsfiles.Source, error) {
	var src *tlsfiles.Source
	if f := cfg.TLS; f.CertFile != "" {
		var err error
		if src, err = tlsfiles.Load(f.CertFile, f.KeyFile, f.ClientCAFile); err != nil {
			log.Error("TLS", "err", err)
			return nil, nil, err
		}
	}
	ls := slices.Clone(cfg.Loop.Listeners)
	if len(ls) == 0 {
		proto, addr := loop.ProtoPlaintext, cfg.Loop.Addr
		if sasl {
			proto = loop.ProtoSaslPlaintext
		}
		if addr == "" {
			addr = defaultListenAddr
		}
		ls = []loop.Listener{{Name: proto, Protocol: proto, Addr: addr,
			AdvertisedHost: cfg.Handlers.AdvertisedHost, AdvertisedPort: cfg.Handlers.AdvertisedPort}}
	}
	for i := range ls {
		l := &ls[i]
		if err := advertise(l, len(cfg.Cluster.Endpoints) > 0); err != nil {
			log.Error("listeners", "err", err)
			return nil, nil, err
		}
		if loop.IsTLS(l.Protocol) && l.TLS == nil && src != nil {
			l.TLS = src.Config
		}
		authenticates := loop.IsSasl(l.Protocol) || l.Protocol == loop.ProtoSSL && cfg.TLS.ClientCAFile != ""
		if host, _, _ := net.SplitHostPort(l.Addr); !authenticates && !IsLoopbackHost(host) {
			log.Warn("ANONYMOUS ACCESS: this listener does not authenticate its clients and is reachable beyond this machine (--allow-anonymous): anyone who reaches it may read, write, create and delete every topic",
				"listener", l.Name, "protocol", l.Protocol, "addr", l.Addr)
		}
	}
	return ls, src, nil
}

// advertise fills l's advertised host and port from its bind address
// where they are not given.
func advertise(l *loop.Listener, cluster bool) error {
	host, p, err := net.SplitHostPort(l.Addr)
	if err != nil {
		return fmt.Errorf("listener %s: %v", l.Name, err)
	}
	if l.AdvertisedHost == "" {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			return fmt.Errorf("listener %s binds every interface (%s): give it an advertised host", l.Name, l.Addr)
		}
		l.AdvertisedHost = host
	}
	if l.AdvertisedPort == 0 {
		port, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("listener %s: bad port %q", l.Name, p)
		}
		if port == 0 && cluster {
			return errors.New("listener " + l.Name + " binds port 0 with no advertised port: cluster mode registers the advertised address in etcd before the listener binds, so give it one")
		}
		l.AdvertisedPort = int32(port)
	}
	return nil
}

// IsLoopbackHost reports whether host is a loopback address or localhost:
// a listener there is out of reach of other machines.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
