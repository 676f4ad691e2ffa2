package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/gateway"
)

// envPrefix starts every environment variable the gateway reads. Any other
// variable with this prefix is a startup error: a typo in a deployment file
// would otherwise silently run the gateway on a default.
const envPrefix = "IGGY_KAFKA_"

// envIgnored are variables with the prefix that belong to something else
// (the e2e suite sets this one for the whole `go test` run, and the gateway
// binary it spawns inherits it).
var envIgnored = map[string]bool{"IGGY_KAFKA_E2E_REQUIRED": true, "IGGY_KAFKA_E2E_BACKEND": true,
	"IGGY_KAFKA_IGGY_TEST_ADDR": true, "IGGY_KAFKA_IGGY_SERVER_DIR": true}

// config is everything the command line and environment decide: the
// gateway's Config, which most options set directly, and what only the
// command uses (the single-listener flags resolved into Listen, logging,
// where secrets came from).
type config struct {
	gateway.Config
	// BindAddr and AdvertisedHost/Port are the single default listener's
	// flags, resolved into Listen.Resolved.
	BindAddr       string
	AdvertisedHost string
	AdvertisedPort int
	Listen         listenersConfig
	// listenersSet: --listeners was given. legacyAddrFlags names the
	// single-listener flags given (--bind-addr, --advertised-*), which
	// --listeners replaces.
	listenersSet    bool
	legacyAddrFlags []string
	LogLevel        slog.Level
	LogFormat       string
	// iggyPasswordFile and iggyTokenFile hold Store.Iggy's secrets;
	// readSecretFiles loads them.
	iggyPasswordFile, iggyTokenFile string
	// secretsSet records which secrets were given (by flag or variable),
	// to refuse a secret given twice (value and file).
	secretsSet struct{ password, token bool }
	// SecretFlagsOnCmdline names the secret flags given on the command
	// line (not in the environment), space-separated, for the startup
	// warning.
	SecretFlagsOnCmdline string
}

