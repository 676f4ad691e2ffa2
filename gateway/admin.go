package gateway

// The operator's admin listeners: Prometheus /metrics with /healthz, and
// /debug/pprof/. Both are optional and bind before the Kafka listeners, so
// a taken port stops the start.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/metrics"
)

// startAdmin starts the optional /metrics (with /healthz) and
// /debug/pprof/ listeners. Metrics are nil (every call a no-op) without
// MetricsAddr. stop shuts down whatever was started.
func startAdmin(cfg Config, log *slog.Logger, store *bridge.Guarded) (m *metrics.Metrics, stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if cfg.MetricsAddr != "" {
		// A private registry: the default one would also carry whatever
		// some imported package registered.
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		m = metrics.New(reg)
		registerStoreMetrics(reg, store)
		mux := http.NewServeMux()
		mux.Handle("/metrics", m.Handler())
		mux.Handle("/healthz", healthHandler(store))
		s, err := serveHTTP(cfg.MetricsAddr, mux, "metrics", log)
		if err != nil {
			return nil, nil, err
		}
		stops = append(stops, s)
	}
	if cfg.PprofAddr != "" {
		// Its own mux rather than net/http/pprof's registration on the
		// default mux, so profiles are only ever on the address asked for.
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		cmdline := cfg.PprofCmdline
		if cmdline == nil {
			cmdline = http.HandlerFunc(pprof.Cmdline)
		}
		mux.Handle("/debug/pprof/cmdline", cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		s, err := serveHTTP(cfg.PprofAddr, mux, "pprof", log)
		if err != nil {
			stop()
			return nil, nil, err
		}
		stops = append(stops, s)
	}
	return m, stop, nil
}

// adminAddr is where an admin listener (metrics, pprof) binds: an address
// without a host (":9100") means loopback, not every interface, since what
// these serve is for the operator. exposed says the address is not
// loopback, so the caller warns.
func adminAddr(addr string) (bind string, defaulted, exposed bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil { // the command checked it already
		return addr, false, true
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port), true, false
	}
	if host == "localhost" {
		return addr, false, false
	}
	ip := net.ParseIP(host)
	return addr, false, ip == nil || !ip.IsLoopback()
}

// serveHTTP binds addr now (so a taken port is a startup error, not a log
// line later) and serves h in the background until the returned stop.
func serveHTTP(addr string, h http.Handler, what string, log *slog.Logger) (stop func(), err error) {
	given := addr
	addr, defaulted, exposed := adminAddr(addr)
	switch {
	case defaulted:
		log.Info(what+" address has no host: listening on loopback only (give 0.0.0.0:PORT to listen on every interface)",
			"given", given, "addr", addr)
	case exposed:
		log.Warn(what+" listener is reachable beyond this host: anyone who can connect can read it; bind it to loopback or firewall it",
			"addr", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("binding the "+what+" listener", "addr", addr, "err", err)
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" listener failed", "err", err)
		}
	}()
	log.Info(what+" listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// healthHandler answers GET /healthz: 200 "ok" while the store serves, 503
// with the state and the cause when it does not ("degraded": writes fail
// and it recovers by itself, e.g. once disk space is freed; "restart
// needed": only a restart recovers).
func healthHandler(store *bridge.Guarded) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _ := store.Health()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if h.State == bridge.Healthy {
			fmt.Fprintln(w, "ok")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "store %s since %s: %v\n", h.State, h.Since.UTC().Format(time.RFC3339), h.Cause)
	})
}

// registerStoreMetrics exposes the store's health and the guard's counts,
// read at scrape time.
func registerStoreMetrics(reg prometheus.Registerer, store *bridge.Guarded) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "iggy_kafka_store_state",
			Help: "Store health: 0 ok, 1 degraded (writes fail, recovers by itself, e.g. disk full), 2 restart needed.",
		}, func() float64 { h, _ := store.Health(); return float64(h.State) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "iggy_kafka_store_hung_calls",
			Help: "Store calls answered at their deadline (or when the store failed) that are still running in the store.",
		}, func() float64 { return float64(store.Hung()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "iggy_kafka_store_abandoned_calls_total",
			Help: "Store calls the gateway stopped waiting for at their deadline or when the store failed.",
		}, func() float64 { return float64(store.Abandoned()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "iggy_kafka_store_refused_calls_total",
			Help: "Store calls refused at once because too many earlier ones were hung.",
		}, func() float64 { return float64(store.Refused()) }),
	)
}
