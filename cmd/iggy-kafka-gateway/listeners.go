package main

// Listener settings: --listeners, --advertised-listeners,
// --listener-security-protocol-map, the TLS files and --allow-anonymous,
// resolved into loop.Listeners. docs/SECURITY.md describes the rules.

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/loop"
)

// listenersConfig is the listener part of config (the TLS files are
// gateway.Config's).
type listenersConfig struct {
	Listeners, Advertised, ProtocolMap string // as given
	AllowAnonymous                     bool
	// Resolved: one entry per listener, in the order given.
	Resolved []listenerSpec
}

// listenerSpec is one resolved listener.
type listenerSpec struct {
	Name, Protocol, Addr string
	AdvHost              string
	AdvPort              int
}

func listenerOptions(c *config) []option {
	return []option{
		{flag: "listeners", defText: "one listener on --bind-addr",
			usage: "Kafka-style listeners NAME://host:port, comma-separated (e.g. PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9093); replaces --bind-addr; docs/SECURITY.md",
			set:   given(&c.listenersSet, text(&c.Listen.Listeners))},
		{flag: "advertised-listeners", defText: "each listener's bind address",
			usage: "NAME://host:port per listener, what Metadata tells the clients of that listener; replaces --advertised-host/--advertised-port",
			set:   text(&c.Listen.Advertised)},
		{flag: "listener-security-protocol-map", defText: "names are protocols",
			usage: "NAME:PROTOCOL pairs for listener names that are not a protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), e.g. INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL",
			set:   text(&c.Listen.ProtocolMap)},
		{flag: "tls-cert-file", defText: "none",
			usage: "PEM certificate chain of the SSL/SASL_SSL listeners; re-read on SIGHUP",
			set:   text(&c.TLS.CertFile)},
		{flag: "tls-key-file", defText: "none",
			usage: "PEM private key of --tls-cert-file; re-read on SIGHUP",
			set:   text(&c.TLS.KeyFile)},
		{flag: "tls-client-ca-file", defText: "none",
			usage: "PEM CAs for client certificates: with it every TLS client must present a certificate they signed (mTLS), whose subject is the principal; re-read on SIGHUP",
			set:   text(&c.TLS.ClientCAFile)},
		{flag: "allow-anonymous", def: "false",
			usage: "allow a listener without authentication (PLAINTEXT, or SSL without --tls-client-ca-file) on a non-loopback address; without it the gateway refuses to start",
			set:   boolVal(to(&c.Listen.AllowAnonymous))},
	}
}

// protocols are the security protocols, as Kafka spells them.
var protocols = []string{loop.ProtoPlaintext, loop.ProtoSSL, loop.ProtoSaslPlaintext, loop.ProtoSaslSSL}

func isProtocol(p string) bool {
	for _, q := range protocols {
		if p == q {
			return true
		}
	}
	return false
}

// parseEndpoints parses NAME://host:port,...
func parseEndpoints(flagName, v string) ([]listenerSpec, error) {
	var out []listenerSpec
	for _, part := range listItems(v, ",") {
		name, hp, ok := strings.Cut(part, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("--%s %q: want NAME://host:port", flagName, part)
		}
		host, p, port, err := splitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %v", flagName, part, err)
		}
		out = append(out, listenerSpec{Name: strings.ToUpper(name), Addr: net.JoinHostPort(host, p),
			AdvHost: host, AdvPort: port})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s is empty", flagName)
	}
	return out, nil
}