// option is one setting: a flag, its variable and how to parse it. The
// table below is the single source for parsing, --help and the docs tables
// (a test checks README.md and docs/CONFIG.md against it).
type option struct {
	flag string
	env  string
	def  string // default as shown and as parsed; "" for none
	// defText replaces def in help when the default is computed at run
	// time (GOMAXPROCS) or derived from another option.
	defText string
	usage   string
	set     func(c *config, v string) error
	// secret values never appear in errors, logs or /debug/pprof/cmdline
	// (secrets.go).
	secret bool
}

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func options() []option {
	opts := []option{
		{flag: "bind-addr", def: "127.0.0.1:9092",
			usage: "host:port the Kafka listener binds",
			set: func(c *config, v string) error {
				c.BindAddr = v
				c.legacyAddrFlags = append(c.legacyAddrFlags, "--bind-addr")
				return nil
			}},
		{flag: "advertised-host", defText: "the bind host",
			usage: "host clients are told to connect to in Metadata; required when binding every interface",
			set: func(c *config, v string) error {
				c.AdvertisedHost = v
				c.legacyAddrFlags = append(c.legacyAddrFlags, "--advertised-host")
				return nil
			}},
		{flag: "advertised-port", defText: "the bind port",
			usage: "port clients are told to connect to",
			set: intIn(1, 65535, func(c *config, n int) {
				c.AdvertisedPort = n
				c.legacyAddrFlags = append(c.legacyAddrFlags, "--advertised-port")
			})},
		{flag: "max-connections", def: "1024",
			usage: "open client connections; more are refused",
			set:   intIn(1, 1<<20, func(c *config, n int) { c.Loop.MaxConnections = n })},
		{flag: "max-connections-per-addr", def: "256",
			usage: "open connections from one client address (IPv4 address, IPv6 /64); more are refused",
			set:   intIn(1, 1<<20, func(c *config, n int) { c.Loop.MaxConnectionsPerAddr = n })},
		{flag: "frame-timeout-ms", def: "30000",
			usage: "a request must arrive in full this long after its first byte (a new connection: after connecting), else the connection is closed",
			set:   millisIn(1, func(c *config, d time.Duration) { c.Loop.FrameTimeout = d })},
		{flag: "max-frame-size", def: "8388608",
			usage: "largest request frame in bytes; also the decompression budget and the Fetch max_bytes ceiling",
			set:   intIn(1024, 1<<30, func(c *config, n int) { c.Loop.MaxFrameSize, c.Handlers.MaxFrameSize = int32(n), int32(n) })},
		{flag: "idle-timeout-secs", def: "600",
			usage: "close a connection idle this long between requests",
			set:   secondsIn(1, func(c *config, d time.Duration) { c.Loop.IdleTimeout = d })},
		{flag: "shutdown-drain-timeout-secs", def: "25",
			usage: "on SIGTERM/SIGINT, time in-flight requests get to finish (0: close at once)",
			set:   secondsIn(0, func(c *config, d time.Duration) { c.Loop.DrainTimeout = d })},
		{flag: "instance-id", def: "0",
			usage: "0..65535, high bits of the producer ids this gateway hands out; unique per gateway sharing one Iggy",
			set:   intIn(0, 65535, func(c *config, n int) { c.Handlers.InstanceID = uint16(n) })},
		{flag: "event-loops", defText: "GOMAXPROCS",
			usage: "network event loops",
			set:   intIn(1, 1024, func(c *config, n int) { c.Loop.EventLoops = n })},
		{flag: "workers", defText: "4 x GOMAXPROCS",
			usage: "worker goroutines for Produce, Fetch and other store calls",
			set:   intIn(1, 1<<16, func(c *config, n int) { c.Loop.Workers = n })},
		{flag: "queue-depth", def: "4096",
			usage: "jobs queued for the workers before connections are held back",
			set:   intIn(1, 1<<24, func(c *config, n int) { c.Loop.QueueDepth = n })},
		{flag: "max-inflight-per-conn", def: "64",
			usage: "requests in flight on one connection before its reading pauses",
			set:   intIn(1, 1<<16, func(c *config, n int) { c.Loop.MaxInFlightPerConn = n })},
		{flag: "max-buffered-per-conn", defText: "4 x max-frame-size",
			usage: "unread inbound bytes on one connection before it is closed; also the request bytes in flight on it before its reading pauses",
			set:   intIn(1024, 1<<31-1, func(c *config, n int) { c.Loop.MaxBufferedPerConn = n })},
		{flag: "max-outbound-per-conn", def: "8388608",
			usage: "reply bytes queued for writing to one connection (not yet read by its client) before its reading pauses; Fetch answers shrink to fit",
			set:   intIn(64<<10, 1<<31-1, func(c *config, n int) { c.Loop.MaxOutboundPerConn = n })},
		{flag: "write-stall-timeout-secs", def: "30",
			usage: "close a connection over --max-outbound-per-conn whose client reads nothing this long",
			set:   secondsIn(1, func(c *config, d time.Duration) { c.Loop.WriteStallTimeout = d })},
		{flag: "data-dir", def: "./data",
			usage: "directory of the embedded store",
			set:   nonEmpty(func(c *config, v string) { c.Store.DataDir = v })},
		{flag: "fsync", def: "always",
			usage: "what an ack promises: always (synced to disk first), interval, never; on Iggy, the storage settings of the topics the gateway creates (docs/STORAGE.md)",
			set: oneOf([]string{"always", "interval", "never"},
				func(c *config, v string) { c.Store.Fsync = v })},
		{flag: "fsync-interval-ms", def: "100",
			usage: "sync period with --fsync=interval (embedded store only)",
			set:   millisIn(1, func(c *config, d time.Duration) { c.Store.FsyncInterval = d })},
		{flag: "store-cache-mb", def: "256",
			usage: "embedded store: pebble's block cache in MiB, for its metadata (batches are read through the OS page cache)",
			set:   intIn(8, 1<<20, func(c *config, n int) { c.Store.CacheSize = int64(n) << 20 })},
		{flag: "store-timeout-ms", def: "10000",
			usage: "deadline of one embedded-store call; past it the request gets a retriable error (on Iggy: --iggy-call-timeout-ms)",
			set:   millisIn(1, func(c *config, d time.Duration) { c.Store.Timeout = d })},
		{flag: "retention-check-interval-ms", def: "30000",
			usage: "how often the embedded store applies retention.ms and retention.bytes (records past them go within about this long); Iggy applies its own (docs/STORAGE.md)",
			set:   millisIn(10, func(c *config, d time.Duration) { c.Store.RetentionCheck = d })},
		{flag: "stream", env: envPrefix + "IGGY_STREAM", def: "kafka",
			usage: "Iggy stream that holds the Kafka topics",
			set:   nonEmpty(func(c *config, v string) { c.Handlers.Stream = v })},
		{flag: "auto-create-topics", def: "true",
			usage: "create an unknown topic on first Metadata or Produce, as Kafka's auto.create.topics.enable",
			set:   boolVal(func(c *config, b bool) { c.Handlers.AutoCreateTopics = b })},
		{flag: "auto-create-max-per-request", def: "20",
			usage: "topics one Metadata or Produce request may auto-create; the rest are answered LEADER_NOT_AVAILABLE (clients retry)",
			set:   intIn(1, 1<<20, func(c *config, n int) { c.Handlers.AutoCreatePerRequest = n })},
		{flag: "auto-create-per-sec", def: "10",
			usage: "topics auto-created per second, gateway-wide (bursts up to the per-request cap)",
			set:   intIn(1, 1<<20, func(c *config, n int) { c.Handlers.AutoCreatePerSec = n })},
		{flag: "default-partitions", def: "1",
			usage: "partitions of an auto-created topic",
			set:   intIn(1, embedded.MaxPartitions, func(c *config, n int) { c.Handlers.DefaultPartitions = int32(n) })},
		{flag: "node-id", def: "1",
			usage: "broker id this gateway reports in Metadata",
			set:   intIn(0, 1<<31-1, func(c *config, n int) { c.Handlers.NodeID = int32(n) })},
		{flag: "cluster-id", def: "iggy-kafka-gateway",
			usage: "cluster id reported in Metadata",
			set:   nonEmpty(func(c *config, v string) { c.Handlers.ClusterID = v })},
		{flag: "max-fetch-wait-ms", def: "10000",
			usage: "cap on a Fetch's max_wait_ms: longer waits are cut to this",
			set:   millisIn(1, func(c *config, d time.Duration) { c.Handlers.MaxFetchWait = d })},
		{flag: "fetch-concurrency", def: "0",
			usage: "store lookups and polls one Fetch runs at once (0: 8 on --backend iggy, where each is a round trip, 1 on embedded)",
			set:   intIn(0, 256, func(c *config, n int) { c.Handlers.FetchConcurrency = n })},
		{flag: "fetch-session-cache-slots", def: "1000",
			usage: "incremental fetch sessions (KIP-227) kept, as Kafka's max.incremental.fetch.session.cache.slots (0: none, every Fetch sessionless)",
			set:   intIn(0, 1_000_000, func(c *config, n int) { c.Handlers.FetchSessionSlots = fetchSessionSlots(n) })},
		{flag: "fetch-compression", def: "producer",
			usage: "how Fetch sends records a producer compressed: producer (compressed again with the producer's codec, as Kafka's compression.type=producer sends them) or none (uncompressed: less gateway CPU, more bytes on the wire)",
			set:   oneOf([]string{"producer", "none"}, func(c *config, v string) { c.Handlers.FetchUncompressed = v == "none" })},
		{flag: "tail-cache-mb", def: "256",
			usage: "memory in MiB for the Kafka form of recently produced batches, which Fetch sends as they came instead of reading and mapping the store (0: off)",
			set:   intIn(0, 1<<20, func(c *config, n int) { c.Handlers.TailCacheBytes = int64(n) << 20 })},
		{flag: "backend", def: "embedded",
			usage: "store: embedded (in-process, under --data-dir) or iggy (a real Iggy server at --iggy-addr)",
			set:   oneOf([]string{"embedded", "iggy"}, func(c *config, v string) { c.Store.Kind = v })},
		{flag: "iggy-addr", def: "127.0.0.1:8090",
			usage: "Iggy server TCP address (--backend iggy)",
			set:   addr(func(c *config, v string) { c.Store.Iggy.Addr = v })},
		{flag: "iggy-username", def: "iggy",
			usage: "Iggy user the gateway logs in as",
			set:   nonEmpty(func(c *config, v string) { c.Store.Iggy.Username = v })},
		{flag: "iggy-password", defText: "iggy", secret: true,
			usage: "password of --iggy-username; on the command line every local user sees it (ps), so prefer the variable or --iggy-password-file",
			set:   func(c *config, v string) error { c.Store.Iggy.Password = v; c.secretsSet.password = true; return nil }},
		{flag: "iggy-password-file", defText: "none",
			usage: "file holding the password of --iggy-username (one line; a trailing newline is dropped)",
			set:   func(c *config, v string) error { c.iggyPasswordFile = v; return nil }},
		{flag: "iggy-token", defText: "none", secret: true,
			usage: "Iggy personal access token, used instead of username/password; prefer the variable or --iggy-token-file",
			set:   func(c *config, v string) error { c.Store.Iggy.Token = v; c.secretsSet.token = true; return nil }},
		{flag: "iggy-token-file", defText: "none",
			usage: "file holding the Iggy personal access token",
			set:   func(c *config, v string) error { c.iggyTokenFile = v; return nil }},
		{flag: "iggy-state-stream", def: "iggy-kafka-gateway",
			usage: "Iggy stream where the gateway keeps its own state (producer-id marks, the group log, topic configs, DeleteRecords log starts); shared by gateways on one Iggy",
			set:   nonEmpty(func(c *config, v string) { c.Store.Iggy.StateStream = v })},
		{flag: "iggy-weak-topics", def: "warn",
			usage: "existing Iggy topics whose storage settings cannot keep --fsync (Iggy cannot change them): warn, or refuse to start",
			set:   oneOf([]string{"warn", "refuse"}, func(c *config, v string) { c.Store.Iggy.WeakTopics = v })},
		{flag: "iggy-pool-size", def: "4",
			usage: "connections to Iggy; partitions are pinned to one each so their order holds",
			set:   intIn(1, 1024, func(c *config, n int) { c.Store.Iggy.PoolSize = n })},
		{flag: "iggy-call-timeout-ms", def: "10000",
			usage: "deadline of one Iggy request",
			set:   millisIn(1, func(c *config, d time.Duration) { c.Store.Iggy.CallTimeout = d })},
		{flag: "iggy-tls", def: "false",
			usage: "connect to Iggy over TLS",
			set:   boolVal(func(c *config, b bool) { c.Store.Iggy.TLS = b })},
		{flag: "iggy-tls-ca-file", defText: "system roots",
			usage: "PEM file of CAs to trust for Iggy's certificate",
			set:   func(c *config, v string) error { c.Store.Iggy.TLSCAFile = v; return nil }},
		{flag: "iggy-tls-server-name", defText: "host of --iggy-addr",
			usage: "name to verify in Iggy's certificate",
			set:   func(c *config, v string) error { c.Store.Iggy.TLSServerName = v; return nil }},
		{flag: "iggy-tls-insecure-skip-verify", def: "false",
			usage: "skip Iggy certificate checks (self-signed test servers only)",
			set:   boolVal(func(c *config, b bool) { c.Store.Iggy.TLSInsecureSkipVerify = b })},
		{flag: "metrics-addr", defText: "off",
			usage: "host:port serving Prometheus /metrics; :port means loopback, a non-loopback host is warned about",
			set:   addr(func(c *config, v string) { c.MetricsAddr = v })},
		{flag: "pprof-addr", defText: "off",
			usage: "host:port serving /debug/pprof/ (secrets redacted from its cmdline); :port means loopback, a non-loopback host is warned about",
			set:   addr(func(c *config, v string) { c.PprofAddr = v })},
		{flag: "log-level", def: "info",
			usage: "debug, info, warn or error",
			set: func(c *config, v string) error {
				var l slog.Level
				if err := l.UnmarshalText([]byte(v)); err != nil {
					return errors.New("want debug, info, warn or error")
				}
				c.LogLevel = l
				return nil
			}},
		{flag: "log-format", def: "text",
			usage: "text or json",
			set:   oneOf([]string{"text", "json"}, func(c *config, v string) { c.LogFormat = v })},
	}
	opts = append(opts, saslOptions()...)
	opts = append(opts, authzOptions()...)
	opts = append(opts, listenerOptions()...)
	opts = append(opts, clusterOptions()...)
	opts = append(opts, groupOptions()...)
	for i := range opts {
		if opts[i].env == "" {
			opts[i].env = envName(opts[i].flag)
		}
	}
	return opts
}

