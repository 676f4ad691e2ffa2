package handlers

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546, KIP-612), as
// a Kafka 4.4 broker keeps and applies them (docs/SECURITY.md, "Client
// quotas").
//
// What is set (AlterClientQuotas, key 49) is kept as 'Q' records in the
// store's security log beside ACLs and SCRAM credentials
// (bridge/security.go), so it survives restarts and reaches the other
// gateways of a cluster when they re-read the log; secState.quotas is its
// meaning. What acts on it is here: produce and fetch byte rates and the
// request percentage per (user, client-id) with Kafka's precedence of
// entities, each measured by a rate over Kafka's sample windows
// (quota.window.num 11, quota.window.size.seconds 1), and the throttle
// time a broker computes from it; the connection-creation rate per IP is
// in ConnectionThrottle. The handlers put the throttle time in the
// response (throttle_time_ms) and on the Call; the loop then stops
// reading the connection for that long (KIP-219, loop/throttle.go).

import (
	"math"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// Entity types and quota keys, as Kafka names them.
const (
	quotaTypeUser   = "user"
	quotaTypeClient = "client-id"
	quotaTypeIP     = "ip"

	quotaProducerByteRate       = "producer_byte_rate"
	quotaConsumerByteRate       = "consumer_byte_rate"
	quotaRequestPercentage      = "request_percentage"
	quotaControllerMutationRate = "controller_mutation_rate"
	quotaConnectionCreationRate = "connection_creation_rate"
)

// Kafka's defaults of quota.window.num and quota.window.size.seconds.
const (
	quotaSamples  = 11
	quotaWindowMs = 1000
	// quotaSensorIdleMs drops the rate of a (user, client-id) unused this
	// long, as Kafka expires its quota sensors after an hour.
	quotaSensorIdleMs = 3600 * 1000
	// maxConnectionThrottleMs bounds the delay before a connection over
	// its IP's rate is closed: one window, as Kafka's ConnectionQuotas.
	maxConnectionThrottleMs = quotaWindowMs
)

// quotaValueType is how Kafka's ConfigDef types a quota key.
type quotaValueType uint8

const (
	quotaLong quotaValueType = iota
	quotaDouble
	quotaInt
)

// Keys each kind of entity takes: user and client-id entities (alone or
// together) the four request quotas, ip entities the connection rate.
var (
	userClientQuotaKeys = map[string]quotaValueType{
		quotaProducerByteRate: quotaLong, quotaConsumerByteRate: quotaLong,
		quotaRequestPercentage: quotaDouble, quotaControllerMutationRate: quotaDouble,
	}
	ipQuotaKeys = map[string]quotaValueType{quotaConnectionCreationRate: quotaInt}
)

// quotaName is one component of an entity: set when the entity has a
// component of the type, def when that is the <default> one (a null name
// on the wire).
type quotaName struct {
	set, def bool
	name     string
}

func quotaNamed(name string) quotaName { return quotaName{set: true, name: name} }

var quotaDefault = quotaName{set: true, def: true}

// quotaEntity is a client quota entity: user and/or client-id, or ip.
type quotaEntity struct{ user, client, ip quotaName }

// parts lists e's components in a fixed order (user, client-id, ip).
func (e quotaEntity) parts() []struct {
	typ string
	n   quotaName
} {
	var out []struct {
		typ string
		n   quotaName
	}
	for _, p := range []struct {
		typ string
		n   quotaName
	}{{quotaTypeUser, e.user}, {quotaTypeClient, e.client}, {quotaTypeIP, e.ip}} {
		if p.n.set {
			out = append(out, p)
		}
	}
	return out
}

// size is the number of components.
func (e quotaEntity) size() int { return len(e.parts()) }

// component returns e's component of type typ.
func (e *quotaEntity) component(typ string) *quotaName {
	switch typ {
	case quotaTypeUser:
		return &e.user
	case quotaTypeClient:
		return &e.client
	case quotaTypeIP:
		return &e.ip
	}
	return nil
}

// String is Kafka's ClientQuotaEntity text, used in its error messages.
func (e quotaEntity) String() string {
	var parts []kmsg.AlterClientQuotasResponseEntryEntity
	for _, p := range e.parts() {
		var name *string
		if !p.n.def {
			name = &p.n.name
		}
		parts = append(parts, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.typ, Name: name})
	}
	return quotaEntityText(parts)
}

