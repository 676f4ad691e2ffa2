package handlers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/group"
	"github.com/iggy-kafka/gateway/internal/fetchcache"
	"github.com/iggy-kafka/gateway/share"
	"github.com/iggy-kafka/gateway/txn"
)

// Config is what handlers need to know about this gateway.
type Config struct {
	Stream            string // Iggy stream that holds Kafka topics
	AdvertisedHost    string
	AdvertisedPort    int32
	NodeID            int32
	ClusterID         string
	AutoCreateTopics  bool
	DefaultPartitions int32
	InstanceID        uint16
	MaxFrameSize      int32 // also the decompression budget and Fetch max_bytes ceiling
	MaxFetchWait      time.Duration
	// FetchConcurrency is how many store lookups and polls one Fetch may
	// run at once (fetch_pipeline.go); 0 or 1: one after another.
	FetchConcurrency int
	MaxMessageSize   int          // cap on one Iggy message (payload + headers)
	Groups           group.Config // consumer-group coordinator (zero fields: defaults)
	// Auto-creation limits (topics.go); 0: the defaults, 20 and 10.
	AutoCreatePerRequest int // topics one request may auto-create
	AutoCreatePerSec     int // topics auto-created per second, gateway-wide (burst: max of the two)
	// Sasl turns SASL on for the listener (sasl.go); nil: off.
	Sasl *SaslConfig
	// Authz turns Kafka ACL authorization on (authz.go); zero: off.
	Authz AuthzConfig
	// Tokens are the delegation tokens' settings (tokens.go); without a
	// secret: off.
	Tokens TokenConfig
	// Cluster is this gateway's membership of a cluster of gateways over
	// one Iggy (cluster.go, docs/CLUSTER.md); nil: a one-node cluster.
	Cluster *cluster.Node
	// FetchSessionSlots caps the incremental fetch sessions (KIP-227)
	// the gateway keeps (fetch_sessions.go); 0: DefaultFetchSessionSlots,
	// < 0: none (every Fetch is answered sessionless).
	FetchSessionSlots int
	// FetchUncompressed answers Fetch with uncompressed batches even for
	// records the producer compressed (docs/MAPPING.md, kafka.codec):
	// less gateway CPU, more bytes on the wire.
	FetchUncompressed bool
	// TailCacheBytes is the memory the tail cache (package fetchcache) may
	// hold: the Kafka form of recently produced batches, which Fetch
	// sends as they came; 0 or less: no cache.
	TailCacheBytes int64
	// Transactions turns the transaction coordinator on (txn.go); the
	// zero value refuses transactions, as the gateway always did.
	Transactions TxnConfig
	// Shares bounds share groups or turns them off (share.go).
	Shares ShareConfig
	// StreamsGroupsDisabled leaves streams groups (KIP-1071) out: keys 88,
	// 89 and 93 and the streams.version feature.
	StreamsGroupsDisabled bool
	// LogLevel is the level of the gateway's logger (Log), which
	// IncrementalAlterConfigs of the BROKER_LOGGER resource changes
	// (broker_loggers.go); nil: the level cannot change.
	LogLevel *slog.LevelVar
}

// Gateway is the state shared by every call. Fields are set before the
// gateway serves and never replaced; each is safe for concurrent use.
type Gateway struct {
	Cfg   Config
	Store bridge.Backend
	// Format is the store's batch format (Store.Capabilities().Format):
	// Produce encodes with it, Fetch and ListOffsets decode with it.
	Format    bridge.BatchFormat
	Producers *ProducerIDs
	Idem      Idempotence // idempotent producer state; the zero value is ready
	Watch     *Watchers
	Groups    *group.Coordinator // consumer-group coordinator (package group)
	Log       *slog.Logger
	// Sec holds ACLs and Kafka-managed SCRAM credentials (authz.go).
	Sec *Security

	// autoCreate paces auto-creation; createMu serializes topic creation
	// with its collision check (topics.go). Zero values are ready.
	autoCreate tokenBucket
	createMu   sync.Mutex
	// fetchRatios sizes Fetch's store reads (fetch_pipeline.go).
	fetchRatios fetchcache.Ratios
	// fetchSessions is the incremental fetch session cache
	// (fetch_sessions.go).
	fetchSessions *fetchSessions
	// tail is the tail cache (package fetchcache); nil: off.
	tail *fetchcache.Tail
	// topicNames resolves topic ids (topic_ids.go).
	topicNames topicNames
	// features are the feature flags ApiVersions advertises
	// (features.go).
	features featureSet
	// apiKeys is what ApiVersions lists (advertisedKeys).
	apiKeys []kmsg.ApiVersionsResponseApiKey
	// Txn is the transaction coordinator (txn.go); nil when transactions
	// are refused (Config.Transactions off).
	Txn *txn.Coordinator
	// Share is the share-group coordinator (share.go); nil when share
	// groups are not served.
	Share *share.Coordinator
	// txnStop ends the coordinator's timeout loop (CloseTransactions).
	txnStop context.CancelFunc
	// afterTxnCheck, when set (tests), runs between a transactional
	// batch's coordinator check and its append.
	afterTxnCheck func()
	// policies caches what Produce must know of each topic's configs
	// (topic_policy.go). The zero value is ready.
	policies policyCache
	// topicInfos caches the topic headers Produce reads over the network
	// (topic_info_cache.go); NewGateway turns it on for such a store (its
	// zero value is off).
	topicInfos topicInfoCache
	// fetchStates caches the topic states Fetch reads in one call over
	// the network (fetch_state_cache.go); NewGateway turns it on for such
	// a store.
	fetchStates fetchStateCache
	// brokerCfg caches the dynamic broker configs Produce needs
	// (broker_configs.go). The zero value is ready.
	brokerCfg brokerCache
	// quotas measures the client quotas (quotas.go). The zero value is
	// ready.
	quotas quotaSensors
}

