// Package metrics holds the gateway's Prometheus collectors. Every method
// is safe on a nil *Metrics (a no-op), so tests and tools need no registry.
// Hot-path methods do not allocate: label children are resolved once.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Outcome of one request, as a label value.
const (
	OutcomeOK     = "ok"     // answered (Kafka error codes inside still count as ok)
	OutcomeClosed = "closed" // the request closed the connection
	OutcomeNoAck  = "noack"  // acks=0 Produce, no reply by design
)

// outcomeOther absorbs an outcome string outside the fixed set, so a typo in
// a caller shows up as a series instead of a panic or an allocation.
const outcomeOther = "other"

var outcomes = [...]string{OutcomeOK, OutcomeClosed, OutcomeNoAck, outcomeOther}

func outcomeIndex(o string) int {
	switch o {
	case OutcomeOK:
		return 0
	case OutcomeClosed:
		return 1
	case OutcomeNoAck:
		return 2
	}
	return 3
}

// maxKey is the highest API key with its own label children; higher (or
// negative) keys share the "unknown" children. Kafka's keys stay well below.
const maxKey = 100

// Buckets in seconds. Requests span from an inline ApiVersions answered in
// microseconds to a Fetch long-poll parked for seconds; store calls range
// from a cached metadata read to an fsync.
var (
	requestBuckets = prometheus.ExponentialBuckets(50e-6, 4, 10) // 50µs .. ~13s
	storeBuckets   = prometheus.ExponentialBuckets(10e-6, 4, 10) // 10µs .. ~2.6s
)

// Metrics is the set of collectors.
type Metrics struct{ impl *collectors }

type keyChildren struct {
	count   [len(outcomes)]prometheus.Counter
	latency prometheus.Observer
}

type collectors struct {
	gatherer prometheus.Gatherer
	reg      prometheus.Registerer // for collectors registered later (FetchSessions)

	requests    *prometheus.CounterVec
	reqLatency  *prometheus.HistogramVec
	bytesIn     prometheus.Counter
	bytesOut    prometheus.Counter
	connsOpen   prometheus.Gauge
	connsClosed *prometheus.CounterVec
	queueDepth  prometheus.Gauge
	connMutes   prometheus.Counter
	storeLat    *prometheus.HistogramVec

	// byKey holds the resolved children of keys 0..maxKey, indexed by key,
	// so the hot path is an index, an atomic load and an interface call.
	// A slot is filled on the key's first request (under keyMu) rather than
	// in New: resolving a child creates its series, and 100 keys times four
	// outcomes plus a histogram each would bury the dozen keys a gateway
	// actually serves under a thousand zero lines.
	byKey   [maxKey + 1]atomic.Pointer[keyChildren]
	keyMu   sync.Mutex
	unknown *keyChildren // keys outside 0..maxKey; resolved in New

	closed labelCache[prometheus.Counter]
	store  labelCache[prometheus.Observer]
}

// New registers the gateway's collectors on reg and returns them. A nil reg
// gets a private registry (useful in tests). It panics if the collectors are
// already registered on reg, like prometheus.MustRegister.
func New(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	c := &collectors{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iggy_kafka_requests_total",
			Help: "Kafka requests finished, by API key name and outcome (ok, closed, noack).",
		}, []string{"api", "outcome"}),
		reqLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "iggy_kafka_request_duration_seconds",
			Help:    "Time from a request's frame being read to its reply being queued, by API key name.",
			Buckets: requestBuckets,
		}, []string{"api"}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iggy_kafka_received_bytes_total",
			Help: "Bytes read from Kafka clients.",
		}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iggy_kafka_sent_bytes_total",
			Help: "Bytes written to Kafka clients.",
		}),
		connsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iggy_kafka_connections_open",
			Help: "Kafka client connections currently open.",
		}),
		connsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iggy_kafka_connections_closed_total",
			Help: "Kafka client connections closed, by reason.",
		}, []string{"reason"}),
		connMutes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "iggy_kafka_connection_mutes_total",
			Help: "Times a connection stopped being read because its client sent requests faster than they are served (TCP holds the rest in the client).",
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "iggy_kafka_worker_queue_depth",
			Help: "Jobs waiting for a worker (Produce, Fetch and other store calls).",
		}),
		storeLat: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "iggy_kafka_store_duration_seconds",
			Help:    "Latency of store calls, by operation.",
			Buckets: storeBuckets,
		}, []string{"op"}),
	}
	reg.MustRegister(c.requests, c.reqLatency, c.bytesIn, c.bytesOut,
		c.connsOpen, c.connsClosed, c.connMutes, c.queueDepth, c.storeLat)
	if g, ok := reg.(prometheus.Gatherer); ok {
		c.gatherer = g
	} else {
		c.gatherer = prometheus.DefaultGatherer
	}
	c.unknown = c.newKeyChildren("unknown")
	c.closed.make = func(reason string) prometheus.Counter { return c.connsClosed.WithLabelValues(reason) }
	c.store.make = func(op string) prometheus.Observer { return c.storeLat.WithLabelValues(op) }
	return &Metrics{impl: c}
}

