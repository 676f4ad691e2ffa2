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
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/internal/tlsfiles"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sasl-user" {
		os.Exit(runSaslUser(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// newLogger is the gateway's logger, as --log-level and --log-format say.
// Its level is cfg.Handlers.LogLevel when set (what BROKER_LOGGER changes
// at runtime).
func newLogger(cfg config, w io.Writer) *slog.Logger {
	var level slog.Leveler = cfg.LogLevel
	if cfg.Handlers.LogLevel != nil {
		cfg.Handlers.LogLevel.Set(cfg.LogLevel)
		level = cfg.Handlers.LogLevel
	}
	o := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// reloadOnHUP re-reads the TLS files on every SIGHUP on hup until the
// returned function is called; a failed reload keeps the files in use.
// Without TLS a SIGHUP is logged and ignored (never the default: killing
// the process).
func reloadOnHUP(hup chan os.Signal, src *tlsfiles.Source, cfg config, log *slog.Logger) (stop func()) {
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
			log.Info("SIGHUP: TLS files reloaded; new handshakes use them", "cert", cfg.TLS.CertFile,
				"client_ca", cfg.TLS.ClientCAFile)
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
	cfg.Handlers.LogLevel = new(slog.LevelVar)
	log := newLogger(cfg, stderr)
	if cfg.SecretFlagsOnCmdline != "" {
		log.Warn("a secret was given on the command line, where every local user can read it (ps, /proc); use its IGGY_KAFKA_* variable or its -file flag",
			"flags", cfg.SecretFlagsOnCmdline)
	}
	cfg.Log = log
	cfg.Loop.Listeners = cfg.Listen.loopListeners()
	cfg.PprofCmdline = http.HandlerFunc(pprofCmdline) // secrets redacted

	// Subscribe before Start so a signal that arrives while starting is
	// not lost to the default handler (which would skip the store Close):
	// SIGINT/SIGTERM end the start, a SIGHUP waits for it.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	gw, err := gateway.Start(ctx, cfg.Config)
	if err != nil {
		signal.Stop(hup)
		return 1 // Start logged what to check
	}
	stopReload := reloadOnHUP(hup, gw.TLS, cfg, log)
	defer stopReload()
	for _, l := range gw.Listeners {
		log.Info("listening", "listener", l.Name, "protocol", l.Protocol, "addr", l.Addr,
			"advertised", net.JoinHostPort(l.Advertised.Host, fmt.Sprint(l.Advertised.Port)))
	}
	log.Info("serving", "backend", cfg.Store.Kind, "store", storeDescription(cfg), "fsync", cfg.Store.Fsync, "stream", cfg.Handlers.Stream)

	<-ctx.Done()
	stop() // a second signal now kills the process the default way
	log.Info("shutting down", "drain_timeout", cfg.Loop.DrainTimeout)
	// The loop enforces the drain timeout itself (store calls in flight
	// are answered by the guard within their deadline); the context only
	// adds a margin so a stuck Shutdown cannot hold the process forever.
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Loop.DrainTimeout+time.Second)
	defer cancel()
	_ = gw.Shutdown(sctx) // it logged what did not stop cleanly
	log.Info("stopped")
	return 0
}

// storeDescription names where the data is for the startup log.
func storeDescription(cfg config) string {
	if cfg.Store.Kind == "iggy" {
		return "iggy " + cfg.Store.Iggy.Addr
	}
	return cfg.Store.DataDir
}
