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
	// tokenSecretFile holds Handlers.Tokens.Secret (tokens.go).
	tokenSecretFile string
	// secretsSet records which secrets were given (by flag or variable),
	// to refuse a secret given twice (value and file).
	secretsSet struct{ password, token, tokenSecret bool }
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
	// set parses a value into the config the table was built for
	// (optionsFor); its error says what is wanted, parseConfig adds the
	// name.
	set func(v string) error
	// secret values never appear in errors, logs or /debug/pprof/cmdline
	// (secrets.go).
	secret bool
}

func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// options is the option table bound to a config of its own, for what
// reads only the names, defaults and usage (--help, the docs tables, the
// secret flags).
func options() []option { return optionsFor(new(config)) }

// optionsFor is the option table whose setters write into c.
func optionsFor(c *config) []option {
	opts := []option{
		{flag: "bind-addr", def: "127.0.0.1:9092",
			usage: "host:port the Kafka listener binds",
			set:   c.singleListener("--bind-addr", text(&c.BindAddr))},
		{flag: "advertised-host", defText: "the bind host",
			usage: "host clients are told to connect to in Metadata; required when binding every interface",
			set:   c.singleListener("--advertised-host", text(&c.AdvertisedHost))},
		{flag: "advertised-port", defText: "the bind port",
			usage: "port clients are told to connect to",
			set:   c.singleListener("--advertised-port", intIn(1, 65535, to(&c.AdvertisedPort)))},
		{flag: "max-connections", def: "1024",
			usage: "open client connections; more are refused",
			set:   intIn(1, 1<<20, to(&c.Loop.MaxConnections))},
		{flag: "max-connections-per-addr", def: "256",
			usage: "open connections from one client address (IPv4 address, IPv6 /64); more are refused",
			set:   intIn(1, 1<<20, to(&c.Loop.MaxConnectionsPerAddr))},
		{flag: "frame-timeout-ms", def: "30000",
			usage: "a request must arrive in full this long after its first byte (a new connection: after connecting), else the connection is closed",
			set:   millisIn(1, to(&c.Loop.FrameTimeout))},
		{flag: "max-frame-size", def: "8388608",
			usage: "largest request frame in bytes; also the decompression budget and the Fetch max_bytes ceiling",
			set:   intIn(1024, 1<<30, func(n int32) { c.Loop.MaxFrameSize, c.Handlers.MaxFrameSize = n, n })},
		{flag: "idle-timeout-secs", def: "600",
			usage: "close a connection idle this long between requests",
			set:   secondsIn(1, to(&c.Loop.IdleTimeout))},
		{flag: "shutdown-drain-timeout-secs", def: "25",
			usage: "on SIGTERM/SIGINT, time in-flight requests get to finish (0: close at once)",
			set:   secondsIn(0, to(&c.Loop.DrainTimeout))},
		{flag: "instance-id", def: "0",
			usage: "0..65535, high bits of the producer ids this gateway hands out; unique per gateway sharing one Iggy",
			set:   intIn(0, 65535, to(&c.Handlers.InstanceID))},
		{flag: "event-loops", defText: "GOMAXPROCS",
			usage: "network event loops",
			set:   intIn(1, 1024, to(&c.Loop.EventLoops))},
		{flag: "workers", defText: "4 x GOMAXPROCS",
			usage: "worker goroutines for Produce, Fetch and other store calls",
			set:   intIn(1, 1<<16, to(&c.Loop.Workers))},
		{flag: "queue-depth", def: "4096",
			usage: "jobs queued for the workers before connections are held back",
			set:   intIn(1, 1<<24, to(&c.Loop.QueueDepth))},
		{flag: "max-inflight-per-conn", def: "64",
			usage: "requests in flight on one connection before its reading pauses",
			set:   intIn(1, 1<<16, to(&c.Loop.MaxInFlightPerConn))},
		{flag: "max-buffered-per-conn", defText: "4 x max-frame-size",
			usage: "request bytes in flight on one connection before its reading pauses (the connection is muted: slowed by TCP, not closed)",
			set:   intIn(1024, 1<<31-1, to(&c.Loop.MaxBufferedPerConn))},
		{flag: "max-outbound-per-conn", def: "8388608",
			usage: "reply bytes queued for writing to one connection (not yet read by its client) before its reading pauses; Fetch answers shrink to fit",
			set:   intIn(64<<10, 1<<31-1, to(&c.Loop.MaxOutboundPerConn))},
		{flag: "write-stall-timeout-secs", def: "30",
			usage: "close a connection over --max-outbound-per-conn whose client reads nothing this long",
			set:   secondsIn(1, to(&c.Loop.WriteStallTimeout))},
		{flag: "data-dir", def: "./data",
			usage: "directory of the embedded store",
			set:   nonEmpty(to(&c.Store.DataDir))},
		{flag: "fsync", def: "always",
			usage: "what an ack promises: always (synced to disk first), interval, never; on Iggy, the storage settings of the topics the gateway creates (docs/STORAGE.md)",
			set:   oneOf([]string{"always", "interval", "never"}, to(&c.Store.Fsync))},
		{flag: "fsync-interval-ms", def: "100",
			usage: "sync period with --fsync=interval (embedded store only)",
			set:   millisIn(1, to(&c.Store.FsyncInterval))},
		{flag: "store-cache-mb", def: "256",
			usage: "embedded store: pebble's block cache in MiB, for its metadata (batches are read through the OS page cache)",
			set:   intIn(8, 1<<20, mebibytes(&c.Store.CacheSize))},
		{flag: "store-timeout-ms", def: "10000",
			usage: "deadline of one embedded-store call; past it the request gets a retriable error (on Iggy: --iggy-call-timeout-ms)",
			set:   millisIn(1, to(&c.Store.Timeout))},
		{flag: "retention-check-interval-ms", def: "30000",
			usage: "how often the embedded store applies retention.ms and retention.bytes (records past them go within about this long); Iggy applies its own (docs/STORAGE.md)",
			set:   millisIn(10, to(&c.Store.RetentionCheck))},
		{flag: "stream", env: envPrefix + "IGGY_STREAM", def: "kafka",
			usage: "Iggy stream that holds the Kafka topics",
			set:   nonEmpty(to(&c.Handlers.Stream))},
		{flag: "auto-create-topics", def: "true",
			usage: "create an unknown topic on first Metadata or Produce, as Kafka's auto.create.topics.enable",
			set:   boolVal(to(&c.Handlers.AutoCreateTopics))},
		{flag: "auto-create-max-per-request", def: "20",
			usage: "topics one Metadata or Produce request may auto-create; the rest are answered LEADER_NOT_AVAILABLE (clients retry)",
			set:   intIn(1, 1<<20, to(&c.Handlers.AutoCreatePerRequest))},
		{flag: "auto-create-per-sec", def: "10",
			usage: "topics auto-created per second, gateway-wide (bursts up to the per-request cap)",
			set:   intIn(1, 1<<20, to(&c.Handlers.AutoCreatePerSec))},
		{flag: "default-partitions", def: "1",
			usage: "partitions of an auto-created topic",
			set:   intIn(1, embedded.MaxPartitions, to(&c.Handlers.DefaultPartitions))},
		{flag: "node-id", def: "1",
			usage: "broker id this gateway reports in Metadata",
			set:   intIn(0, 1<<31-1, to(&c.Handlers.NodeID))},
		{flag: "cluster-id", def: "iggy-kafka-gateway",
			usage: "cluster id reported in Metadata",
			set:   nonEmpty(to(&c.Handlers.ClusterID))},
		{flag: "max-fetch-wait-ms", def: "10000",
			usage: "cap on a Fetch's max_wait_ms: longer waits are cut to this",
			set:   millisIn(1, to(&c.Handlers.MaxFetchWait))},
		{flag: "fetch-concurrency", def: "0",
			usage: "store lookups and polls one Fetch runs at once (0: 8 on --backend iggy, where each is a round trip, 1 on embedded)",
			set:   intIn(0, 256, to(&c.Handlers.FetchConcurrency))},
		{flag: "fetch-session-cache-slots", def: "1000",
			usage: "incremental fetch sessions (KIP-227) kept, as Kafka's max.incremental.fetch.session.cache.slots (0: none, every Fetch sessionless)",
			set:   intIn(0, 1_000_000, func(n int) { c.Handlers.FetchSessionSlots = fetchSessionSlots(n) })},
		{flag: "fetch-compression", def: "producer",
			usage: "how Fetch sends records a producer compressed: producer (compressed again with the producer's codec, as Kafka's compression.type=producer sends them) or none (uncompressed: less gateway CPU, more bytes on the wire)",
			set:   oneOf([]string{"producer", "none"}, func(v string) { c.Handlers.FetchUncompressed = v == "none" })},
		{flag: "tail-cache-mb", def: "256",
			usage: "memory in MiB for the Kafka form of recently produced batches, which Fetch sends as they came instead of reading and mapping the store (0: off)",
			set:   intIn(0, 1<<20, mebibytes(&c.Handlers.TailCacheBytes))},
		{flag: "transactions", def: "refuse",
			usage: "Kafka transactions (exactly-once): refuse (as the Rust gateway: transactional producers fail at initTransactions) or enabled (the gateway is their coordinator; docs/TRANSACTIONS.md)",
			set:   oneOf([]string{"refuse", "enabled"}, func(v string) { c.Handlers.Transactions.Enabled = v == "enabled" })},
		{flag: "transaction-version", defText: "2; 1 with --cluster-etcd-endpoints",
			usage: "with --transactions enabled, the transaction.version finalized: 2 (KIP-890: Java 4.x clients add partitions implicitly and bump the epoch per transaction) or 1 (the protocol before it; the only one in cluster mode)",
			set:   intIn(1, 2, to(&c.Handlers.Transactions.Version))},
		{flag: "transaction-max-timeout-ms", def: "900000",
			usage: "largest transaction.timeout.ms a producer may ask for (Kafka's transaction.max.timeout.ms); larger is INVALID_TRANSACTION_TIMEOUT",
			set:   millisIn(1, to(&c.Handlers.Transactions.MaxTimeout))},
		{flag: "transaction-max-ids", def: "100000",
			usage: "transactional ids kept at once (memory bound); a new id past it is answered COORDINATOR_LOAD_IN_PROGRESS until idle ones expire (7 days)",
			set:   intIn(1, 1<<30, to(&c.Handlers.Transactions.MaxIDs))},
		{flag: "share-groups", def: "enabled",
			usage: "share groups (KIP-932, Kafka's queues): enabled (KafkaShareConsumer and kafka-share-groups work; docs/SHARE_GROUPS.md) or disabled (the share keys are not advertised)",
			set:   oneOf([]string{"enabled", "disabled"}, func(v string) { c.Handlers.Shares.Disabled = v == "disabled" })},
		{flag: "streams-groups", def: "enabled",
			usage: "streams groups (KIP-1071, Kafka Streams with group.protocol=streams): enabled (docs/CONSUMER_GROUPS.md) or disabled (keys 88, 89 and 93 and streams.version are not advertised; Streams apps use the classic protocol)",
			set:   oneOf([]string{"enabled", "disabled"}, func(v string) { c.Handlers.StreamsGroupsDisabled = v == "disabled" })},
		{flag: "share-max-sessions", def: "2000",
			usage: "share sessions kept at once (Kafka's group.share.max.share.sessions); a new one past it is SHARE_SESSION_LIMIT_REACHED",
			set:   intIn(1, 1<<20, to(&c.Handlers.Shares.Limits.MaxSessions))},
		{flag: "share-max-members", def: "200",
			usage: "members per share group (Kafka's group.share.max.size); a join past it is GROUP_MAX_SIZE_REACHED",
			set:   intIn(1, 1<<20, to(&c.Handlers.Shares.Limits.MaxMembers))},
		{flag: "share-max-record-locks", def: "2000",
			usage: "in-flight records per share partition by default (Kafka's group.share.partition.max.record.locks); a group's share.partition.max.record.locks (100-4000) overrides it",
			set:   intIn(100, 4000, to(&c.Handlers.Shares.Limits.MaxInFlight))},
		{flag: "share-max-groups", def: "10000",
			usage: "share groups kept at once (memory bound); a new one past it is refused",
			set:   intIn(1, 1<<24, to(&c.Handlers.Shares.Limits.MaxGroups))},
		{flag: "backend", def: "embedded",
			usage: "store: embedded (in-process, under --data-dir) or iggy (a real Iggy server at --iggy-addr)",
			set:   oneOf([]string{"embedded", "iggy"}, to(&c.Store.Kind))},
		{flag: "iggy-addr", def: "127.0.0.1:8090",
			usage: "Iggy server TCP address (--backend iggy)",
			set:   addr(to(&c.Store.Iggy.Addr))},
		{flag: "iggy-username", def: "iggy",
			usage: "Iggy user the gateway logs in as",
			set:   nonEmpty(to(&c.Store.Iggy.Username))},
		{flag: "iggy-password", defText: "iggy", secret: true,
			usage: "password of --iggy-username; on the command line every local user sees it (ps), so prefer the variable or --iggy-password-file",
			set:   given(&c.secretsSet.password, text(&c.Store.Iggy.Password))},
		{flag: "iggy-password-file", defText: "none",
			usage: "file holding the password of --iggy-username (one line; a trailing newline is dropped)",
			set:   text(&c.iggyPasswordFile)},
		{flag: "iggy-token", defText: "none", secret: true,
			usage: "Iggy personal access token, used instead of username/password; prefer the variable or --iggy-token-file",
			set:   given(&c.secretsSet.token, text(&c.Store.Iggy.Token))},
		{flag: "iggy-token-file", defText: "none",
			usage: "file holding the Iggy personal access token",
			set:   text(&c.iggyTokenFile)},
		{flag: "iggy-state-stream", def: "iggy-kafka-gateway",
			usage: "Iggy stream where the gateway keeps its own state (producer-id marks, the group log, topic configs, DeleteRecords log starts); shared by gateways on one Iggy",
			set:   nonEmpty(to(&c.Store.Iggy.StateStream))},
		{flag: "iggy-weak-topics", def: "warn",
			usage: "existing Iggy topics whose storage settings cannot keep --fsync (Iggy cannot change them): warn, or refuse to start",
			set:   oneOf([]string{"warn", "refuse"}, to(&c.Store.Iggy.WeakTopics))},
		{flag: "iggy-pool-size", def: "4",
			usage: "connections to Iggy; partitions are pinned to one each so their order holds",
			set:   intIn(1, 1024, to(&c.Store.Iggy.PoolSize))},
		{flag: "iggy-call-timeout-ms", def: "10000",
			usage: "deadline of one Iggy request",
			set:   millisIn(1, to(&c.Store.Iggy.CallTimeout))},
		{flag: "iggy-tls", def: "false",
			usage: "connect to Iggy over TLS",
			set:   boolVal(to(&c.Store.Iggy.TLS))},
		{flag: "iggy-tls-ca-file", defText: "system roots",
			usage: "PEM file of CAs to trust for Iggy's certificate",
			set:   text(&c.Store.Iggy.TLSCAFile)},
		{flag: "iggy-tls-server-name", defText: "host of --iggy-addr",
			usage: "name to verify in Iggy's certificate",
			set:   text(&c.Store.Iggy.TLSServerName)},
		{flag: "iggy-tls-insecure-skip-verify", def: "false",
			usage: "skip Iggy certificate checks (self-signed test servers only)",
			set:   boolVal(to(&c.Store.Iggy.TLSInsecureSkipVerify))},
		{flag: "metrics-addr", defText: "off",
			usage: "host:port serving Prometheus /metrics; :port means loopback, a non-loopback host is warned about",
			set:   addr(to(&c.MetricsAddr))},
		{flag: "pprof-addr", defText: "off",
			usage: "host:port serving /debug/pprof/ (secrets redacted from its cmdline); :port means loopback, a non-loopback host is warned about",
			set:   addr(to(&c.PprofAddr))},
		{flag: "log-level", def: "info",
			usage: "debug, info, warn or error",
			set: func(v string) error {
				var l slog.Level
				if err := l.UnmarshalText([]byte(v)); err != nil {
					return errors.New("want debug, info, warn or error")
				}
				c.LogLevel = l
				return nil
			}},
		{flag: "log-format", def: "text",
			usage: "text or json",
			set:   oneOf([]string{"text", "json"}, to(&c.LogFormat))},
	}
	// Each subject's file holds its own options.
	for _, more := range []func(*config) []option{saslOptions, authzOptions, listenerOptions, clusterOptions, groupOptions, tokenOptions} {
		opts = append(opts, more(c)...)
	}
	for i := range opts {
		if opts[i].env == "" {
			opts[i].env = envName(opts[i].flag)
		}
	}
	return opts
}

