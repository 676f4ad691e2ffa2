package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// StoreConfig is the backend Start opens when Config.Backend is nil
// (docs/STORAGE.md); zero fields take the stores' defaults.
type StoreConfig struct {
	Kind string // embedded (in-process, under DataDir; the default) or iggy (a server at Iggy.Addr)
	// Fsync is what an ack promises: always (the default), interval or
	// never; on Iggy, the storage settings of the topics the gateway
	// creates.
	Fsync          string
	FsyncInterval  time.Duration // embedded, Fsync interval: the sync period
	DataDir        string        // embedded: where the data is
	CacheSize      int64         // embedded: pebble's block cache in bytes
	RetentionCheck time.Duration // embedded: how often retention is applied
	// Timeout is the deadline of one embedded-store call (bridge.Guard);
	// on Iggy, Iggy.CallTimeout is.
	Timeout time.Duration
	Iggy    IggyConfig
}

// IggyConfig is the connection to an Iggy server (Kind iggy).
type IggyConfig struct {
	Addr, Username string
	// Password or Token logs in; neither: the server's default root
	// password.
	Password, Token string
	StateStream     string // where the gateway keeps its own state
	WeakTopics      string // existing topics that cannot keep Fsync: warn (default) or refuse
	PoolSize        int
	CallTimeout     time.Duration
	TLS             bool // also implied by TLSCAFile
	// TLSInsecureSkipVerify skips certificate checks (self-signed test
	// servers only).
	TLSInsecureSkipVerify    bool
	TLSCAFile, TLSServerName string
}

func (s StoreConfig) iggy() bool { return s.Kind == "iggy" }

// fsync is the configured promise, always by default.
func (s StoreConfig) fsync() string {
	if s.Fsync == "" {
		return "always"
	}
	return s.Fsync
}

// guard puts st under bridge.Guard, so every store call has a deadline:
// Store.Timeout on the embedded store, Iggy.CallTimeout on Iggy.
func guard(st bridge.Backend, cfg StoreConfig, log *slog.Logger) *bridge.Guarded {
	timeout := cfg.Timeout
	if cfg.iggy() {
		timeout = cfg.Iggy.CallTimeout
	}
	return bridge.Guard(st, bridge.GuardOptions{Timeout: timeout, Log: log})
}

// openStore opens the configured backend. A failure is logged with what to
// check (the data dir, or the Iggy address and user) and is fatal: the
// gateway never starts without its store.
func openStore(ctx context.Context, cfg StoreConfig, stream string, log *slog.Logger) (bridge.Backend, error) {
	if cfg.iggy() {
		return openIggy(ctx, cfg, stream, log)
	}
	policy, err := embedded.ParseSyncPolicy(cfg.fsync())
	if err != nil { // the command checked it already
		log.Error("fsync policy", "err", err)
		return nil, err
	}
	st, err := embedded.Open(cfg.DataDir, embedded.Options{
		Sync: policy, SyncInterval: cfg.FsyncInterval, Logger: log,
		CacheSize: cfg.CacheSize, RetentionCheckInterval: cfg.RetentionCheck,
	})
	if err != nil {
		log.Error("opening the embedded store", "data_dir", cfg.DataDir, "err", err)
		return nil, err
	}
	return st, nil
}

func openIggy(ctx context.Context, cfg StoreConfig, stream string, log *slog.Logger) (bridge.Backend, error) {
	ic := cfg.Iggy
	if ic.Password == "" && ic.Token == "" {
		ic.Password = "iggy" // the server's --with-default-root-credentials
	}
	dur, err := iggy.DurabilityFor(cfg.fsync())
	if err != nil { // the command checked it already
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ic.CallTimeout+5*time.Second)
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
	if err := checkWeakTopics(ctx, st, dur, cfg, stream, log); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// checkWeakTopics reports existing topics that cannot keep the Fsync
// promise; with WeakTopics refuse they stop the start.
func checkWeakTopics(ctx context.Context, st *iggy.Store, want iggy.Durability, cfg StoreConfig, stream string, log *slog.Logger) error {
	weak, err := st.WeakTopics(ctx, want, stream, cfg.Iggy.StateStream)
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
			"stream", w.Stream, "topic", w.Topic, "has", has, "fsync", cfg.fsync(), "needs", want.String())
	}
	if len(weak) > 0 && cfg.Iggy.WeakTopics == "refuse" {
		err := fmt.Errorf("%d existing Iggy topic(s) cannot keep --fsync=%s and --iggy-weak-topics=refuse", len(weak), cfg.fsync())
		log.Error("refusing to start", "err", err)
		return err
	}
	return nil
}