// resolveListeners builds c.Listen.Resolved from --listeners (or from
// --bind-addr/--advertised-*, the single default listener) and checks the
// TLS, SASL and anonymous-access rules.
func (c *config) resolveListeners() error {
	l := &c.Listen
	if !c.listenersSet {
		if l.Advertised != "" || l.ProtocolMap != "" {
			return errors.New("--advertised-listeners and --listener-security-protocol-map need --listeners")
		}
		proto := loop.ProtoPlaintext
		if c.Sasl.Mechanisms != "" {
			proto = loop.ProtoSaslPlaintext
		}
		l.Resolved = []listenerSpec{{Name: proto, Protocol: proto, Addr: c.BindAddr,
			AdvHost: c.AdvertisedHost, AdvPort: c.AdvertisedPort}}
	} else {
		if len(c.legacyAddrFlags) > 0 {
			return fmt.Errorf("%s cannot be combined with --listeners (use --advertised-listeners)",
				strings.Join(c.legacyAddrFlags, ", "))
		}
		ls, err := parseEndpoints("listeners", l.Listeners)
		if err != nil {
			return err
		}
		pmap := map[string]string{}
		if l.ProtocolMap != "" {
			for _, pair := range strings.Split(l.ProtocolMap, ",") {
				n, p, ok := strings.Cut(strings.TrimSpace(pair), ":")
				n, p = strings.ToUpper(strings.TrimSpace(n)), strings.ToUpper(strings.TrimSpace(p))
				if !ok || n == "" || !isProtocol(p) {
					return fmt.Errorf("--listener-security-protocol-map %q: want NAME:PROTOCOL with PROTOCOL one of %s",
						pair, strings.Join(protocols, ", "))
				}
				pmap[n] = p
			}
		}
		seen := map[string]int{}
		for i := range ls {
			s := &ls[i]
			if _, dup := seen[s.Name]; dup {
				return fmt.Errorf("--listeners: listener %s is given twice", s.Name)
			}
			seen[s.Name] = i
			switch p, ok := pmap[s.Name]; {
			case ok:
				s.Protocol = p
			case isProtocol(s.Name):
				s.Protocol = s.Name
			default:
				return fmt.Errorf("--listeners: listener %s is not a security protocol (%s); map it with --listener-security-protocol-map",
					s.Name, strings.Join(protocols, ", "))
			}
			s.AdvHost, s.AdvPort = "", 0
		}
		if l.Advertised != "" {
			adv, err := parseEndpoints("advertised-listeners", l.Advertised)
			if err != nil {
				return err
			}
			for _, a := range adv {
				i, ok := seen[a.Name]
				if !ok {
					return fmt.Errorf("--advertised-listeners names %s, which --listeners does not", a.Name)
				}
				if a.AdvPort == 0 {
					return fmt.Errorf("--advertised-listeners %s: port 0 cannot be advertised", a.Name)
				}
				ls[i].AdvHost, ls[i].AdvPort = a.AdvHost, a.AdvPort
			}
		}
		for i := range ls {
			s := &ls[i]
			host, _, port, _ := splitHostPort(s.Addr)
			if s.AdvHost == "" {
				if bindsEveryInterface(host) {
					return fmt.Errorf("listener %s binds every interface (%s): give its address in --advertised-listeners", s.Name, s.Addr)
				}
				if port == 0 {
					return fmt.Errorf("listener %s picks a random port: give its address in --advertised-listeners", s.Name)
				}
				s.AdvHost, s.AdvPort = host, port
			}
		}
		l.Resolved = ls
	}
	return c.checkListenerSecurity()
}

// checkListenerSecurity applies the TLS, SASL and anonymous-access rules
// to the resolved listeners.
func (c *config) checkListenerSecurity() error {
	l := &c.Listen
	anyTLS, anySasl := false, false
	for _, s := range l.Resolved {
		anyTLS = anyTLS || loop.IsTLS(s.Protocol)
		anySasl = anySasl || loop.IsSasl(s.Protocol)
	}
	if anyTLS && (c.TLS.CertFile == "" || c.TLS.KeyFile == "") {
		return errors.New("an SSL/SASL_SSL listener needs --tls-cert-file and --tls-key-file")
	}
	if !anyTLS && c.TLS != (gateway.TLSFiles{}) {
		return errors.New("--tls-* files are set but no listener is SSL or SASL_SSL")
	}
	if anySasl && c.Sasl.Mechanisms == "" {
		return errors.New("a SASL_PLAINTEXT/SASL_SSL listener needs --sasl-mechanisms")
	}
	if !anySasl && c.Sasl.Mechanisms != "" {
		return errors.New("--sasl-mechanisms is set but no listener is SASL_PLAINTEXT or SASL_SSL")
	}
	if l.AllowAnonymous {
		return nil
	}
	for _, s := range l.Resolved {
		if c.authenticates(s.Protocol) {
			continue
		}
		host, _, _ := net.SplitHostPort(s.Addr)
		if !gateway.IsLoopbackHost(host) {
			return fmt.Errorf("listener %s (%s on %s) lets anyone who reaches it do anything: add authentication (SASL_SSL, SASL_PLAINTEXT, SSL with --tls-client-ca-file), bind a loopback address, or pass --allow-anonymous",
				s.Name, s.Protocol, s.Addr)
		}
	}
	return nil
}

// authenticates reports whether a listener of proto identifies its clients.
func (c *config) authenticates(proto string) bool {
	return loop.IsSasl(proto) || proto == loop.ProtoSSL && c.TLS.ClientCAFile != ""
}

// loopListeners are the resolved listeners as the gateway takes them;
// SSL listeners get their TLS configuration from the TLS files there.
func (l listenersConfig) loopListeners() []loop.Listener {
	out := make([]loop.Listener, 0, len(l.Resolved))
	for _, s := range l.Resolved {
		out = append(out, loop.Listener{Name: s.Name, Protocol: s.Protocol, Addr: s.Addr,
			AdvertisedHost: s.AdvHost, AdvertisedPort: int32(s.AdvPort)})
	}
	return out
}