// optValue adapts an option to flag.Value.
type optValue struct {
	c   *config
	o   *option
	cur string
}

func (v *optValue) String() string { return v.cur }
func (v *optValue) Set(s string) error {
	if err := v.o.set(v.c, s); err != nil {
		return err
	}
	v.cur = s
	return nil
}

// IsBoolFlag lets the boolean flags stand alone, like Go bool flags.
func (v *optValue) IsBoolFlag() bool {
	switch v.o.flag {
	case "auto-create-topics", "iggy-tls", "iggy-tls-insecure-skip-verify", "allow-anonymous":
		return true
	}
	return false
}

// boolVal parses true/false (and Go's other bool spellings).
func boolVal(set func(c *config, b bool)) func(c *config, v string) error {
	return func(c *config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("want true or false")
		}
		set(c, b)
		return nil
	}
}

// parseConfig builds the configuration from defaults, then the environment,
// then the command line, so a flag beats its variable. It returns
// flag.ErrHelp for -h/--help (print usageText then).
func parseConfig(args, environ []string) (config, error) {
	var c config
	opts := options()
	byEnv := make(map[string]*option, len(opts))
	for i := range opts {
		o := &opts[i]
		byEnv[o.env] = o
		if o.def != "" {
			if err := o.set(&c, o.def); err != nil {
				panic(fmt.Sprintf("default of --%s: %v", o.flag, err))
			}
		}
	}
	c.legacyAddrFlags = nil // the defaults were not given

	// Sorted so the first error is the same on every run.
	var env []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, envPrefix) {
			env = append(env, kv)
		}
	}
	sort.Strings(env)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if envIgnored[k] {
			continue
		}
		o := byEnv[k]
		if o == nil {
			return c, fmt.Errorf("unknown environment variable %s (see --help for the %s* variables)", k, envPrefix)
		}
		if err := o.set(&c, v); err != nil {
			if o.secret {
				v = redacted
			}
			return c, fmt.Errorf("environment variable %s=%q: %v", k, v, err)
		}
	}

	fs := flag.NewFlagSet("iggy-kafka-gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // main prints errors and help itself
	fs.Usage = func() {}
	for i := range opts {
		fs.Var(&optValue{c: &c, o: &opts[i]}, opts[i].flag, opts[i].usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		// The flag package already names the flag ("invalid value "x"
		// for flag -fsync: ...").
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (every setting is a --flag)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		for i := range opts {
			if opts[i].flag == f.Name && opts[i].secret {
				c.SecretFlagsOnCmdline = strings.TrimSpace(c.SecretFlagsOnCmdline + " --" + f.Name)
			}
		}
	})
	if err := c.readSecretFiles(); err != nil {
		return c, err
	}
	return c, c.resolve()
}

