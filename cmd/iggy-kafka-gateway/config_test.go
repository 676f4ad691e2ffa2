package main

import (
	"errors"
	"flag"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/gateway"
	"github.com/iggy-kafka/gateway/group"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
	"github.com/iggy-kafka/gateway/share"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Config: gateway.Config{
			Store: gateway.StoreConfig{
				Kind:           "embedded",
				DataDir:        "./data",
				Fsync:          "always",
				FsyncInterval:  100 * time.Millisecond,
				CacheSize:      256 << 20,
				Timeout:        10 * time.Second,
				RetentionCheck: 30 * time.Second,
				Iggy:           gateway.IggyConfig{Addr: "127.0.0.1:8090", Username: "iggy", StateStream: "iggy-kafka-gateway", WeakTopics: "warn", PoolSize: 4, CallTimeout: 10 * time.Second},
			},
			Handlers: handlers.Config{
				Stream:               "kafka",
				NodeID:               1,
				ClusterID:            "iggy-kafka-gateway",
				AutoCreateTopics:     true,
				DefaultPartitions:    1,
				MaxFrameSize:         8 << 20,
				MaxFetchWait:         10 * time.Second,
				AutoCreatePerRequest: 20,
				AutoCreatePerSec:     10,
				FetchSessionSlots:    1000,
				TailCacheBytes:       256 << 20,
				Transactions:         handlers.TxnConfig{Version: 2, MaxTimeout: 15 * time.Minute, MaxIDs: 100000},
				Shares:               handlers.ShareConfig{Limits: share.Config{MaxMembers: 200, MaxSessions: 2000, MaxInFlight: 2000, MaxGroups: 10000}},
				Groups: group.Config{InitialRebalanceDelay: 3 * time.Second, MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 30 * time.Minute,
					MaxGroupSize: 1000, ConsumerSessionTimeout: 45 * time.Second, ConsumerMinSessionTimeout: 45 * time.Second,
					ConsumerMaxSessionTimeout: time.Minute, ConsumerHeartbeatInterval: 5 * time.Second, ConsumerMinHeartbeatInterval: 5 * time.Second,
					ConsumerMaxHeartbeatInterval: 15 * time.Second, ConsumerAssignors: []string{"uniform", "range"}},
				Tokens: handlers.TokenConfig{MaxLifetime: 7 * 24 * time.Hour, ExpiryTime: 24 * time.Hour, CheckInterval: time.Hour},
			},
			Loop: loop.Config{
				MaxConnections:        1024,
				MaxConnectionsPerAddr: 256,
				FrameTimeout:          30 * time.Second,
				MaxFrameSize:          8 << 20,
				IdleTimeout:           600 * time.Second,
				DrainTimeout:          25 * time.Second,
				QueueDepth:            4096,
				MaxInFlightPerConn:    64,
				MaxOutboundPerConn:    loop.DefaultMaxOutboundPerConn,
				WriteStallTimeout:     loop.DefaultWriteStallTimeout,
			},
			Cluster: gateway.ClusterConfig{TTL: 10 * time.Second},
			Sasl:    gateway.SaslConfig{PermissionsTTL: 5 * time.Second},
		},
		BindAddr:       "127.0.0.1:9092",
		AdvertisedHost: "127.0.0.1",
		AdvertisedPort: 9092,
		LogLevel:       slog.LevelInfo,
		LogFormat:      "text",
	}
	wantLn := []listenerSpec{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:9092", AdvHost: "127.0.0.1", AdvPort: 9092}}
	if !reflect.DeepEqual(c.Listen.Resolved, wantLn) {
		t.Fatalf("default listeners %+v, want %+v", c.Listen.Resolved, wantLn)
	}
	c.Listen = listenersConfig{}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     []string
		check   func(t *testing.T, c config)
		wantErr string // substring; "" means success
	}{
		{name: "flag sets", args: []string{"--bind-addr=127.0.0.2:19092", "--max-connections", "7", "--fsync=interval", "--fsync-interval-ms=5"},
			check: func(t *testing.T, c config) {
				if c.BindAddr != "127.0.0.2:19092" || c.AdvertisedHost != "127.0.0.2" || c.AdvertisedPort != 19092 {
					t.Errorf("bind/advertise = %q %q %d", c.BindAddr, c.AdvertisedHost, c.AdvertisedPort)
				}
				if c.Loop.MaxConnections != 7 || c.Store.Fsync != "interval" || c.Store.FsyncInterval != 5*time.Millisecond {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "env sets", env: []string{"IGGY_KAFKA_MAX_CONNECTIONS=9", "IGGY_KAFKA_IGGY_STREAM=orders", "IGGY_KAFKA_AUTO_CREATE_TOPICS=false", "IGGY_KAFKA_LOG_LEVEL=debug"},
			check: func(t *testing.T, c config) {
				if c.Loop.MaxConnections != 9 || c.Handlers.Stream != "orders" || c.Handlers.AutoCreateTopics || c.LogLevel != slog.LevelDebug {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "flag beats env", args: []string{"--max-connections=3", "--stream=s2", "--auto-create-topics"},
			env: []string{"IGGY_KAFKA_MAX_CONNECTIONS=9", "IGGY_KAFKA_IGGY_STREAM=s1", "IGGY_KAFKA_AUTO_CREATE_TOPICS=false"},
			check: func(t *testing.T, c config) {
				if c.Loop.MaxConnections != 3 || c.Handlers.Stream != "s2" || !c.Handlers.AutoCreateTopics {
					t.Errorf("got %+v", c)
				}
			}},
		{name: "bool flag false", args: []string{"--auto-create-topics=false"},
			check: func(t *testing.T, c config) {
				if c.Handlers.AutoCreateTopics {
					t.Error("auto-create still on")
				}
			}},
		{name: "cluster mode", args: []string{"--backend=iggy", "--cluster-etcd-endpoints=http://127.0.0.1:2379, http://127.0.0.2:2379", "--instance-id=3", "--cluster-session-ttl-secs=4"},
			check: func(t *testing.T, c config) {
				if len(c.Cluster.Endpoints) != 2 || c.Cluster.Endpoints[1] != "http://127.0.0.2:2379" || c.Cluster.TTL != 4*time.Second || c.Handlers.NodeID != 3 {
					t.Errorf("got %+v node %d", c.Cluster, c.Handlers.NodeID)
				}
			}},
		{name: "cluster transactions at version 1", args: []string{"--backend=iggy", "--cluster-etcd-endpoints=http://127.0.0.1:2379", "--instance-id=3", "--transactions=enabled"},
			check: func(t *testing.T, c config) {
				if tx := c.Handlers.Transactions; !tx.Enabled || tx.Version != 1 {
					t.Errorf("transactions %+v, want enabled at version 1", tx)
				}
			}},
		{name: "cluster refuses transaction version 2", args: []string{"--backend=iggy", "--cluster-etcd-endpoints=http://127.0.0.1:2379", "--instance-id=3", "--transactions=enabled", "--transaction-version=2"}, wantErr: "--transaction-version 2 is not served"},
		{name: "cluster needs iggy", args: []string{"--cluster-etcd-endpoints=http://127.0.0.1:2379", "--instance-id=3"}, wantErr: "needs --backend iggy"},
		{name: "cluster needs an instance id", args: []string{"--backend=iggy", "--cluster-etcd-endpoints=http://127.0.0.1:2379"}, wantErr: "needs --instance-id"},
		{name: "cluster ttl floor", args: []string{"--cluster-session-ttl-secs=1"}, wantErr: "cluster-session-ttl-secs"},
		{name: "other env ignored", env: []string{"PATH=/bin", "KAFKA_X=1", "IGGY_KAFKA_E2E_REQUIRED=1"}},
		{name: "unknown env", env: []string{"IGGY_KAFKA_MAX_CONECTIONS=9"}, wantErr: "unknown environment variable IGGY_KAFKA_MAX_CONECTIONS"},
		{name: "flag name is not the env of stream", env: []string{"IGGY_KAFKA_STREAM=x"}, wantErr: "IGGY_KAFKA_STREAM"},
		{name: "bad env value", env: []string{"IGGY_KAFKA_MAX_FRAME_SIZE=big"}, wantErr: "IGGY_KAFKA_MAX_FRAME_SIZE"},
		{name: "bad env bool", env: []string{"IGGY_KAFKA_AUTO_CREATE_TOPICS=maybe"}, wantErr: "IGGY_KAFKA_AUTO_CREATE_TOPICS"},
		{name: "bad flag value", args: []string{"--fsync=sometimes"}, wantErr: "-fsync"},
		{name: "unknown flag", args: []string{"--max-conections=1"}, wantErr: "max-conections"},
		{name: "stray argument", args: []string{"serve"}, wantErr: `unexpected argument "serve"`},
		{name: "zero connections", args: []string{"--max-connections=0"}, wantErr: "-max-connections"},
		{name: "zero idle timeout", args: []string{"--idle-timeout-secs=0"}, wantErr: "-idle-timeout-secs"},
		{name: "zero drain allowed", args: []string{"--shutdown-drain-timeout-secs=0"},
			check: func(t *testing.T, c config) {
				if c.Loop.DrainTimeout != 0 {
					t.Errorf("drain = %v", c.Loop.DrainTimeout)
				}
			}},
		{name: "zero workers", env: []string{"IGGY_KAFKA_WORKERS=0"}, wantErr: "IGGY_KAFKA_WORKERS"},
		{name: "zero event loops", args: []string{"--event-loops=0"}, wantErr: "-event-loops"},
		{name: "zero queue", args: []string{"--queue-depth=0"}, wantErr: "-queue-depth"},
		{name: "zero inflight", args: []string{"--max-inflight-per-conn=0"}, wantErr: "-max-inflight-per-conn"},
		{name: "zero partitions", args: []string{"--default-partitions=0"}, wantErr: "-default-partitions"},
		{name: "zero fetch wait", args: []string{"--max-fetch-wait-ms=0"}, wantErr: "-max-fetch-wait-ms"},
		{name: "negative frame", args: []string{"--max-frame-size=-1"}, wantErr: "-max-frame-size"},
		{name: "instance id range", args: []string{"--instance-id=65536"}, wantErr: "-instance-id"},
		{name: "instance id max", args: []string{"--instance-id=65535"},
			check: func(t *testing.T, c config) {
				if c.Handlers.InstanceID != 65535 {
					t.Errorf("instance = %d", c.Handlers.InstanceID)
				}
			}},
		{name: "buffered below frame", args: []string{"--max-buffered-per-conn=2048", "--max-frame-size=4096"}, wantErr: "--max-buffered-per-conn"},
		{name: "wildcard bind needs host", args: []string{"--bind-addr=0.0.0.0:9092"}, wantErr: "--advertised-host"},
		{name: "wildcard v6 bind needs host", args: []string{"--bind-addr=[::]:9092"}, wantErr: "IGGY_KAFKA_ADVERTISED_HOST"},
		{name: "empty host bind needs host", args: []string{"--bind-addr=:9092"}, wantErr: "--advertised-host"},
		{name: "wildcard bind with host", args: []string{"--bind-addr=0.0.0.0:9092", "--advertised-host=gw.example", "--allow-anonymous"},
			check: func(t *testing.T, c config) {
				if c.AdvertisedHost != "gw.example" || c.AdvertisedPort != 9092 {
					t.Errorf("advertise = %q %d", c.AdvertisedHost, c.AdvertisedPort)
				}
				want := []listenerSpec{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "0.0.0.0:9092", AdvHost: "gw.example", AdvPort: 9092}}
				if !reflect.DeepEqual(c.Listen.Resolved, want) {
					t.Errorf("listeners %+v", c.Listen.Resolved)
				}
			}},
		{name: "wildcard anonymous refused", args: []string{"--bind-addr=0.0.0.0:9092", "--advertised-host=gw.example"}, wantErr: "--allow-anonymous"},
		{name: "listeners", args: []string{"--listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://0.0.0.0:9093,internal://[::1]:9094",
			"--advertised-listeners=SASL_SSL://gw.example:19093", "--listener-security-protocol-map=INTERNAL:SSL",
			"--tls-cert-file=c.pem", "--tls-key-file=k.pem", "--sasl-mechanisms=SCRAM-SHA-256", "--sasl-users-file=u"},
			check: func(t *testing.T, c config) {
				want := []listenerSpec{
					{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:9092", AdvHost: "127.0.0.1", AdvPort: 9092},
					{Name: "SASL_SSL", Protocol: "SASL_SSL", Addr: "0.0.0.0:9093", AdvHost: "gw.example", AdvPort: 19093},
					{Name: "INTERNAL", Protocol: "SSL", Addr: "[::1]:9094", AdvHost: "::1", AdvPort: 9094},
				}
				if !reflect.DeepEqual(c.Listen.Resolved, want) {
					t.Errorf("listeners %+v", c.Listen.Resolved)
				}
			}},
		{name: "sasl flag makes the default listener SASL_PLAINTEXT", args: []string{"--sasl-mechanisms=PLAIN", "--sasl-users-file=u", "--bind-addr=0.0.0.0:9092", "--advertised-host=gw"},
			check: func(t *testing.T, c config) {
				if p := c.Listen.Resolved[0].Protocol; p != "SASL_PLAINTEXT" {
					t.Errorf("protocol %s", p)
				}
			}},
		{name: "listeners and bind-addr", args: []string{"--listeners=PLAINTEXT://127.0.0.1:9092", "--bind-addr=127.0.0.1:9093"}, wantErr: "--bind-addr cannot be combined"},
		{name: "listeners unknown name", args: []string{"--listeners=EXTERNAL://127.0.0.1:9092"}, wantErr: "--listener-security-protocol-map"},
		{name: "listeners twice", args: []string{"--listeners=SSL://127.0.0.1:9092,ssl://127.0.0.1:9093", "--tls-cert-file=c", "--tls-key-file=k"}, wantErr: "twice"},
		{name: "listeners bad", args: []string{"--listeners=127.0.0.1:9092"}, wantErr: "NAME://host:port"},
		{name: "ssl needs cert", args: []string{"--listeners=SSL://127.0.0.1:9093"}, wantErr: "--tls-cert-file"},
		{name: "cert without ssl", args: []string{"--tls-cert-file=c", "--tls-key-file=k"}, wantErr: "no listener is SSL"},
		{name: "sasl listener needs mechanisms", args: []string{"--listeners=SASL_PLAINTEXT://127.0.0.1:9093"}, wantErr: "--sasl-mechanisms"},
		{name: "mechanisms without sasl listener", args: []string{"--listeners=PLAINTEXT://127.0.0.1:9093", "--sasl-mechanisms=PLAIN", "--sasl-users-file=u"}, wantErr: "no listener is SASL"},
		{name: "wildcard listener needs advertised", args: []string{"--listeners=SASL_SSL://0.0.0.0:9093", "--tls-cert-file=c", "--tls-key-file=k", "--sasl-mechanisms=PLAIN", "--sasl-users-file=u"}, wantErr: "--advertised-listeners"},
		{name: "advertised unknown listener", args: []string{"--listeners=PLAINTEXT://127.0.0.1:9093", "--advertised-listeners=SSL://gw:1"}, wantErr: "which --listeners does not"},
		{name: "anonymous ssl refused", args: []string{"--listeners=SSL://0.0.0.0:9093", "--advertised-listeners=SSL://gw:9093", "--tls-cert-file=c", "--tls-key-file=k"}, wantErr: "--allow-anonymous"},
		{name: "mtls ssl is authenticated", args: []string{"--listeners=SSL://0.0.0.0:9093", "--advertised-listeners=SSL://gw:9093", "--tls-cert-file=c", "--tls-key-file=k", "--tls-client-ca-file=ca"}},
		{name: "advertised without listeners", args: []string{"--advertised-listeners=PLAINTEXT://gw:1"}, wantErr: "need --listeners"},
		{name: "port 0 needs advertised port", args: []string{"--bind-addr=127.0.0.1:0"}, wantErr: "--advertised-port"},
		{name: "bad bind", args: []string{"--bind-addr=localhost"}, wantErr: "--bind-addr"},
		{name: "iggy backend", args: []string{"--backend=iggy", "--iggy-addr=127.0.0.1:8091", "--iggy-tls"},
			env: []string{"IGGY_KAFKA_IGGY_PASSWORD=secret", "IGGY_KAFKA_IGGY_POOL_SIZE=8"},
			check: func(t *testing.T, c config) {
				if c.Store.Kind != "iggy" || c.Store.Iggy.Addr != "127.0.0.1:8091" || !c.Store.Iggy.TLS ||
					c.Store.Iggy.Password != "secret" || c.Store.Iggy.PoolSize != 8 {
					t.Errorf("iggy config = %+v (backend %q)", c.Store.Iggy, c.Store.Kind)
				}
			}},
		{name: "zero iggy pool", args: []string{"--iggy-pool-size=0"}, wantErr: "-iggy-pool-size"},
		{name: "unknown backend", env: []string{"IGGY_KAFKA_BACKEND=kafka"}, wantErr: "IGGY_KAFKA_BACKEND"},
		{name: "bad metrics addr", args: []string{"--metrics-addr=9100"}, wantErr: "-metrics-addr"},
		{name: "bad log level", args: []string{"--log-level=loud"}, wantErr: "-log-level"},
		{name: "bad log format", env: []string{"IGGY_KAFKA_LOG_FORMAT=xml"}, wantErr: "IGGY_KAFKA_LOG_FORMAT"},
		{name: "empty data dir", args: []string{"--data-dir="}, wantErr: "-data-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, tt.env)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("no error, want one containing %q (config %+v)", tt.wantErr, c)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "-help"} {
		if _, err := parseConfig([]string{arg}, nil); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s: err = %v, want flag.ErrHelp", arg, err)
		}
	}
	help := usageText()
	for _, o := range options() {
		for _, want := range []string{"--" + o.flag + "\n", o.env, "default " + o.defaultText(), o.usage} {
			if !strings.Contains(help, want) {
				t.Errorf("help lacks %q for --%s", want, o.flag)
			}
		}
	}
	var out, errOut strings.Builder
	if code := run([]string{"--help"}, nil, &out, &errOut); code != 0 || out.String() != help {
		t.Errorf("run --help: code %d, stdout %d bytes, stderr %q", code, out.Len(), errOut.String())
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	t.Parallel()
	var out, errOut strings.Builder
	code := run(nil, []string{"IGGY_KAFKA_BIND=1"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "IGGY_KAFKA_BIND") {
		t.Fatalf("code %d, stderr %q", code, errOut.String())
	}
}

// Every option's parser must accept its own default, and every env name
// must be unique: a clash would make one variable set two flags.
func TestOptionTable(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, o := range options() {
		if prev, dup := seen[o.env]; dup {
			t.Errorf("%s used by --%s and --%s", o.env, prev, o.flag)
		}
		seen[o.env] = o.flag
		if !strings.HasPrefix(o.env, envPrefix) {
			t.Errorf("--%s: variable %s lacks the %s prefix", o.flag, o.env, envPrefix)
		}
		if o.def == "" && o.defText == "" {
			t.Errorf("--%s has no default text", o.flag)
		}
	}
}

// The flags tables in README.md and docs/CONFIG.md are generated from the
// option table; this keeps them true. Run with UPDATE_DOCS=1 to rewrite
// them in place (between the flags-table markers).
func TestDocsTables(t *testing.T) {
	t.Parallel()
	table := markdownTable()
	for _, path := range []string{"../../README.md", "../../docs/CONFIG.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(b)
		const begin, end = "<!-- flags-table:begin -->\n", "<!-- flags-table:end -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Errorf("%s lacks the %q ... %q markers", path, strings.TrimSpace(begin), end)
			continue
		}
		if got := doc[i+len(begin) : j]; got != table {
			if os.Getenv("UPDATE_DOCS") == "1" {
				doc = doc[:i+len(begin)] + table + doc[j:]
				if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("%s flags table is stale; run UPDATE_DOCS=1 go test ./cmd/iggy-kafka-gateway -run TestDocsTables\nwant:\n%s", path, table)
		}
	}
}

// --fetch-session-cache-slots 0 means no sessions, as on Kafka; the
// handlers' zero means the default, so 0 must reach them as -1.
func TestFetchSessionSlotsFlag(t *testing.T) {
	t.Parallel()
	for flag, want := range map[int]int{0: -1, 1: 1, 1000: 1000} {
		if got := fetchSessionSlots(flag); got != want {
			t.Errorf("--fetch-session-cache-slots %d: handlers get %d, want %d", flag, got, want)
		}
	}
}

// The group flags reach group.Config, 0 means no initial delay, and a
// default outside its bounds is refused at startup, as Kafka refuses to
// start.
func TestGroupFlags(t *testing.T) {
	t.Parallel()
	c, err := parseConfig([]string{"--group-initial-rebalance-delay-ms", "0", "--group-consumer-session-timeout-ms", "50000",
		"--group-consumer-assignors", "range"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Handlers.Groups; g.InitialRebalanceDelay >= 0 || g.ConsumerSessionTimeout != 50*time.Second || !reflect.DeepEqual(g.ConsumerAssignors, []string{"range"}) {
		t.Fatalf("%+v", g)
	}
	for _, args := range [][]string{
		{"--group-consumer-session-timeout-ms", "30000"},
		{"--group-consumer-heartbeat-interval-ms", "20000"},
		{"--group-min-session-timeout-ms", "60000", "--group-max-session-timeout-ms", "6000"},
		{"--group-consumer-assignors", "sticky"},
	} {
		if _, err := parseConfig(args, nil); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