// quotaMap is every quota set: per entity, per key, the value. Immutable
// once published in a secState.
type quotaMap map[quotaEntity]map[string]float64

// keys is the set of keys some entity sets (Kafka records nothing for a
// quota type no entity sets).
func (q quotaMap) keys() map[string]bool {
	out := map[string]bool{}
	for _, vals := range q {
		for k := range vals {
			out[k] = true
		}
	}
	return out
}

func (q quotaMap) get(e quotaEntity, key string) (float64, bool) {
	v, ok := q[e][key]
	return v, ok
}

// clone copies q's entity map (the value maps are shared: set copies the
// one it changes).
func (q quotaMap) clone() quotaMap {
	out := make(quotaMap, len(q)+1)
	for k, v := range q {
		out[k] = v
	}
	return out
}

// set applies r to q, which must be a clone no snapshot shares; a record
// of an entity this build cannot read is skipped.
func (q quotaMap) set(r bridge.QuotaRecord) {
	var e quotaEntity
	for _, p := range r.Entity {
		n := e.component(p.Type)
		if n == nil || n.set {
			return
		}
		*n = quotaName{set: true, def: p.Default, name: p.Name}
	}
	vals := make(map[string]float64, len(q[e])+1)
	for k, v := range q[e] {
		vals[k] = v
	}
	if r.Remove {
		delete(vals, r.Key)
	} else {
		vals[r.Key] = r.Value
	}
	if len(vals) == 0 {
		delete(q, e)
	} else {
		q[e] = vals
	}
}

// record is the security-log record setting (or, when remove, removing)
// key of e.
func (e quotaEntity) record(key string, value float64, remove bool) ([]byte, error) {
	r := bridge.QuotaRecord{Key: key, Value: value, Remove: remove}
	for _, p := range e.parts() {
		r.Entity = append(r.Entity, bridge.QuotaPart{Type: p.typ, Name: p.n.name, Default: p.n.def})
	}
	return bridge.AppendQuotaRecord(nil, r)
}

// quotaTags are the (user, client-id) a rate is kept under, as Kafka's
// quota metric tags: "" for a level the matching quota does not name.
type quotaTags struct{ user, client string }

// resolve is Kafka's default quota callback for key: the tags the rate of
// (user, client) is kept under, chosen by the most specific entity that
// sets key, in the order ClientQuotaManager documents
// (users/u/clients/c, users/u/clients/<default>, users/u,
// users/<default>/clients/c, users/<default>/clients/<default>,
// users/<default>, clients/c, clients/<default>), and the limit for those
// tags; ok is false when no quota applies.
func (q quotaMap) resolve(key, user, client string) (tags quotaTags, limit float64, ok bool) {
	u, c := quotaNamed(user), quotaNamed(client)
	has := func(e quotaEntity) bool { _, ok := q.get(e, key); return ok }
	switch {
	case has(quotaEntity{user: u, client: c}), has(quotaEntity{user: u, client: quotaDefault}):
		tags = quotaTags{user, client}
	case has(quotaEntity{user: u}):
		tags = quotaTags{user, ""}
	case has(quotaEntity{user: quotaDefault, client: c}), has(quotaEntity{user: quotaDefault, client: quotaDefault}):
		tags = quotaTags{user, client}
	case has(quotaEntity{user: quotaDefault}):
		tags = quotaTags{user, ""}
	default:
		tags = quotaTags{"", client}
	}
	var order []quotaEntity
	switch {
	case tags.user != "" && tags.client != "":
		order = []quotaEntity{{user: u, client: c}, {user: u, client: quotaDefault},
			{user: quotaDefault, client: c}, {user: quotaDefault, client: quotaDefault}}
	case tags.user != "":
		order = []quotaEntity{{user: u}, {user: quotaDefault}}
	case tags.client != "":
		order = []quotaEntity{{client: c}, {client: quotaDefault}}
	}
	for _, e := range order {
		if v, found := q.get(e, key); found {
			return tags, v, true
		}
	}
	return tags, 0, false
}