// resolve fills the derived defaults and checks settings against each other.
func (c *config) resolve() error {
	if err := c.resolveBindAddr(); err != nil {
		return err
	}
	if l := c.Loop; l.MaxBufferedPerConn != 0 && l.MaxBufferedPerConn < int(l.MaxFrameSize) {
		return fmt.Errorf("--max-buffered-per-conn %d is below --max-frame-size %d: a single largest request could never be read",
			l.MaxBufferedPerConn, l.MaxFrameSize)
	}
	if err := c.resolveAuthz(); err != nil {
		return err
	}
	if err := c.resolveCluster(); err != nil {
		return err
	}
	if err := c.resolveGroups(); err != nil {
		return err
	}
	if err := c.resolveSasl(); err != nil {
		return err
	}
	return c.resolveListeners()
}

// resolveBindAddr checks --bind-addr and fills the advertised address of
// the single default listener (unused with --listeners).
func (c *config) resolveBindAddr() error {
	if c.listenersSet {
		return nil
	}
	host, portStr, err := net.SplitHostPort(c.BindAddr)
	if err != nil {
		return fmt.Errorf("--bind-addr %q: %v", c.BindAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("--bind-addr %q: bad port", c.BindAddr)
	}
	if c.AdvertisedHost == "" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return fmt.Errorf("--advertised-host (%s) is required when --bind-addr %q binds every interface: clients must be told an address they can reach",
				envName("advertised-host"), c.BindAddr)
		}
		c.AdvertisedHost = host
	}
	if c.AdvertisedPort == 0 {
		if port == 0 {
			return fmt.Errorf("--advertised-port (%s) is required when --bind-addr %q picks a random port",
				envName("advertised-port"), c.BindAddr)
		}
		c.AdvertisedPort = port
	}
	return nil
}