// Endpoint is a host and port a listener advertises.
type Endpoint struct {
	Host string
	Port int32
}

// advertised is where this call's client is told the broker is.
func (c *Call) advertised() (string, int32) {
	if c.Advertised != nil {
		return c.Advertised.Host, c.Advertised.Port
	}
	return c.G.Cfg.AdvertisedHost, c.G.Cfg.AdvertisedPort
}

// PartitionKey names one Kafka partition.
type PartitionKey struct {
	Topic     string
	Partition int32
}

// Wait is a parked call: re-run it when any of Keys is signalled or at
// Until, whichever comes first.
type Wait struct {
	Keys  []PartitionKey
	Until time.Time
	// Since is Watchers.Generation(Keys) taken before the handler read
	// the data it found lacking; a signal after that wakes the call even
	// if it came before the watch was registered (no lost wake-up).
	Since uint64
}

// OrderReleaser is what the loop gives a call so it can end the wait of
// the connection's next request early (Call.ReleaseOrder).
type OrderReleaser interface {
	// ReleaseOrder starts the connection's next request now rather than
	// when this one ends. Idempotent. The goroutine running the call.
	ReleaseOrder()
}

// ReleaseOrder says that what this call must do in request order is done:
// the connection's next request may run while this one finishes (a
// Produce whose records are written waits for their fsync; the next
// Produce's records are written after them whatever that wait does).
// Replies still leave in request order. A no-op outside the loop.
func (c *Call) ReleaseOrder() {
	if c.Order != nil {
		c.Order.ReleaseOrder()
	}
}

// Call is one request in flight. The loop builds it; a handler may read the
// header and the context and may park itself. Owned by one goroutine at a
// time (the loop or the worker running it).
type Call struct {
	G      *Gateway
	Header codec.RequestHeader
	Ctx    context.Context
	// Final is true on the run after a Wait's deadline passed: the handler
	// must answer now.
	Final bool
	// ConnID names the call's connection (unique while the server runs;
	// 0: none, direct calls and tests): state tied to a connection, such
	// as a share session, ends with it (Gateway.ConnClosed).
	ConnID uint64
	// ClientHost is the peer address of the connection ("/ip" as Kafka
	// reports it in DescribeGroups), computed once per connection.
	ClientHost string
	// ReplyRoom is how many reply bytes the connection can still queue for
	// writing before its outbound cap (loop.Config.MaxOutboundPerConn): 0
	// means no cap (direct calls, tests), < 0 that the connection is full.
	// Fetch sizes its response to it.
	ReplyRoom int
	// Sasl is the connection's SASL state on a SASL listener, else nil.
	Sasl *SaslConn
	// Advertised is the address clients of the connection's listener are
	// told the broker is at (Metadata, FindCoordinator), as Kafka answers
	// per listener name; nil: Cfg.AdvertisedHost/AdvertisedPort.
	Advertised *Endpoint
	// Listener is the name of the connection's listener (cluster mode
	// tells its clients the other gateways' addresses on the same one).
	Listener string
	// TLSPrincipal is the subject of the client certificate verified on
	// a TLS listener with client authentication (mTLS), as Kafka's
	// default principal builder names it ("CN=app,O=org"); "" without
	// one. A SASL login's principal (Sasl.Principal) takes precedence.
	TLSPrincipal string
	// Order, set by the loop, lets the connection's next request start
	// before this one ends (ReleaseOrder); nil outside the loop.
	Order OrderReleaser
	// RequestBytes is the request's size as Kafka counts it against the
	// producer byte rate: the frame without its 4-byte length.
	RequestBytes int
	// throttleMs is the client-quota throttle of this call (quotas.go).
	throttleMs int32
	wait       *Wait
	done       []func()
	// inPlace: a Fetch's reply may be built around its batches
	// (EncodeReplyInPlace).
	inPlace inPlace
	// first is the deadline of the first Park of this call; later Parks
	// never wait past it, so wake-ups cannot stretch max_wait_ms.
	first time.Time
	// gwait is the coordinator wait a parked JoinGroup/SyncGroup re-runs
	// with (groups.go, package group).
	gwait *groupWait
	// autoCreated counts topics this request auto-created (topics.go).
	autoCreated int
	// metaView is the cluster view one Metadata answer is built from.
	metaView *cluster.View
	// fetchPlan is a Fetch's session resolution, kept across re-runs of a
	// parked call (fetch_sessions.go).
	fetchPlan *fetchPlan
	// shareRun is a ShareFetch's session and acknowledgements, resolved
	// once and kept across re-runs of a parked call (78_share_fetch.go).
	shareRun *shareRun
}

