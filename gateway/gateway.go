// Package gateway starts a whole gateway in this process: the backend
// under bridge.Guard, SASL and authorization, the listeners and their TLS
// files, cluster membership, the admin listeners and metrics, the
// handlers.Gateway and the loop.Server. The command, the bench harness and
// the e2e suite all start gateways with Start, so each runs one wiring.
//
// It sits above loop, handlers, bridge and cluster and below cmd and
// bench: nothing below it imports it (package loop's and handlers' own
// tests build their gateways from those packages directly).
package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/metrics"
	"github.com/iggy-kafka/gateway/internal/tlsfiles"
	"github.com/iggy-kafka/gateway/loop"
)

// iggyMaxMessageSize caps one Iggy message (payload + headers); it is the
// Iggy server's default message_bus.max_message_size, so data written here
// also fits a real server.
const iggyMaxMessageSize = 64 << 20

// Config is everything a gateway is built from. The command's flags fill
// it (docs/CONFIG.md); zero fields take the defaults of the packages they
// configure.
type Config struct {
	// Backend, when set, is served instead of opening Store: tests inject
	// wrapped or imitation backends. It goes under bridge.Guard as an
	// opened one does, and belongs to the gateway from Start on: Shutdown
	// closes it, and so does a Start that fails.
	Backend bridge.Backend
	// Store is the backend Start opens when Backend is nil. Its Kind also
	// picks the guard's deadline and Fetch's concurrency.
	Store StoreConfig
	// Handlers configures the Kafka handlers. Start sets Sasl (built from
	// Sasl unless already set) and Cluster; a zero MaxMessageSize is
	// Iggy's 64 MiB, a zero FetchConcurrency 8 on Iggy (each lookup is a
	// round trip) and one after another on the embedded store.
	// AdvertisedHost/Port are the default listener's (below); empty, the
	// first listener's.
	Handlers handlers.Config
	// Loop configures the event loop. Without Listeners it serves one
	// listener on Addr (SASL_PLAINTEXT when SASL is on, else PLAINTEXT)
	// advertising Handlers.AdvertisedHost/Port. A listener's advertised
	// host defaults to its bind host, its advertised port to the port it
	// bound (port 0 included). SSL listeners without TLS get TLS's files.
	// A nil Metrics is the admin listener's (MetricsAddr), or none.
	Loop loop.Config
	// TLS are the certificate files of the SSL and SASL_SSL listeners.
	TLS TLSFiles
	// Sasl turns SASL on when Handlers.Sasl is nil.
	Sasl SaslConfig
	// Cluster joins a cluster of gateways over etcd; zero: a one-node
	// cluster.
	Cluster ClusterConfig
	// MetricsAddr serves Prometheus /metrics and /healthz, PprofAddr
	// /debug/pprof/; "" turns each off, a host-less ":port" is loopback.
	MetricsAddr, PprofAddr string
	// PprofCmdline serves /debug/pprof/cmdline (the command's redacts its
	// secrets); nil: net/http/pprof's.
	PprofCmdline http.Handler
	Log          *slog.Logger // nil: slog.Default()
}

// Running is a started gateway. Its fields are set by Start and never
// replaced; read them from any goroutine.
type Running struct {
	// Listeners are the listeners serving, in the order configured.
	Listeners []Listener
	Handlers  *handlers.Gateway
	// Backend is the store every call goes through (Backend.Inner() is
	// the one opened or injected).
	Backend *bridge.Guarded
	Loop    *loop.Server
	// TLS re-reads the TLS files (Reload, on SIGHUP in the command); nil
	// without them.
	TLS *tlsfiles.Source

	log       *slog.Logger
	drain     time.Duration // Loop.DrainTimeout as configured
	node      *cluster.Node
	stopAdmin func()
	shutdown  sync.Once
	err       error
}

// Listener is one listener as it serves.
type Listener struct {
	Name, Protocol string
	Addr           string            // the bound host:port
	Advertised     handlers.Endpoint // what its clients are told
}

// Addr is the bound host:port of the first listener.
func (r *Running) Addr() string { return r.Listeners[0].Addr }

// Start opens the backend (or takes cfg.Backend), builds the gateway and
// serves until Shutdown. Every failure is logged where it happens (what to
// check, as the command has always told its operator) and returned, with
// whatever was started stopped again. ctx bounds the start only (the Iggy
// login, joining the cluster). Any goroutine.
func Start(ctx context.Context, cfg Config) (*Running, error) {
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	st := cfg.Backend
	if st == nil {
		var err error
		if st, err = openStore(ctx, cfg.Store, cfg.Handlers.Stream, log); err != nil {
			return nil, err
		}
	}
	r := &Running{Backend: guard(st, cfg.Store, log), log: log, drain: cfg.Loop.DrainTimeout, stopAdmin: func() {}}
	if err := r.start(ctx, cfg); err != nil {
		r.abort()
		return nil, err
	}
	return r, nil
}