// usageText is the --help output: every flag with its variable and default.
func usageText() string {
	var b strings.Builder
	b.WriteString("iggy-kafka-gateway: serves the Kafka wire protocol on Apache Iggy's storage model.\n\n")
	b.WriteString("Usage: iggy-kafka-gateway [--flag=value ...]\n\n")
	b.WriteString("Every flag can also be set by its environment variable; a flag beats its variable.\n")
	b.WriteString("An unknown " + envPrefix + "* variable is a startup error.\n\n")
	for _, o := range options() {
		fmt.Fprintf(&b, "  --%s\n", o.flag)
		fmt.Fprintf(&b, "        %s\n", o.usage)
		fmt.Fprintf(&b, "        env %s, default %s\n", o.env, o.defaultText())
	}
	return b.String()
}

func (o option) defaultText() string {
	if o.defText != "" {
		return o.defText
	}
	return o.def
}

// markdownTable is the flags table of README.md and docs/CONFIG.md.
func markdownTable() string {
	var b strings.Builder
	b.WriteString("| Flag | Variable | Default | Meaning |\n")
	b.WriteString("| --- | --- | --- | --- |\n")
	for _, o := range options() {
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s |\n", o.flag, o.env, mdDefault(o), o.usage)
	}
	return b.String()
}

