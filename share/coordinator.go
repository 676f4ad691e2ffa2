package share

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// Config bounds and defaults the share groups of a gateway (Kafka's
// group.share.* broker configs).
type Config struct {
	// MaxMembers is group.share.max.size: members per share group.
	MaxMembers int
	// MaxSessions is group.share.max.share.sessions: share sessions of
	// the gateway.
	MaxSessions int
	// MaxInFlight is group.share.partition.max.record.locks: in-flight
	// offsets per share partition.
	MaxInFlight int
	// MaxGroups bounds the share groups a gateway keeps (a flood of
	// group ids is refused, as group.max.size bounds classic groups).
	MaxGroups int
}

// DefaultConfig is Kafka 4.4's defaults.
func DefaultConfig() Config {
	return Config{MaxMembers: 200, MaxSessions: 2000, MaxInFlight: 2000, MaxGroups: 10000}
}

// The group configs a share group runs with (Kafka's GroupConfig share.*).
const (
	CfgAutoOffsetReset   = "share.auto.offset.reset"
	CfgIsolationLevel    = "share.isolation.level"
	CfgLockDuration      = "share.record.lock.duration.ms"
	CfgDeliveryLimit     = "share.delivery.count.limit"
	CfgSessionTimeout    = "share.session.timeout.ms"
	CfgHeartbeatInterval = "share.heartbeat.interval.ms"
	CfgMaxRecordLocks    = "share.partition.max.record.locks"
)

// Settings are a share group's configs, defaults filled in.
type Settings struct {
	AutoOffsetReset string // latest, earliest or by_duration:<ISO 8601>
	ReadCommitted   bool
	LockMs          int64
	DeliveryLimit   int16
	SessionMs       int64
	HeartbeatMs     int32
	MaxInFlight     int
}

// settingsFrom parses cfg over Kafka's defaults; a value that does not
// parse (checked when set, so only a damaged store) keeps the default.
func (c Config) settingsFrom(cfg bridge.GroupConfigs) Settings {
	s := Settings{AutoOffsetReset: "latest", LockMs: 30000, DeliveryLimit: 5, SessionMs: 45000, HeartbeatMs: 5000, MaxInFlight: c.MaxInFlight}
	num := func(name string) (int64, bool) {
		v, ok := cfg[name]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 32)
		return n, err == nil && n > 0
	}
	if v, ok := cfg[CfgAutoOffsetReset]; ok && v != "" {
		s.AutoOffsetReset = v
	}
	s.ReadCommitted = cfg[CfgIsolationLevel] == "read_committed"
	if n, ok := num(CfgLockDuration); ok {
		s.LockMs = n
	}
	if n, ok := num(CfgDeliveryLimit); ok && n <= 1<<15-1 {
		s.DeliveryLimit = int16(n)
	}
	if n, ok := num(CfgSessionTimeout); ok {
		s.SessionMs = n
	}
	if n, ok := num(CfgHeartbeatInterval); ok {
		s.HeartbeatMs = int32(n)
	}
	if n, ok := num(CfgMaxRecordLocks); ok {
		s.MaxInFlight = int(n) // 100-4000, checked when set
	}
	return s
}

// Options builds a Coordinator.
type Options struct {
	Config Config
	// Store keeps the share partitions' durable state.
	Store bridge.TxnStateStore
	// Configs reads a group's configs (the share.* ones act). Any
	// goroutine, without the coordinator's lock.
	Configs func(ctx context.Context, group string) (bridge.GroupConfigs, error)
	// Available is called, without the lock, when records of a partition
	// became available again (released, a lock expired, a member left),
	// so parked ShareFetches wake. Nil: none are woken.
	Available func(topic string, partition int32)
	// Now is the clock (nil: the wall clock).
	Now func() time.Time
	Log *slog.Logger
	// Sweep is how often locks and member sessions are checked for
	// expiry (0: 100 ms).
	Sweep time.Duration

	// Shared, in cluster mode, keeps the share-partition states instead
	// of Store (share/cluster.go).
	Shared Shared
	// Writable asks, before a share partition's state is written in
	// cluster mode, whether this gateway leads it now; when ok, end is
	// called once the write is done (the cluster's write gate). Nil:
	// always.
	Writable func(tp TP) (end func(), ok bool)
	// Leads reports whether this gateway leads a partition now (cluster
	// mode; nil: every one): an acknowledgement of a partition led
	// elsewhere is NOT_LEADER_OR_FOLLOWER.
	Leads func(tp TP) bool
	// Coordinates reports whether this gateway coordinates a group
	// (cluster mode; nil: every group). ListGroups lists only those.
	Coordinates func(group string) bool
}