// start builds and starts everything over r.Backend, in the order the
// command has always logged it.
func (r *Running) start(ctx context.Context, cfg Config) error {
	log := r.log
	m, stopAdmin, err := startAdmin(cfg, log, r.Backend)
	if err != nil {
		return err
	}
	r.stopAdmin = stopAdmin
	h := cfg.Handlers
	if h.Sasl == nil {
		if h.Sasl, err = buildSasl(ctx, cfg, log, r.Backend); err != nil {
			log.Error("SASL", "err", err)
			return err
		}
	}
	listeners, tlsSrc, err := buildListeners(cfg, h.Sasl != nil, log)
	if err != nil {
		return err
	}
	r.TLS = tlsSrc
	var gwRef atomic.Pointer[handlers.Gateway]
	if r.node, err = startCluster(ctx, cfg, listeners, &gwRef, log); err != nil {
		log.Error("joining the cluster", "err", err)
		return err
	}
	h.Cluster = r.node
	if h.AdvertisedHost == "" && h.AdvertisedPort == 0 {
		// For callers without a listener; a listener's own endpoint is
		// what its clients are told.
		h.AdvertisedHost, h.AdvertisedPort = listeners[0].AdvertisedHost, listeners[0].AdvertisedPort
	}
	if h.MaxMessageSize == 0 {
		h.MaxMessageSize = iggyMaxMessageSize
	}
	if h.FetchConcurrency == 0 && cfg.Store.iggy() {
		h.FetchConcurrency = 8
	}
	logAuthz(h, log)
	g := handlers.NewGateway(h, r.Backend, log)
	r.Handlers = g
	if err := g.StartTransactions(ctx); err != nil {
		log.Error("loading the transaction state", "err", err)
		return err
	}
	if err := g.StartShareGroups(ctx); err != nil {
		log.Error("loading the share-group state", "err", err)
		return err
	}
	if err := g.StartStreamsGroups(ctx); err != nil {
		log.Error("loading the streams groups", "err", err)
		return err
	}
	gwRef.Store(g)
	if v := r.node.View(); v != nil {
		// Views applied before the gateway existed had nothing to drop.
		g.ClusterChanged(v, v)
	}
	lc := cfg.Loop
	lc.Listeners = listeners
	if lc.Metrics == nil {
		lc.Metrics = m
	}
	if lc.Log == nil {
		lc.Log = log
	}
	registerGatewayMetrics(lc.Metrics, g)
	srv := loop.NewServer(lc, g)
	if err := srv.Start(); err != nil {
		log.Error("starting the Kafka listeners", "err", err)
		return err
	}
	r.Loop = srv
	bound, adv := srv.ListenerAddrs(), srv.Advertised()
	for _, l := range listeners {
		r.Listeners = append(r.Listeners, Listener{Name: l.Name, Protocol: l.Protocol, Addr: bound[l.Name], Advertised: adv[l.Name]})
	}
	return nil
}

// logAuthz says how requests are authorized.
func logAuthz(h handlers.Config, log *slog.Logger) {
	if t := h.Tokens.WithDefaults(); len(t.Secret) > 0 {
		log.Info("delegation tokens on", "max_lifetime", t.MaxLifetime, "expiry_time", t.ExpiryTime,
			"expiry_check_interval", t.CheckInterval)
	}
	if !h.Authz.Enabled {
		return
	}
	log.Info("authorization on (Kafka ACLs, default deny)", "super_users", strings.Join(h.Authz.SuperUsers, ";"))
	if h.Sasl == nil {
		log.Warn("--authorizer acl without SASL: every client is " + handlers.PrincipalAnonymous)
	}
}

// registerGatewayMetrics exposes the fetch session cache, the tail cache
// and client-quota throttling, read at scrape time.
func registerGatewayMetrics(m *metrics.Metrics, g *handlers.Gateway) {
	m.FetchSessions(func() metrics.FetchSessionCounts {
		st := g.FetchSessionStats()
		return metrics.FetchSessionCounts{Open: st.Open, Created: st.Created, Evicted: st.Evicted,
			Refused: st.Refused, Incremental: st.Incremental}
	})
	m.TailCache(func() metrics.TailCacheCounts {
		st := g.TailCacheStats()
		return metrics.TailCacheCounts{Hits: st.Hits, Misses: st.Misses, ServedBytes: st.ServedBytes, UsedBytes: st.UsedBytes}
	})
	m.Quotas(func() metrics.QuotaCounts { return metrics.QuotaCounts(g.QuotaStats()) })
	if g.Share != nil {
		m.Shares(func() metrics.ShareCounts { return metrics.ShareCounts(g.ShareStats()) })
	}
}

// abort undoes a Start that failed part way: nothing serves yet.
func (r *Running) abort() {
	if r.Handlers != nil {
		r.Handlers.Groups.Close()
		r.Handlers.CloseTransactions()
		r.Handlers.CloseShareGroups()
	}
	r.closeStore(5 * time.Second)
	r.node.Close()
	r.stopAdmin()
}

// closeStore closes the backend within d; a store that cannot close by
// then (a full disk, a hung Iggy) is left as it is: what was acknowledged
// is durable.
func (r *Running) closeStore(d time.Duration) error {
	err := r.Backend.CloseWithin(d)
	if err != nil {
		r.log.Error("closing the store", "err", err)
	}
	return err
}

// Shutdown stops the gateway: the loop drains the requests in flight
// within Loop.DrainTimeout (ctx may cut it shorter), the group
// coordinator stops, the store closes within what is left of the drain
// timeout (at least half a second: the embedded store syncs first, which
// takes milliseconds), then the gateway leaves the cluster and the admin
// listeners close. It logs what did not stop cleanly and returns it; a
// second call returns the first one's result. Any goroutine.
func (r *Running) Shutdown(ctx context.Context) error {
	r.shutdown.Do(func() {
		began := time.Now()
		var errs []error
		if err := r.Loop.Shutdown(ctx); err != nil {
			r.log.Warn("shutdown did not drain cleanly", "err", err)
			errs = append(errs, err)
		}
		// Parked group calls were answered by the drain; no coordinator
		// timer may fire against the store closed next.
		r.Handlers.Groups.Close()
		r.Handlers.CloseTransactions()
		r.Handlers.CloseShareGroups()
		errs = append(errs, r.closeStore(max(r.drain-time.Since(began), 500*time.Millisecond)))
		r.node.Close()
		r.stopAdmin()
		r.err = errors.Join(errs...)
	})
	return r.err
}