func mdDefault(o option) string {
	if o.defText != "" {
		return o.defText
	}
	return "`" + o.def + "`"
}

// Parsers. Each error says what is wanted; parseConfig adds the name.

func intIn(lo, hi int, store func(*config, int)) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want an integer in %d..%d", lo, hi)
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is outside %d..%d", n, lo, hi)
		}
		store(c, n)
		return nil
	}
}

func secondsIn(lo int, store func(*config, time.Duration)) func(*config, string) error {
	return intIn(lo, 86400*365, func(c *config, n int) { store(c, time.Duration(n)*time.Second) })
}

func millisIn(lo int, store func(*config, time.Duration)) func(*config, string) error {
	return intIn(lo, 86400*1000, func(c *config, n int) { store(c, time.Duration(n)*time.Millisecond) })
}

func nonEmpty(store func(*config, string)) func(*config, string) error {
	return func(c *config, v string) error {
		if v == "" {
			return errors.New("must not be empty")
		}
		store(c, v)
		return nil
	}
}

func oneOf(allowed []string, store func(*config, string)) func(*config, string) error {
	return func(c *config, v string) error {
		for _, a := range allowed {
			if v == a {
				store(c, v)
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(allowed, ", "))
	}
}

func addr(store func(*config, string)) func(*config, string) error {
	return func(c *config, v string) error {
		if v != "" {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("want host:port: %v", err)
			}
		}
		store(c, v)
		return nil
	}
}

// fetchSessionSlots maps --fetch-session-cache-slots, where 0 means none as
// on Kafka, to handlers.Config.FetchSessionSlots, where 0 is the default.
func fetchSessionSlots(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