// TP names a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// member is one share-group member.
type member struct {
	id, rack, clientID, host string
	epoch                    int32
	topics                   []string // subscribed, sorted
	assigned                 map[string][]int32
	sent                     int32 // the member epoch whose assignment was last sent
	deadline                 int64 // session end, unix ms
}

// Group is one share group.
type Group struct {
	id          string
	epoch       int32 // bumps on every membership or subscription change
	assignEpoch int32
	members     map[string]*member
	parts       map[TP]*Partition
	// topicIDs and sizes: what the last assignment was computed from.
	meta map[string]TopicMeta
}

// TopicMeta is what assignment needs of a subscribed topic.
type TopicMeta struct {
	ID         [16]byte
	Partitions int32
}

// Coordinator holds the share groups of this gateway. Safe for concurrent
// use; every method may run on any goroutine. One mutex guards all state;
// it is never held across a store call or a callback.
type Coordinator struct {
	o   Options
	log *slog.Logger

	mu       sync.Mutex
	groups   map[string]*Group
	sessions map[sessionKey]*session
	byConn   map[uint64][]sessionKey // sessions by the connection of their latest request
	closed   bool

	// writes orders each partition's durable writes, so a later snapshot
	// never lands before an earlier one, and batches them (partWriter).
	writes sync.Map // stateKey -> *partWriter

	cfgMu sync.Mutex
	cfgs  map[string]cachedSettings

	stop    chan struct{}
	done    chan struct{}
	started atomic.Bool

	stats Stats // record counts of every share partition (metrics)
}

type cachedSettings struct {
	s  Settings
	at time.Time
}