// optValue adapts an option to flag.Value.
type optValue struct {
	o   *option
	cur string
}

func (v *optValue) String() string { return v.cur }
func (v *optValue) Set(s string) error {
	if err := v.o.set(s); err != nil {
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

// parseConfig builds the configuration from defaults, then the environment,
// then the command line, so a flag beats its variable. It returns
// flag.ErrHelp for -h/--help (print usageText then).
func parseConfig(args, environ []string) (config, error) {
	var c config
	opts := optionsFor(&c)
	byEnv := make(map[string]*option, len(opts))
	for i := range opts {
		o := &opts[i]
		byEnv[o.env] = o
		if o.def != "" {
			if err := o.set(o.def); err != nil {
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
		if err := o.set(v); err != nil {
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
		fs.Var(&optValue{o: &opts[i]}, opts[i].flag, opts[i].usage)
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

// resolve fills the derived defaults and checks settings against each
// other, in this order: the first error is the one reported.
func (c *config) resolve() error {
	for _, step := range []func() error{c.resolveBindAddr, c.checkBuffered, c.resolveAuthz, c.resolveCluster, c.resolveTransactions,
		c.resolveGroups, c.resolveSasl, c.resolveListeners} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkBuffered refuses a per-connection buffer below the largest frame.
func (c *config) checkBuffered() error {
	if l := c.Loop; l.MaxBufferedPerConn != 0 && l.MaxBufferedPerConn < int(l.MaxFrameSize) {
		return fmt.Errorf("--max-buffered-per-conn %d is below --max-frame-size %d: a single largest request could never be read",
			l.MaxBufferedPerConn, l.MaxFrameSize)
	}
	return nil
}

// resolveBindAddr checks --bind-addr and fills the advertised address of
// the single default listener (unused with --listeners).
func (c *config) resolveBindAddr() error {
	if c.listenersSet {
		return nil
	}
	host, _, port, err := splitHostPort(c.BindAddr)
	if err != nil {
		return fmt.Errorf("--bind-addr %q: %v", c.BindAddr, err)
	}
	if c.AdvertisedHost == "" {
		if bindsEveryInterface(host) {
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

// splitHostPort is net.SplitHostPort that also reads the port, which
// must be a number in 0..65535 (0: the kernel picks one).
func splitHostPort(hp string) (host, port string, n int, err error) {
	if host, port, err = net.SplitHostPort(hp); err != nil {
		return "", "", 0, err
	}
	if n, err = strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", "", 0, errors.New("bad port")
	}
	return host, port, n, nil
}

// bindsEveryInterface reports a bind host that is no one address clients
// could be told: empty, 0.0.0.0 or ::.
func bindsEveryInterface(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
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

// Setters. Each parses a value and hands it to a store, which writes the
// config (to(&field), or a closure where one value sets more); its error
// says what is wanted, and parseConfig adds the option's name.

// to is the store that writes a parsed value into *p.
func to[T any](p *T) func(T) { return func(v T) { *p = v } }

// text takes any value as given, the empty one included.
func text(p *string) func(string) error {
	return func(v string) error { *p = v; return nil }
}

// given records in *seen that set took a value: an option whose presence
// matters beside its value (--listeners, a secret also given as a file).
func given(seen *bool, set func(string) error) func(string) error {
	return func(v string) error {
		if err := set(v); err != nil {
			return err
		}
		*seen = true
		return nil
	}
}

// singleListener records that set took a value of flag, one of the
// single-listener flags --listeners replaces (resolveListeners refuses
// both).
func (c *config) singleListener(flag string, set func(string) error) func(string) error {
	return func(v string) error {
		if err := set(v); err != nil {
			return err
		}
		c.legacyAddrFlags = append(c.legacyAddrFlags, flag)
		return nil
	}
}

// intIn parses an integer in lo..hi and stores it as the field's type.
func intIn[T ~int | ~int16 | ~int32 | ~int64 | ~uint16](lo, hi int, store func(T)) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("want an integer in %d..%d", lo, hi)
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is outside %d..%d", n, lo, hi)
		}
		store(T(n))
		return nil
	}
}

// mebibytes stores a count of MiB as bytes.
func mebibytes(p *int64) func(int64) { return func(n int64) { *p = n << 20 } }

func secondsIn(lo int, store func(time.Duration)) func(string) error {
	return intIn(lo, 86400*365, func(n int) { store(time.Duration(n) * time.Second) })
}

func millisIn(lo int, store func(time.Duration)) func(string) error {
	return intIn(lo, 86400*1000, func(n int) { store(time.Duration(n) * time.Millisecond) })
}

// durationFrom parses a Go duration (30m, 1h): 0, or at least lo. syntax
// is the error for what is not a duration or is negative; zero says what
// 0 means.
func durationFrom(lo time.Duration, syntax, zero string, store func(time.Duration)) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return errors.New(syntax)
		}
		if d != 0 && d < lo {
			return fmt.Errorf("want at least %v (or 0: %s)", lo, zero)
		}
		store(d)
		return nil
	}
}

// boolVal parses true/false (and Go's other bool spellings).
func boolVal(store func(bool)) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("want true or false")
		}
		store(b)
		return nil
	}
}

func nonEmpty(store func(string)) func(string) error {
	return func(v string) error {
		if v == "" {
			return errors.New("must not be empty")
		}
		store(v)
		return nil
	}
}

func oneOf(allowed []string, store func(string)) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				store(v)
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(allowed, ", "))
	}
}

func addr(store func(string)) func(string) error {
	return func(v string) error {
		if v != "" {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("want host:port: %v", err)
			}
		}
		store(v)
		return nil
	}
}

// listItems are the items of a sep-separated list, trimmed, the empty
// ones dropped.
func listItems(v, sep string) []string {
	var out []string
	for _, it := range strings.Split(v, sep) {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// fetchSessionSlots maps --fetch-session-cache-slots, where 0 means none as
// on Kafka, to handlers.Config.FetchSessionSlots, where 0 is the default.
func fetchSessionSlots(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