// ipRate is the connection_creation_rate for ip: its own entity's, else
// the <default> ip's; ok false when neither is set. Entities naming a
// host rather than an address never match.
func (q quotaMap) ipRate(ip netip.Addr) (float64, bool) {
	for e, vals := range q {
		if !e.ip.set || e.ip.def {
			continue
		}
		if a, err := netip.ParseAddr(e.ip.name); err == nil && a.Unmap() == ip.Unmap() {
			if v, ok := vals[quotaConnectionCreationRate]; ok {
				return v, true
			}
		}
	}
	return q.get(quotaEntity{ip: quotaDefault}, quotaConnectionCreationRate)
}

// rateSample is one of Kafka's SampledStat samples (times in ms).
type rateSample struct {
	start, last int64
	value       float64
}

// rateStat is Kafka's Rate over a WindowedSum: up to quotaSamples+1
// samples of quotaWindowMs each, the rate being their sum over the time
// they span, counted as at least quotaSamples-1 whole windows. Not safe
// for concurrent use.
type rateStat struct {
	samples []rateSample
	cur     int
	used    int64 // ms of the last record
}

func (r *rateStat) current(now int64) *rateSample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{start: now, last: now})
	}
	return &r.samples[r.cur]
}

// record adds v at now (ms), starting the next sample when the current one
// is a window old.
func (r *rateStat) record(v float64, now int64) {
	s := r.current(now)
	if now-s.start >= quotaWindowMs {
		r.cur = (r.cur + 1) % (quotaSamples + 1)
		if r.cur >= len(r.samples) {
			r.samples = append(r.samples, rateSample{start: now, last: now})
		} else {
			r.samples[r.cur] = rateSample{start: now, last: now}
		}
		s = &r.samples[r.cur]
	}
	s.value += v
	s.last = now
	r.used = now
}

// purge resets the samples with no event in the last quotaSamples windows.
func (r *rateStat) purge(now int64) {
	for i := range r.samples {
		if now-r.samples[i].last >= quotaSamples*quotaWindowMs {
			r.samples[i] = rateSample{start: now, last: now}
		}
	}
}

// windowMs is the time the rate is taken over, as Kafka's
// Rate.windowSize.
func (r *rateStat) windowMs(now int64) int64 {
	r.purge(now)
	oldest := r.current(now).start
	for _, s := range r.samples {
		oldest = min(oldest, s.start)
	}
	total := now - oldest
	if full := total / quotaWindowMs; full < quotaSamples-1 {
		total += (quotaSamples - 1 - full) * quotaWindowMs
	}
	return max(total, 1)
}

// rate is the measured rate per second at now.
func (r *rateStat) rate(now int64) float64 {
	r.purge(now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(r.windowMs(now)) / 1000)
}

// throttleMs is the time a client over limit must wait for its rate to
// come back to limit, as Kafka's QuotaUtils.throttleTime: (O - T) / T * W;
// 0 within the limit.
func (r *rateStat) throttleMs(limit float64, now int64) int64 {
	o := r.rate(now)
	if o <= limit {
		return 0
	}
	t := math.Round((o - limit) / limit * float64(r.windowMs(now)))
	return int64(min(t, math.MaxInt32))
}

// quotaSensorKey names one rate: a quota key and the tags it is kept
// under (an IP's connection rate: quotaConnectionCreationRate and the
// address in user).
type quotaSensorKey struct {
	key  string
	tags quotaTags
}