// New builds a coordinator; Load fills it from the store and starts its
// expiry sweeps.
func New(o Options) *Coordinator {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Sweep <= 0 {
		o.Sweep = 100 * time.Millisecond
	}
	if o.Config.MaxInFlight <= 0 {
		o.Config = DefaultConfig()
	}
	return &Coordinator{o: o, log: o.Log, groups: map[string]*Group{}, sessions: map[sessionKey]*session{},
		byConn: map[uint64][]sessionKey{}, cfgs: map[string]cachedSettings{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// Load reads the stored share-partition states (ctx bounds it) and starts
// the sweeps of locks and member sessions. Once, before serving.
// In cluster mode nothing is read here: each partition is loaded from
// the shared store when this gateway first serves it.
func (co *Coordinator) Load(ctx context.Context) error {
	if co.o.Store != nil && !co.shared() {
		bad := 0
		bound := co.stateBound()
		err := co.o.Store.TxnStates(ctx, func(key string, v []byte) {
			g, t, p, ok := parseKey(key)
			if !ok {
				return // another owner's key
			}
			sp, err := parseState(v, bound)
			if err != nil {
				bad++
				return
			}
			co.mu.Lock()
			sp.stats = &co.stats
			co.group(g).parts[TP{t, p}] = sp
			co.mu.Unlock()
		})
		if err != nil {
			return err
		}
		if bad > 0 {
			co.log.Warn("share groups: unreadable share-partition states skipped", "count", bad)
		}
	}
	co.started.Store(true)
	go co.sweeper()
	return nil
}

// Close stops the sweeper.
func (co *Coordinator) Close() {
	co.mu.Lock()
	if co.closed {
		co.mu.Unlock()
		return
	}
	co.closed = true
	co.mu.Unlock()
	close(co.stop)
	if co.started.Load() {
		<-co.done
	}
}

// group returns group id, made empty if missing. co.mu is held (or the
// coordinator is not shared yet).
func (co *Coordinator) group(id string) *Group {
	g := co.groups[id]
	if g == nil {
		g = &Group{id: id, members: map[string]*member{}, parts: map[TP]*Partition{}}
		co.groups[id] = g
	}
	return g
}

// Exists reports whether id is a share group here (for the other group
// types, which share the id space).
func (co *Coordinator) Exists(id string) bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	_, ok := co.groups[id]
	return ok
}

// Settings returns group's settings, read at most once a second. A failed
// read keeps the last settings, else the defaults. Without co.mu.
func (co *Coordinator) Settings(ctx context.Context, group string) Settings {
	now := co.o.Now()
	co.cfgMu.Lock()
	c, ok := co.cfgs[group]
	co.cfgMu.Unlock()
	if ok && now.Sub(c.at) < time.Second {
		return c.s
	}
	var cfg bridge.GroupConfigs
	if co.o.Configs != nil {
		var err error
		cfg, err = co.o.Configs(ctx, group)
		if err != nil && ok {
			return c.s
		}
	}
	s := co.o.Config.settingsFrom(cfg)
	co.cfgMu.Lock()
	if len(co.cfgs) > 4*co.o.Config.MaxGroups {
		clear(co.cfgs)
	}
	co.cfgs[group] = cachedSettings{s, now}
	co.cfgMu.Unlock()
	return s
}

// cachedLimit is group's delivery-count limit from the settings last
// read, without reading the store (the default when none were read).
// Any goroutine.
func (co *Coordinator) cachedLimit(group string) int16 {
	co.cfgMu.Lock()
	c, ok := co.cfgs[group]
	co.cfgMu.Unlock()
	if ok {
		return c.s.DeliveryLimit
	}
	return co.o.Config.settingsFrom(nil).DeliveryLimit
}

// now is the clock in unix ms.
func (co *Coordinator) now() int64 { return co.o.Now().UnixMilli() }

// sweeper expires acquisition locks and member sessions.
func (co *Coordinator) sweeper() {
	defer close(co.done)
	t := time.NewTicker(co.o.Sweep)
	defer t.Stop()
	for {
		select {
		case <-co.stop:
			return
		case <-t.C:
			co.sweep(context.Background())
		}
	}
}

// sweep runs one expiry pass: members whose session ended leave their
// groups; records whose lock ended are available again (or archived at the
// delivery limit) and made durable.
func (co *Coordinator) sweep(ctx context.Context) {
	now := co.now()
	var woke []hit
	co.mu.Lock()
	for id, g := range co.groups {
		// The limit of the settings last read: a sweep never reads the
		// store (the fetches and heartbeats of the group keep them fresh).
		limit := co.cachedLimit(id)
		for mid, m := range g.members {
			if m.deadline <= now {
				co.log.Info("share group member session expired", "group", id, "member", mid)
				woke = append(woke, co.removeMember(g, mid, limit)...)
			}
		}
		for tp, p := range g.parts {
			if p.Expire(now, limit) {
				woke = append(woke, hit{id, tp})
			}
		}
	}
	co.mu.Unlock()
	seen := map[hit]bool{}
	for _, h := range woke {
		if seen[h] {
			continue
		}
		seen[h] = true
		co.persist(ctx, h.group, h.tp)
		if co.o.Available != nil {
			co.o.Available(h.tp.Topic, h.tp.Partition)
		}
	}
}

// hit is a share partition whose records became available.
type hit struct {
	group string
	tp    TP
}

// removeMember takes mid out of g: its sessions close, its records are
// released, the group's epoch bumps and the others are reassigned. It
// returns the partitions whose records became available. co.mu is held.
func (co *Coordinator) removeMember(g *Group, mid string, limit int16) []hit {
	var out []hit
	delete(g.members, mid)
	if s := co.sessions[sessionKey{g.id, mid}]; s != nil {
		co.dropSession(sessionKey{g.id, mid}, s)
	}
	out = g.release(mid, limit, out)
	g.epoch++
	co.assign(g)
	return out
}

// release makes every record member holds in g's partitions available
// again (archived at limit deliveries) and appends the partitions that
// changed to out. co.mu is held.
func (g *Group) release(member string, limit int16, out []hit) []hit {
	for tp, p := range g.parts {
		if p.ReleaseMember(member, limit) {
			out = append(out, hit{g.id, tp})
		}
	}
	return out
}

// partWriter orders the durable writes of one share partition and lets
// one write carry every change made before it started (group commit):
// acknowledgements of many members of one partition wait for one store
// write, not one each.
type partWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	writing bool
	started uint64 // writes begun
	done    uint64 // the last write ended (writes end in the order begun)
	err     error  // its outcome
}

// persist makes the durable state of one share partition, as it is now,
// durable: it returns once a write that began after the call was made
// has ended, itself writing when no write is under way. Without co.mu.
func (co *Coordinator) persist(ctx context.Context, group string, tp TP) error {
	if co.o.Store == nil && !co.shared() {
		return nil
	}
	key := stateKey(group, tp.Topic, tp.Partition)
	v, ok := co.writes.Load(key)
	if !ok {
		w := &partWriter{}
		w.cond = sync.NewCond(&w.mu)
		v, _ = co.writes.LoadOrStore(key, w)
	}
	w := v.(*partWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.started + 1
	for w.done < target {
		if w.writing {
			w.cond.Wait()
			continue
		}
		w.writing = true
		w.started++
		mine := w.started
		w.mu.Unlock()
		err := co.writeState(ctx, group, tp, key)
		w.mu.Lock()
		w.writing = false
		w.done, w.err = mine, err
		w.cond.Broadcast()
	}
	return w.err
}

// writeState writes one share partition's state if it changed since the
// last write. The partition's writer is held. Without co.mu.
func (co *Coordinator) writeState(ctx context.Context, group string, tp TP, key string) error {
	co.mu.Lock()
	g := co.groups[group]
	var p *Partition
	if g != nil {
		p = g.parts[tp]
	}
	if p == nil || !p.dirty {
		co.mu.Unlock()
		return nil
	}
	v := appendState(nil, p)
	p.dirty = false
	rev := p.rev
	co.mu.Unlock()
	var err error
	if co.shared() {
		err = co.writeShared(ctx, group, tp, key, p, v, rev)
	} else {
		err = co.o.Store.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: key, Value: v}})
	}
	co.stats.StateWrites.Add(1)
	if err != nil {
		co.mu.Lock()
		p.dirty = true
		co.mu.Unlock()
	}
	return err
}

