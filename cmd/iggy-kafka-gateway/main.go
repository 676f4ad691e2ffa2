// Command iggy-kafka-gateway serves the Kafka wire protocol on Apache Iggy's
// storage model. Flags and IGGY_KAFKA_* variables are listed by --help and
// in docs/CONFIG.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/metrics"
	"github.com/iggy-kafka/gateway/internal/tlsfiles"
	"github.com/iggy-kafka/gateway/loop"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sasl-user" {
		os.Exit(runSaslUser(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// reloadOnHUP re-reads the TLS files on every SIGHUP until the returned
// function is called; a failed reload keeps the files in use. Without TLS
// a SIGHUP is logged and ignored (never the default: killing the process).
func reloadOnHUP(src *tlsfiles.Source, cfg config, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
			case <-done:
				return
			}
			if src == nil {
				log.Info("SIGHUP: nothing to reload (no TLS listener)")
				continue
			}
			if err := src.Reload(); err != nil {
				log.Error("SIGHUP: reloading the TLS files failed; the ones loaded before stay in use", "err", err)
				continue
			}
			log.Info("SIGHUP: TLS files reloaded; new handshakes use them", "cert", cfg.Listen.TLSCertFile,
				"client_ca", cfg.Listen.TLSClientCA)
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}

// run is main without the process exit, so every path returns its code.
func run(args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, environ)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText())
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "iggy-kafka-gateway: %v\n", err)
		return 2
	}
	log := newLogger(cfg, stderr)
	if cfg.SecretFlagsOnCmdline != "" {
		log.Warn("a secret was given on the command line, where every local user can read it (ps, /proc); use its IGGY_KAFKA_* variable or its -file flag",
			"flags", cfg.SecretFlagsOnCmdline)
	}

	store, err := openGuarded(cfg, log)
	if err != nil {
		return 1
	}
	// closeStore closes the store within d. Every exit path runs it once.
	closeStore := func(d time.Duration) {
		if err := store.CloseWithin(d); err != nil {
			log.Error("closing the store", "err", err)
		}
	}

	m, stopHTTP, err := startDebugServers(cfg, log, store)
	if err != nil {
		closeStore(5 * time.Second)
		return 1
	}
	defer stopHTTP()

	sasl, err := buildSasl(cfg, log, store)
	if err != nil {
		log.Error("SASL", "err", err)
		return 1
	}
	listeners, tlsSrc, err := buildListeners(cfg, log)
	if err != nil {
		log.Error("TLS", "err", err)
		return 1
	}
	var gwRef atomic.Pointer[handlers.Gateway]
	node, err := startCluster(cfg, listeners, &gwRef, log)
	if err != nil {
		log.Error("joining the cluster", "err", err)
		closeStore(5 * time.Second)
		return 1
	}
	defer node.Close()
	g := handlers.NewGateway(handlers.Config{
		Cluster: node,
		Sasl:    sasl,
		Authz:   buildAuthz(cfg, log),
		Stream:  cfg.Stream,
		// Each listener advertises its own address (loop.Listener); this
		// is the first one's, for callers without a listener.
		AdvertisedHost:       listeners[0].AdvertisedHost,
		AdvertisedPort:       listeners[0].AdvertisedPort,
		NodeID:               cfg.NodeID,
		ClusterID:            cfg.ClusterID,
		AutoCreateTopics:     cfg.AutoCreateTopics,
		DefaultPartitions:    cfg.DefaultPartitions,
		AutoCreatePerRequest: cfg.AutoCreatePerReq,
		AutoCreatePerSec:     cfg.AutoCreatePerSec,
		InstanceID:           cfg.InstanceID,
		MaxFrameSize:         int32(cfg.MaxFrameSize),
		MaxFetchWait:         cfg.MaxFetchWait,
		FetchConcurrency:     cfg.fetchConcurrency(),
		FetchSessionSlots:    fetchSessionSlots(cfg.FetchSessionSlots),
		FetchUncompressed:    cfg.FetchUncompressed,
		TailCacheBytes:       int64(cfg.TailCacheMB) << 20,
		Groups:               cfg.Groups,
		MaxMessageSize:       iggyMaxMessageSize,
	}, store, log)
	gwRef.Store(g)
	if v := node.View(); v != nil {
		// Views applied before the gateway existed had nothing to drop.
		g.ClusterChanged(v, v)
	}
	m.FetchSessions(func() metrics.FetchSessionCounts {
		st := g.FetchSessionStats()
		return metrics.FetchSessionCounts{Open: st.Open, Created: st.Created, Evicted: st.Evicted,
			Refused: st.Refused, Incremental: st.Incremental}
	})
	m.TailCache(func() metrics.TailCacheCounts {
		st := g.TailCacheStats()
		return metrics.TailCacheCounts{Hits: st.Hits, Misses: st.Misses, ServedBytes: st.ServedBytes, UsedBytes: st.UsedBytes}
	})
	srv := loop.NewServer(loop.Config{
		Listeners:             listeners,
		EventLoops:            cfg.EventLoops,
		Workers:               cfg.Workers,
		QueueDepth:            cfg.QueueDepth,
		MaxInFlightPerConn:    cfg.MaxInflightPerConn,
		MaxBufferedPerConn:    cfg.MaxBufferedPerConn,
		MaxOutboundPerConn:    cfg.MaxOutboundPerConn,
		WriteStallTimeout:     cfg.WriteStallTimeout,
		MaxConnections:        cfg.MaxConnections,
		MaxConnectionsPerAddr: cfg.MaxConnsPerAddr,
		FrameTimeout:          cfg.FrameTimeout,
		MaxFrameSize:          int32(cfg.MaxFrameSize),
		IdleTimeout:           cfg.IdleTimeout,
		DrainTimeout:          cfg.DrainTimeout,
		Metrics:               m,
		Log:                   log,
	}, g)

	// Subscribe before Start so a signal that arrives while binding is
	// not lost to the default handler (which would skip the store Close).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stopReload := reloadOnHUP(tlsSrc, cfg, log)
	defer stopReload()
	if err := srv.Start(); err != nil {
		log.Error("starting the Kafka listeners", "err", err)
		closeStore(5 * time.Second)
		return 1
	}
	bound := srv.ListenerAddrs()
	for _, l := range listeners {
		log.Info("listening", "listener", l.Name, "protocol", l.Protocol, "addr", bound[l.Name],
			"advertised", net.JoinHostPort(l.AdvertisedHost, fmt.Sprint(l.AdvertisedPort)))
	}
	log.Info("serving", "backend", cfg.Backend, "store", storeDescription(cfg), "fsync", cfg.Fsync, "stream", cfg.Stream)

	<-ctx.Done()
	stop() // a second signal now kills the process the default way
	log.Info("shutting down", "drain_timeout", cfg.DrainTimeout)
	// The loop enforces the drain timeout itself (store calls in flight
	// are answered by the guard within their deadline); the context only
	// adds a margin so a stuck Shutdown cannot hold the process forever.
	began := time.Now()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout+time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown did not drain cleanly", "err", err)
	}
	// Parked group calls were answered by the drain; no coordinator
	// timer may fire against the store closed next.
	g.Groups.Close()
	// The store gets what is left of the drain timeout, and at least half
	// a second (the embedded store syncs its WAL first, which takes
	// milliseconds); a store that cannot close by then (a full disk, a
	// hung Iggy) is left as it is: what was acknowledged is durable.
	closeStore(max(cfg.DrainTimeout-time.Since(began), 500*time.Millisecond))
	log.Info("stopped")
	return 0
}