// newKeyChildren resolves the children of one api label.
func (c *collectors) newKeyChildren(name string) *keyChildren {
	kc := &keyChildren{latency: c.reqLatency.WithLabelValues(name)}
	for i, o := range outcomes {
		kc.count[i] = c.requests.WithLabelValues(name, o)
	}
	return kc
}

// keyChildrenFor returns the children of key, resolving them on first use.
func (c *collectors) keyChildrenFor(key int16) *keyChildren {
	if key < 0 || key > maxKey {
		return c.unknown
	}
	slot := &c.byKey[key]
	if kc := slot.Load(); kc != nil {
		return kc
	}
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	if kc := slot.Load(); kc != nil {
		return kc
	}
	name := kmsg.NameForKey(key)
	if name == "Unknown" {
		// Not a key kmsg knows: keep the number so the series still says
		// which key a client sent.
		name = "key_" + strconv.Itoa(int(key))
	}
	kc := c.newKeyChildren(name)
	slot.Store(kc)
	return kc
}

// Handler serves the registry New was given in the Prometheus text format.
// On a nil *Metrics it answers 404, so a caller can mount it unconditionally.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.impl.gatherer, promhttp.HandlerOpts{})
}

// Request records one finished request of key with its outcome and latency.
func (m *Metrics) Request(key int16, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	kc := m.impl.keyChildrenFor(key)
	kc.count[outcomeIndex(outcome)].Inc()
	kc.latency.Observe(d.Seconds())
}

// BytesIn counts bytes read from Kafka clients.
func (m *Metrics) BytesIn(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.impl.bytesIn.Add(float64(n))
}

// BytesOut counts bytes written to Kafka clients.
func (m *Metrics) BytesOut(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.impl.bytesOut.Add(float64(n))
}

// ConnOpened counts an accepted connection.
func (m *Metrics) ConnOpened() {
	if m == nil {
		return
	}
	m.impl.connsOpen.Inc()
}

// ConnClosed counts a closed connection by close reason.
func (m *Metrics) ConnClosed(reason string) {
	if m == nil {
		return
	}
	m.impl.connsOpen.Dec()
	m.impl.closed.get(reason).Inc()
}

// ConnMuted counts a connection muted for backpressure.
func (m *Metrics) ConnMuted() {
	if m == nil {
		return
	}
	m.impl.connMutes.Inc()
}

// QueueDepth sets the current worker-pool queue depth.
func (m *Metrics) QueueDepth(n int) {
	if m == nil {
		return
	}
	m.impl.queueDepth.Set(float64(n))
}

// StoreLatency records one store call (op: append, poll, meta).
func (m *Metrics) StoreLatency(op string, d time.Duration) {
	if m == nil {
		return
	}
	m.impl.store.get(op).Observe(d.Seconds())
}

// labelCache maps a label value to its resolved child. The set of values
// (close reasons, store ops) is small and fixed by the code, but not known
// to this package, so children are made on first use. Reads go through an
// immutable map behind an atomic pointer: no lock and no allocation once a
// value has been seen; only a new value takes the lock and copies the map.
type labelCache[T any] struct {
	mu   sync.Mutex
	m    atomic.Pointer[map[string]T]
	make func(string) T
}