// forget deletes the durable state of the partitions of group named by
// tps. Without co.mu.
func (co *Coordinator) forget(ctx context.Context, group string, tps []TP) error {
	if co.shared() {
		for _, tp := range tps {
			key := stateKey(group, tp.Topic, tp.Partition)
			co.writes.Delete(key)
			if _, err := co.o.Shared.PutState(ctx, key, nil, AnyRevision); err != nil {
				return err
			}
		}
		return nil
	}
	if co.o.Store == nil || len(tps) == 0 {
		return nil
	}
	ents := make([]bridge.TxnStateEntry, len(tps))
	for i, tp := range tps {
		ents[i] = bridge.TxnStateEntry{Key: stateKey(group, tp.Topic, tp.Partition)}
		co.writes.Delete(ents[i].Key)
	}
	return co.o.Store.PutTxnStates(ctx, ents)
}

// assign computes every member's partitions with the simple share
// assignor: per topic, its partitions spread over the members subscribed
// to it; with more members than partitions every member gets one
// partition and a partition goes to several members (share groups allow
// it). A member whose assignment changed gets the group epoch. co.mu is
// held.
func (co *Coordinator) assign(g *Group) {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	next := make(map[string]map[string][]int32, len(ids))
	for _, id := range ids {
		next[id] = map[string][]int32{}
	}
	topics := make([]string, 0, len(g.meta))
	for t := range g.meta {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		n := g.meta[t].Partitions
		var subs []string
		for _, id := range ids {
			if containsSorted(g.members[id].topics, t) {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 || n <= 0 {
			continue
		}
		if int(n) >= len(subs) {
			for p := int32(0); p < n; p++ {
				id := subs[int(p)%len(subs)]
				next[id][t] = append(next[id][t], p)
			}
		} else {
			for i, id := range subs {
				next[id][t] = append(next[id][t], int32(i)%n)
			}
		}
	}
	g.assignEpoch = g.epoch
	for _, id := range ids {
		m := g.members[id]
		if !sameAssignment(m.assigned, next[id]) {
			m.assigned = next[id]
			m.epoch = g.epoch
		}
	}
}

func containsSorted(s []string, v string) bool {
	i := sort.SearchStrings(s, v)
	return i < len(s) && s[i] == v
}

func sameAssignment(a, b map[string][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		qs, ok := b[t]
		if !ok || len(ps) != len(qs) {
			return false
		}
		for i := range ps {
			if ps[i] != qs[i] {
				return false
			}
		}
	}
	return true
}

// ErrClosed is the answer of a closed coordinator.
var ErrClosed = errors.New("share: coordinator closed")

// storeCode is the Kafka code of a failed store write.
func storeCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// validGroupID is Kafka's rule for a share group id: not empty.
func validGroupID(id string) bool { return strings.TrimSpace(id) != "" }
