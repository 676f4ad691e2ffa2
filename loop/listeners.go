package loop

// Listeners, the Kafka way: each has a name, a security protocol
// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), a bind address and the
// address its clients are told the broker is at. PLAINTEXT and
// SASL_PLAINTEXT listeners are served by gnet (one engine for all of them,
// gnet.Rotate); SSL and SASL_SSL listeners by tlsconn.go, whose
// connections feed the same frame path.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/iggy-kafka/gateway/handlers"
)

// Security protocols, as Kafka spells them.
const (
	ProtoPlaintext     = "PLAINTEXT"
	ProtoSSL           = "SSL"
	ProtoSaslPlaintext = "SASL_PLAINTEXT"
	ProtoSaslSSL       = "SASL_SSL"
)

// Listener is one address the gateway serves.
type Listener struct {
	Name     string // Kafka listener name, e.g. PLAINTEXT or INTERNAL
	Protocol string // one of the Proto* constants
	Addr     string // host:port to bind (port 0 picks one: single gnet listener or TLS listeners only)
	// AdvertisedHost/Port are what Metadata and FindCoordinator tell the
	// clients of this listener. Port 0: the port the listener bound, set
	// before it serves its first connection.
	AdvertisedHost string
	AdvertisedPort int32
	// TLS returns the configuration for the next handshake (SSL and
	// SASL_SSL; required there). Called once per accepted connection on
	// the accept goroutine, so a reload takes effect for new handshakes.
	TLS func() *tls.Config
}

// IsTLS reports whether the protocol runs over TLS.
func IsTLS(proto string) bool { return proto == ProtoSSL || proto == ProtoSaslSSL }

// IsSasl reports whether the protocol requires a SASL login.
func IsSasl(proto string) bool { return proto == ProtoSaslPlaintext || proto == ProtoSaslSSL }

// listenerState is a Listener as the server runs it.
type listenerState struct {
	Listener
	sasl, tls bool
	port      int // configured bind port
	adv       *handlers.Endpoint
	ln        net.Listener // TLS listeners: the Go listener
	bound     string       // bound host:port, after Start
}

// resolveListeners checks cfg.Listeners (or builds the one default
// listener) against the gateway's SASL configuration. NewServer only.
func (s *Server) resolveListeners() error {
	ls := s.cfg.Listeners
	if len(ls) == 0 {
		proto := ProtoPlaintext
		if s.g.Cfg.Sasl != nil {
			proto = ProtoSaslPlaintext
		}
		// The default listener advertises handlers.Config's address
		// (Call.Advertised stays nil): a gateway configured without
		// listeners is told where it is by that config alone.
		s.lns = []*listenerState{{Listener: Listener{Name: proto, Protocol: proto, Addr: s.cfg.Addr},
			sasl: proto == ProtoSaslPlaintext}}
		s.gnetLns = s.lns
		return nil
	}
	seenName := map[string]bool{}
	seenPort := map[int]bool{}
	for i := range ls {
		l := ls[i]
		switch l.Protocol {
		case ProtoPlaintext, ProtoSSL, ProtoSaslPlaintext, ProtoSaslSSL:
		default:
			return fmt.Errorf("listener %s: unknown security protocol %q", l.Name, l.Protocol)
		}
		if seenName[l.Name] {
			return fmt.Errorf("listener %s is given twice", l.Name)
		}
		seenName[l.Name] = true
		_, p, err := net.SplitHostPort(l.Addr)
		if err != nil {
			return fmt.Errorf("listener %s: %v", l.Name, err)
		}
		port, err := strconv.Atoi(p)
		if err != nil || port < 0 || port > 65535 {
			return fmt.Errorf("listener %s: bad port %q", l.Name, p)
		}
		if port != 0 && seenPort[port] {
			return fmt.Errorf("listener %s: port %d is used by another listener", l.Name, port)
		}
		seenPort[port] = true
		st := &listenerState{Listener: l, sasl: IsSasl(l.Protocol), tls: IsTLS(l.Protocol), port: port,
			adv: &handlers.Endpoint{Host: l.AdvertisedHost, Port: l.AdvertisedPort}}
		if st.sasl && s.g.Cfg.Sasl == nil {
			return fmt.Errorf("listener %s is %s but SASL is not configured", l.Name, l.Protocol)
		}
		if st.tls && l.TLS == nil {
			return fmt.Errorf("listener %s is %s but has no TLS configuration", l.Name, l.Protocol)
		}
		s.lns = append(s.lns, st)
		if !st.tls {
			s.gnetLns = append(s.gnetLns, st)
		}
	}
	if len(s.gnetLns) > 1 {
		for _, l := range s.gnetLns {
			if l.port == 0 {
				// A gnet connection is matched to its listener by local
				// port; gnet does not say which port 0 became.
				return fmt.Errorf("listener %s: port 0 needs it to be the only PLAINTEXT/SASL_PLAINTEXT listener", l.Name)
			}
		}
	}
	if len(s.lns) == 0 {
		return errors.New("no listener")
	}
	return nil
}

// advertiseBound makes a listener given no advertised port advertise the
// port it bound. It runs once the listener is bound and before it serves
// (OnBoot, listenTLS), so no connection sees the endpoint change.
func (l *listenerState) advertiseBound() {
	if l.adv == nil || l.adv.Port != 0 {
		return
	}
	if _, p, err := net.SplitHostPort(l.bound); err == nil {
		port, _ := strconv.Atoi(p)
		l.adv.Port = int32(port)
	}
}

// gnetListener is the listener a gnet connection came in on. Loop only
// (OnOpen).
func (s *Server) gnetListener(localPort int) *listenerState {
	if len(s.gnetLns) == 1 {
		return s.gnetLns[0]
	}
	for _, l := range s.gnetLns {
		if l.port == localPort {
			return l
		}
	}
	return nil
}

// ListenerAddrs maps each listener name to its bound host:port, valid
// after Start. Any goroutine.
func (s *Server) ListenerAddrs() map[string]string {
	out := make(map[string]string, len(s.lns))
	for _, l := range s.lns {
		out[l.Name] = l.bound
	}
	return out
}

// Advertised maps each listener name to the endpoint its clients are
// told, final after Start (the default listener's is handlers.Config's).
// Any goroutine.
func (s *Server) Advertised() map[string]handlers.Endpoint {
	out := make(map[string]handlers.Endpoint, len(s.lns))
	for _, l := range s.lns {
		if l.adv != nil {
			out[l.Name] = *l.adv
		} else {
			out[l.Name] = handlers.Endpoint{Host: s.g.Cfg.AdvertisedHost, Port: s.g.Cfg.AdvertisedPort}
		}
	}
	return out
}