// quotaSensors holds the rates quotas are measured by, and the counts the
// metrics read. The zero value is ready; any goroutine.
type quotaSensors struct {
	mu      sync.Mutex
	rates   map[quotaSensorKey]*rateStat
	swept   int64 // ms of the last sweep of idle rates
	produce quotaCounts
	fetch   quotaCounts
	request quotaCounts
	conns   atomic.Int64 // connections closed for their IP's creation rate
}

// quotaCounts are the throttled responses of one quota and their
// throttle time.
type quotaCounts struct {
	throttled, ms atomic.Int64
}

func (c *quotaCounts) add(ms int64) {
	if ms > 0 {
		c.throttled.Add(1)
		c.ms.Add(ms)
	}
}

// QuotaStats are the throttling counts (metrics.QuotaCounts).
type QuotaStats struct {
	ProduceThrottled, ProduceThrottleMs int64
	FetchThrottled, FetchThrottleMs     int64
	RequestThrottled, RequestThrottleMs int64
	ConnectionsThrottled                int64
}

// QuotaStats reads the throttling counts. Any goroutine.
func (g *Gateway) QuotaStats() QuotaStats {
	q := &g.quotas
	return QuotaStats{
		ProduceThrottled: q.produce.throttled.Load(), ProduceThrottleMs: q.produce.ms.Load(),
		FetchThrottled: q.fetch.throttled.Load(), FetchThrottleMs: q.fetch.ms.Load(),
		RequestThrottled: q.request.throttled.Load(), RequestThrottleMs: q.request.ms.Load(),
		ConnectionsThrottled: q.conns.Load(),
	}
}

// record adds v to the rate of k at now and returns the throttle time
// for limit. Any goroutine.
func (qs *quotaSensors) record(k quotaSensorKey, v, limit float64, now int64) int64 {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.rates == nil {
		qs.rates = make(map[quotaSensorKey]*rateStat)
	}
	if now-qs.swept >= quotaSensorIdleMs/60 {
		qs.swept = now
		for sk, r := range qs.rates {
			if now-r.used >= quotaSensorIdleMs {
				delete(qs.rates, sk)
			}
		}
	}
	r := qs.rates[k]
	if r == nil {
		r = &rateStat{}
		qs.rates[k] = r
	}
	r.record(v, now)
	return r.throttleMs(limit, now)
}

// quotaFor is the quota of key for the call's principal and client id;
// ok false when none applies (nothing is recorded then, as Kafka records
// nothing for an unset quota).
func (c *Call) quotaFor(key string) (k quotaSensorKey, limit float64, ok bool) {
	q, keys := c.G.Sec.quotas()
	if !keys[key] {
		return k, 0, false
	}
	user := strings.TrimPrefix(c.Principal(), "User:")
	tags, limit, ok := q.resolve(key, user, string(c.Header.ClientID))
	return quotaSensorKey{key, tags}, limit, ok
}

// setThrottle keeps the longest throttle of the call for the loop.
func (c *Call) setThrottle(ms int64) {
	c.throttleMs = max(c.throttleMs, int32(ms))
}

// ThrottleMillis is how long the loop stops reading the connection after
// this call's response (KIP-219); 0: not throttled. The goroutine that
// finishes the call.
func (c *Call) ThrottleMillis() int32 { return c.throttleMs }

// produceThrottle records the request's bytes against the producer byte
// rate (Kafka counts the whole request) and returns the throttle time for
// the response. The worker running the Produce.
func (c *Call) produceThrottle() int32 {
	k, limit, ok := c.quotaFor(quotaProducerByteRate)
	if !ok {
		return 0
	}
	ms := c.G.quotas.record(k, float64(c.RequestBytes), limit, time.Now().UnixMilli())
	c.G.quotas.produce.add(ms)
	c.setThrottle(ms)
	return c.throttleMs
}

