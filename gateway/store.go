package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// openGuarded opens the configured backend under bridge.Guard, so every
// store call has a deadline: --store-timeout-ms on the embedded store,
// --iggy-call-timeout-ms on Iggy.
func openGuarded(cfg config, log *slog.Logger) (*bridge.Guarded, error) {
	st, err := openStore(cfg, log)
	if err != nil {
		return nil, err
	}
	timeout := cfg.StoreTimeout
	if cfg.Backend == "iggy" {
		timeout = cfg.Iggy.CallTimeout
	}
	return bridge.Guard(st, bridge.GuardOptions{Timeout: timeout, Log: log}), nil
}

// openStore opens the configured backend. A failure is logged with what to
// check (the data dir, or the Iggy address and user) and is fatal: the
// gateway never starts without its store.
func openStore(cfg config, log *slog.Logger) (bridge.Backend, error) {
	if cfg.Backend == "iggy" {
		return openIggy(cfg, log)
	}
	policy, err := embedded.ParseSyncPolicy(cfg.Fsync)
	if err != nil { // parseConfig already checked; kept so the two cannot drift silently
		log.Error("fsync policy", "err", err)
		return nil, err
	}
	st, err := embedded.Open(cfg.DataDir, embedded.Options{
		Sync: policy, SyncInterval: cfg.FsyncInterval, Logger: log,
		CacheSize: int64(cfg.StoreCacheMB) << 20, RetentionCheckInterval: cfg.RetentionCheck,
	})
	if err != nil {
		log.Error("opening the embedded store", "data_dir", cfg.DataDir, "err", err)
		return nil, err
	}
	return st, nil
}

func openIggy(cfg config, log *slog.Logger) (bridge.Backend, error) {
	ic := cfg.Iggy
	if ic.Password == "" && ic.Token == "" {
		ic.Password = "iggy" // the server's --with-default-root-credentials
	}
	dur, err := iggy.DurabilityFor(cfg.Fsync)
	if err != nil { // parseConfig already checked
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ic.CallTimeout+5*time.Second)
	defer cancel()
	st, err := iggy.Open(ctx, iggy.Options{
		Addr: ic.Addr, Username: ic.Username, Password: ic.Password, Token: ic.Token,
		PoolSize: ic.PoolSize, CallTimeout: ic.CallTimeout, StateStream: ic.StateStream, Durability: &dur,
		TLS: ic.TLS || ic.TLSCAFile != "", TLSCAFile: ic.TLSCAFile, TLSServerName: ic.TLSServerName,
		TLSInsecureSkipVerify: ic.TLSInsecureSkipVerify,
		Logger:                log,
	})
	if err != nil {
		log.Error("connecting to the Iggy server", "addr", ic.Addr, "user", ic.Username, "err", err)
		return nil, err
	}
	log.Info("connected to Iggy", "addr", ic.Addr, "user", ic.Username, "pool", ic.PoolSize,
		"server", st.Client().ServerVersion(), "new_topics", dur.String())
	if err := checkWeakTopics(ctx, st, dur, cfg, log); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// checkWeakTopics reports existing topics that cannot keep the --fsync
// promise; with --iggy-weak-topics=refuse they stop the start.
func checkWeakTopics(ctx context.Context, st *iggy.Store, want iggy.Durability, cfg config, log *slog.Logger) error {
	weak, err := st.WeakTopics(ctx, want, cfg.Stream, cfg.Iggy.StateStream)
	if err != nil {
		log.Warn("could not read the storage settings of existing Iggy topics", "err", err)
		return nil
	}
	for _, w := range weak {
		has := w.Has.String()
		if !w.Known {
			has = "not reported by the server"
		}
		log.Warn("existing Iggy topic cannot keep the --fsync promise; acknowledged records on it may be lost if the Iggy server crashes (Iggy cannot change these settings: recreate the topic to fix it)",
			"stream", w.Stream, "topic", w.Topic, "has", has, "fsync", cfg.Fsync, "needs", want.String())
	}
	if len(weak) > 0 && cfg.Iggy.WeakTopics == "refuse" {
		err := fmt.Errorf("%d existing Iggy topic(s) cannot keep --fsync=%s and --iggy-weak-topics=refuse", len(weak), cfg.Fsync)
		log.Error("refusing to start", "err", err)
		return err
	}
	return nil
}

// storeDescription names where the data is for the startup log.
func storeDescription(cfg config) string {
	if cfg.Backend == "iggy" {
		return "iggy " + cfg.Iggy.Addr
	}
	return cfg.DataDir
}
