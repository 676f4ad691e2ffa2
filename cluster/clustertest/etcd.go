// Package clustertest starts a real etcd server in the test process
// (go.etcd.io/etcd/server/v3/embed) for tests of the cluster mode.
package clustertest

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is one in-process etcd member on 127.0.0.1. Stop may run on any
// goroutine; the others on the test's.
type Etcd struct {
	// Endpoint is the client URL, http://127.0.0.1:port: a relay in front
	// of etcd's own, so Stop cuts every client off at once, as a crash
	// would (etcd's graceful shutdown takes seconds and may answer some
	// clients meanwhile).
	Endpoint string
	relay    *Proxy
	dir      string
	cu, pu   url.URL // etcd's client and peer URLs, kept across a restart

	mu sync.Mutex // guards e: a test may stop etcd in the background
	e  *embed.Etcd
}

// StartEtcd starts etcd with its data in a temporary directory; it stops
// when the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	et := &Etcd{dir: t.TempDir(),
		cu: url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(freePort(t))},
		pu: url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(freePort(t))},
	}
	if err := et.start(); err != nil {
		t.Fatalf("etcd: %v", err)
	}
	t.Cleanup(et.Stop)
	et.relay = et.Proxy(t)
	et.Endpoint = et.relay.Endpoint
	return et
}

// start runs the server on et's directory and URLs and waits until it
// serves.
func (et *Etcd) start() error {
	cfg := embed.NewConfig()
	cfg.Dir = et.dir
	cfg.LogLevel = "error"
	// Its shutdown logs "server closed" errors that are no failure.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{et.cu}, []url.URL{et.cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{et.pu}, []url.URL{et.pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return errNotReady
	}
	et.mu.Lock()
	et.e = e
	et.mu.Unlock()
	return nil
}

var errNotReady = errors.New("etcd did not become ready within 30s")

// Stop stops the server (idempotent): clients see it unreachable at once.
// Its data stays for Restart.
func (et *Etcd) Stop() {
	et.mu.Lock()
	defer et.mu.Unlock()
	if et.relay != nil {
		et.relay.Cut()
	}
	if et.e != nil {
		et.e.Close()
		et.e = nil
	}
}

// Restart starts a stopped server again on the same data directory and
// ports, so clients reconnect to the same endpoint and find their keys
// and leases (etcd renews every lease's TTL when it comes back as
// leader). A port another process took meanwhile is retried for a while.
func (et *Etcd) Restart(t testing.TB) {
	t.Helper()
	et.mu.Lock()
	running := et.e != nil
	et.mu.Unlock()
	if running {
		t.Fatal("clustertest: Restart of a running etcd")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := et.start()
		if err == nil {
			et.relay.Heal()
			return
		}
		if !strings.Contains(err.Error(), "address already in use") || time.Now().After(deadline) {
			t.Fatalf("etcd restart: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Proxy relays TCP to an etcd: a client given its Endpoint can be cut off
// from etcd (a network partition) while etcd and everyone else go on.
// Methods: any goroutine.
type Proxy struct {
	Endpoint string // client URL of the relay
	l        net.Listener
	target   string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// Proxy starts a relay to etcd's own client URL (not through Endpoint's
// relay); it stops when the test ends.
func (et *Etcd) Proxy(t testing.TB) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Endpoint: "http://" + l.Addr().String(), l: l, target: et.cu.Host, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.Cut()
	})
	return p
}

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.relay(c)
	}
}

// relay copies between one client connection and etcd until either
// side closes or Cut closes both.
func (p *Proxy) relay(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// Cut closes every relayed connection and refuses new ones until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal relays again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}