// RequestThrottle records ran, the time the call's handler ran (every run
// of a parked call, not the time parked), against the request_percentage
// quota of its client, as Kafka records the time a request held a request
// handler thread: in percent of one thread per second. Over the quota the
// throttle time, bounded by one window as Kafka bounds it, goes into resp
// when it carries one (the larger of it and a byte-rate throttle already
// there) and to the loop (ThrottleMillis). resp may be nil (acks=0). The
// goroutine that finishes the call (a worker, or the loop for inline keys:
// it takes a mutex held only to update a rate).
func (c *Call) RequestThrottle(resp kmsg.Response, ran time.Duration) {
	k, limit, ok := c.quotaFor(quotaRequestPercentage)
	if !ok {
		return
	}
	pct := float64(ran.Nanoseconds()) * 100 / float64(time.Second)
	ms := min(c.G.quotas.record(k, pct, limit, time.Now().UnixMilli()), quotaWindowMs)
	if ms == 0 {
		return
	}
	c.G.quotas.request.add(ms)
	c.setThrottle(ms)
	if r, ok := resp.(kmsg.ThrottleResponse); ok {
		if cur, _ := r.Throttle(); cur < int32(ms) {
			resp.(kmsg.SetThrottleResponse).SetThrottle(int32(ms))
		}
	}
}

// fetchQuotaBytes bounds a Fetch's response by what the consumer byte
// rate allows in a quota window, as Kafka's getMaxValueInQuotaWindow; 0:
// no bound. The worker running the Fetch.
func (c *Call) fetchQuotaBytes() int {
	_, limit, ok := c.quotaFor(quotaConsumerByteRate)
	if !ok {
		return 0
	}
	return int(min(limit*(quotaSamples-1)*quotaWindowMs/1000, math.MaxInt32))
}

// fetchThrottled records resp's size against the consumer byte rate. Over
// the rate, as a Kafka broker it takes the bytes back off the rate and
// empties resp (no partitions: the client fetches the same offsets again
// once throttled; an incremental session keeps its id and what it had,
// a new one is not made) and reports true; the caller then skips the
// session update. The worker running the Fetch.
func (c *Call) fetchThrottled(plan *fetchPlan, resp *kmsg.FetchResponse) bool {
	k, limit, ok := c.quotaFor(quotaConsumerByteRate)
	if !ok {
		return false
	}
	size := fetchResponseSize(resp)
	now := time.Now().UnixMilli()
	ms := c.G.quotas.record(k, float64(size), limit, now)
	if ms == 0 {
		return false
	}
	c.G.quotas.record(k, -float64(size), limit, now)
	c.G.quotas.fetch.add(ms)
	c.setThrottle(ms)
	resp.ThrottleMillis = c.throttleMs
	resp.Topics = nil
	resp.SessionID = plan.session
	return true
}

// fetchResponseSize approximates the encoded size of resp: its record
// bytes plus a fixed cost per topic and partition, which is what the
// rate is about (Kafka takes the exact size of the response).
func fetchResponseSize(resp *kmsg.FetchResponse) int {
	n := 16
	for i := range resp.Topics {
		n += 2 + len(resp.Topics[i].Topic) + 16
		for j := range resp.Topics[i].Partitions {
			n += 50 + len(resp.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}

// ConnectionThrottle records a new connection from ip against its
// connection_creation_rate. Over the rate it takes the connection back
// off the rate and returns how long to hold the connection, unread,
// before closing it (as a Kafka broker delays closing a throttled
// socket); 0 accepts it. Any goroutine (the loop's OnOpen).
func (g *Gateway) ConnectionThrottle(ip netip.Addr) time.Duration {
	q, keys := g.Sec.quotas()
	if !keys[quotaConnectionCreationRate] || !ip.IsValid() {
		return 0
	}
	limit, ok := q.ipRate(ip)
	if !ok {
		return 0
	}
	k := quotaSensorKey{quotaConnectionCreationRate, quotaTags{user: ip.Unmap().String()}}
	now := time.Now().UnixMilli()
	ms := g.quotas.record(k, 1, limit, now)
	if ms == 0 {
		return 0
	}
	g.quotas.record(k, -1, limit, now)
	g.quotas.conns.Add(1)
	return time.Duration(min(ms, maxConnectionThrottleMs)) * time.Millisecond
}