func (lc *labelCache[T]) get(v string) T {
	if m := lc.m.Load(); m != nil {
		if c, ok := (*m)[v]; ok {
			return c
		}
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	old := lc.m.Load()
	if old != nil {
		if c, ok := (*old)[v]; ok {
			return c
		}
	}
	next := make(map[string]T, 1+lenMap(old))
	if old != nil {
		for k, c := range *old {
			next[k] = c
		}
	}
	c := lc.make(v)
	next[v] = c
	lc.m.Store(&next)
	return c
}

func lenMap[T any](m *map[string]T) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// FetchSessionCounts is what the fetch-session collectors read at scrape
// time (handlers.Gateway.FetchSessionStats).
type FetchSessionCounts struct {
	Open                                   int
	Created, Evicted, Refused, Incremental uint64
}

// FetchSessions exposes the gateway's incremental fetch sessions
// (KIP-227), read by read at each scrape. Call it once, after the gateway
// is built; a no-op on a nil *Metrics. Any goroutine.
func (m *Metrics) FetchSessions(read func() FetchSessionCounts) {
	if m == nil {
		return
	}
	registerScraped(m.impl.reg, read,
		gaugeOf("iggy_kafka_fetch_sessions_open", "Incremental fetch sessions (KIP-227) in the cache.",
			func(c FetchSessionCounts) int { return c.Open }),
		counterOf("iggy_kafka_fetch_sessions_created_total", "Incremental fetch sessions made.",
			func(c FetchSessionCounts) uint64 { return c.Created }),
		counterOf("iggy_kafka_fetch_sessions_evicted_total", "Fetch sessions evicted to make room for another.",
			func(c FetchSessionCounts) uint64 { return c.Evicted }),
		counterOf("iggy_kafka_fetch_sessions_refused_total", "Full fetches answered sessionless because no slot was free.",
			func(c FetchSessionCounts) uint64 { return c.Refused }),
		counterOf("iggy_kafka_fetch_incremental_total", "Incremental Fetch requests answered from a session.",
			func(c FetchSessionCounts) uint64 { return c.Incremental }),
	)
}

// TailCacheCounts is what the tail-cache collectors read at scrape time
// (handlers.Gateway.TailCacheStats).
type TailCacheCounts struct {
	Hits, Misses, ServedBytes, UsedBytes int64
}

// TailCache exposes the Fetch tail cache (internal/fetchcache), read by
// read at each scrape. Call it once, after the gateway is built; a no-op on
// a nil *Metrics. Any goroutine.
func (m *Metrics) TailCache(read func() TailCacheCounts) {
	if m == nil {
		return
	}
	registerScraped(m.impl.reg, read,
		gaugeOf("iggy_kafka_tail_cache_bytes", "Memory held by the tail cache (the Kafka form of recently produced batches).",
			func(c TailCacheCounts) int64 { return c.UsedBytes }),
		counterOf("iggy_kafka_tail_cache_hits_total", "Fetched partitions answered from the tail cache.",
			func(c TailCacheCounts) int64 { return c.Hits }),
		counterOf("iggy_kafka_tail_cache_misses_total", "Fetched partitions the tail cache could not answer (read from the store).",
			func(c TailCacheCounts) int64 { return c.Misses }),
		counterOf("iggy_kafka_tail_cache_served_bytes_total", "Record-batch bytes Fetch sent from the tail cache.",
			func(c TailCacheCounts) int64 { return c.ServedBytes }),
	)
}

// QuotaCounts is what the client-quota collectors read at scrape time
// (handlers.Gateway.QuotaStats).
type QuotaCounts struct {
	ProduceThrottled, ProduceThrottleMs int64
	FetchThrottled, FetchThrottleMs     int64
	RequestThrottled, RequestThrottleMs int64
	ConnectionsThrottled                int64
}

// Quotas exposes client-quota throttling (KIP-13/KIP-219: responses that
// carried a throttle time, and that time in total; connections closed
// for their IP's connection rate), read by read at each scrape. Call it
// once, after the gateway is built; a no-op on a nil *Metrics. Any
// goroutine.
func (m *Metrics) Quotas(read func() QuotaCounts) {
	if m == nil {
		return
	}
	registerScraped(m.impl.reg, read,
		counterOf("iggy_kafka_quota_produce_throttled_total", "Produce responses throttled by a producer_byte_rate quota.",
			func(c QuotaCounts) int64 { return c.ProduceThrottled }),
		counterOf("iggy_kafka_quota_produce_throttle_ms_total", "Throttle time given to producers by producer_byte_rate quotas, in ms.",
			func(c QuotaCounts) int64 { return c.ProduceThrottleMs }),
		counterOf("iggy_kafka_quota_fetch_throttled_total", "Fetch responses throttled (answered empty) by a consumer_byte_rate quota.",
			func(c QuotaCounts) int64 { return c.FetchThrottled }),
		counterOf("iggy_kafka_quota_fetch_throttle_ms_total", "Throttle time given to consumers by consumer_byte_rate quotas, in ms.",
			func(c QuotaCounts) int64 { return c.FetchThrottleMs }),
		counterOf("iggy_kafka_quota_request_throttled_total", "Responses throttled by a request_percentage quota.",
			func(c QuotaCounts) int64 { return c.RequestThrottled }),
		counterOf("iggy_kafka_quota_request_throttle_ms_total", "Throttle time given by request_percentage quotas, in ms.",
			func(c QuotaCounts) int64 { return c.RequestThrottleMs }),
		counterOf("iggy_kafka_quota_connections_throttled_total", "Connections closed, unread, for their IP's connection_creation_rate quota.",
			func(c QuotaCounts) int64 { return c.ConnectionsThrottled }),
	)
}

// ShareCounts is what the share-group collectors read at scrape time
// (handlers.Gateway.ShareStats).
type ShareCounts struct {
	Groups, Members, Sessions, Acquired                                         int64
	AcquiredTotal, Accepted, Released, Rejected, Expired, Archived, StateWrites int64
}

// Shares exposes the share groups (KIP-932): groups, members, share
// sessions and records acquired now, and what happened to the records
// handed out. Call it once, after the gateway is built; a no-op on a nil
// *Metrics. Any goroutine.
func (m *Metrics) Shares(read func() ShareCounts) {
	if m == nil {
		return
	}
	registerScraped(m.impl.reg, read,
		gaugeOf("iggy_kafka_share_groups", "Share groups kept by this gateway.", func(c ShareCounts) int64 { return c.Groups }),
		gaugeOf("iggy_kafka_share_members", "Members of share groups.", func(c ShareCounts) int64 { return c.Members }),
		gaugeOf("iggy_kafka_share_sessions", "Open share sessions.", func(c ShareCounts) int64 { return c.Sessions }),
		gaugeOf("iggy_kafka_share_acquired_records", "Records acquired by share-group members now (under a lock).", func(c ShareCounts) int64 { return c.Acquired }),
		counterOf("iggy_kafka_share_acquired_records_total", "Record deliveries to share-group members.", func(c ShareCounts) int64 { return c.AcquiredTotal }),
		counterOf("iggy_kafka_share_accepted_records_total", "Records share-group members accepted.", func(c ShareCounts) int64 { return c.Accepted }),
		counterOf("iggy_kafka_share_released_records_total", "Records released by their member (acknowledged RELEASE, or its session or membership ended).", func(c ShareCounts) int64 { return c.Released }),
		counterOf("iggy_kafka_share_rejected_records_total", "Records share-group members rejected.", func(c ShareCounts) int64 { return c.Rejected }),
		counterOf("iggy_kafka_share_lock_expired_records_total", "Records whose acquisition lock ran out.", func(c ShareCounts) int64 { return c.Expired }),
		counterOf("iggy_kafka_share_archived_records_total", "Records archived at share.delivery.count.limit.", func(c ShareCounts) int64 { return c.Archived }),
		counterOf("iggy_kafka_share_state_writes_total", "Share-partition state writes to the store.", func(c ShareCounts) int64 { return c.StateWrites }),
	)
}

// scraped is one collector whose value is read, at each scrape, from a
// snapshot C of counts kept elsewhere (FetchSessions, TailCache).
type scraped[C any] struct {
	name, help string
	gauge      bool // else a counter
	value      func(C) float64
}

func gaugeOf[C any, N int | int64 | uint64](name, help string, v func(C) N) scraped[C] {
	return scraped[C]{name: name, help: help, gauge: true, value: func(c C) float64 { return float64(v(c)) }}
}

func counterOf[C any, N int | int64 | uint64](name, help string, v func(C) N) scraped[C] {
	return scraped[C]{name: name, help: help, value: func(c C) float64 { return float64(v(c)) }}
}

// registerScraped registers cs on reg, each taking a snapshot with read
// when scraped.
func registerScraped[C any](reg prometheus.Registerer, read func() C, cs ...scraped[C]) {
	cols := make([]prometheus.Collector, 0, len(cs))
	for _, c := range cs {
		value := func() float64 { return c.value(read()) }
		if c.gauge {
			cols = append(cols, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: c.name, Help: c.help}, value))
		} else {
			cols = append(cols, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, value))
		}
	}
	reg.MustRegister(cols...)
}