// Defer registers fn to run after the response was encoded (or dropped),
// e.g. to return pooled buffers that response fields point into. Functions
// run in order on the goroutine that finishes the call.
func (c *Call) Defer(fn func()) { c.done = append(c.done, fn) }

// RunDeferred runs and clears the functions given to Defer. The loop calls
// it once the response bytes are out of the kmsg structs.
func (c *Call) RunDeferred() {
	for i, fn := range c.done {
		fn()
		c.done[i] = nil
	}
	c.done = c.done[:0]
}

// Park asks the loop to re-run this call when one of keys gets new data or
// at until; the handler returns (nil, nil) after calling it. A call that
// parks again after a wake-up keeps its first deadline: until is clamped to
// it. The loop re-runs the call with Final set once Until has passed.
func (c *Call) Park(keys []PartitionKey, until time.Time) { c.ParkSince(keys, until, 0) }

// ParkSince is Park for a handler that took since = G.Watch.Generation(keys)
// before reading: a signal between that read and the loop's watch wakes the
// call at once instead of being lost.
func (c *Call) ParkSince(keys []PartitionKey, until time.Time, since uint64) {
	if c.first.IsZero() {
		c.first = until
	} else if until.After(c.first) {
		until = c.first
	}
	c.wait = &Wait{Keys: keys, Until: until, Since: since}
}

// Parked returns the pending wait and clears it, or nil.
func (c *Call) Parked() *Wait {
	w := c.wait
	c.wait = nil
	return w
}

// NewGateway builds the shared state for cfg over store, with every
// sub-state (producer ids, fetch watchers, and what later features add) set
// up. gateway.Start (the command, the bench, the e2e suite) and the loop's
// and handlers' own tests build gateways only through it, so a new
// feature's state is wired everywhere at once.
func NewGateway(cfg Config, store bridge.Backend, log *slog.Logger) *Gateway {
	if log == nil {
		log = slog.Default()
	}
	watch := NewWatchers()
	start := time.Now()
	ids := NewProducerIDs(cfg.InstanceID, start)
	// Reserve the first block of producer ids now, so InitProducerId (on
	// the event loop) never waits for the store.
	ids.Bind(store, log)
	// Retention moved a log start: a parked fetch below it answers
	// OFFSET_OUT_OF_RANGE now rather than at its deadline.
	store.OnTrim(func(stream, topic string, partition int32) {
		if stream == cfg.Stream {
			watch.Signal(PartitionKey{Topic: topic, Partition: partition})
		}
	})
	sec := newSecurity(cfg, store, log)
	if cfg.Sasl != nil {
		// Logins see credentials set through Kafka (keys 50/51) over the
		// users file.
		cfg.Sasl.Users = sec
	}
	var shares *share.Coordinator
	if shareServed(&cfg) {
		shares = newShareCoordinator(cfg, store, watch, log)
	}
	g := &Gateway{
		Sec:       sec,
		Cfg:       cfg,
		Store:     store,
		Format:    store.Capabilities().Format,
		Producers: ids,
		Watch:     watch,
		Groups:    newCoordinator(cfg, store, watch, log, shares),
		Log:       log,

		fetchSessions: newFetchSessions(cfg.FetchSessionSlots),
		tail:          fetchcache.NewTail(cfg.TailCacheBytes),
		features:      newFeatureSet(servedFeatures(&cfg), start.UnixMilli()),
		apiKeys:       advertisedKeys(&cfg),
	}
	g.topicInfos.on, g.topicInfos.maxAge = !store.Capabilities().MemoryReads, topicInfoMaxAge
	g.fetchStates.on, g.fetchStates.maxAge = store.Capabilities().TopicStateInOneCall, fetchStateMaxAge
	if cfg.Transactions.Enabled {
		g.Txn = newTxnCoordinator(g)
	}
	g.Share = shares
	return g
}
