package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// openStore opens the configured backend. A failure is logged with what to
// check (the data dir, or the Iggy address and user) and is fatal: the
// gateway never starts without its store.
func openStore(cfg config, log *slog.Logger) (bridge.Store, error) {
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
		CacheSize: int64(cfg.StoreCacheMB) << 20,
	})
	if err != nil {
		log.Error("opening the embedded store", "data_dir", cfg.DataDir, "err", err)
		return nil, err
	}
	return st, nil
}

func openIggy(cfg config, log *slog.Logger) (bridge.Store, error) {
	ic := cfg.Iggy
	if ic.Password == "" && ic.Token == "" {
		ic.Password = "iggy" // the server's --with-default-root-credentials
	}
	ctx, cancel := context.WithTimeout(context.Background(), ic.CallTimeout+5*time.Second)
	defer cancel()
	st, err := iggy.Open(ctx, iggy.Options{
		Addr: ic.Addr, Username: ic.Username, Password: ic.Password, Token: ic.Token,
		PoolSize: ic.PoolSize, CallTimeout: ic.CallTimeout, StateStream: ic.StateStream,
		TLS: ic.TLS || ic.TLSCAFile != "", TLSCAFile: ic.TLSCAFile, TLSServerName: ic.TLSServerName,
		TLSInsecureSkipVerify: ic.TLSInsecureSkipVerify,
		Logger:                log,
	})
	if err != nil {
		log.Error("connecting to the Iggy server", "addr", ic.Addr, "user", ic.Username, "err", err)
		return nil, err
	}
	log.Info("connected to Iggy", "addr", ic.Addr, "user", ic.Username, "pool", ic.PoolSize)
	return st, nil
}
