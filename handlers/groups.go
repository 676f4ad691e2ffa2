package handlers

// The consumer-group coordinator of the classic protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup; docs/CONSUMER_GROUPS.md). Membership is
// soft state in this process; committed offsets live in the Store
// (group_offsets.go).
//
// States, as on a Kafka broker: Empty (no members), PreparingRebalance (a
// join barrier is open), CompletingRebalance (the barrier closed; waiting for
// the leader's SyncGroup), Stable, Dead (deleted; only seen by a caller
// holding a removed group).
//
// Nothing here blocks a worker or the loop. A JoinGroup that must wait for
// the barrier, or a SyncGroup that must wait for the leader, registers a wait
// ticket and parks its call (Call.Park) on a key unique to the ticket; when
// the coordinator settles the ticket it stores the response and signals the
// key, and the re-run call collects it. Timers are time.AfterFunc: one per
// member (session), one per group (rebalance or sync deadline), one per
// pending KIP-394 member id. All state is under one mutex; group operations
// are rare next to Produce and Fetch.

import (
	"cmp"
	"crypto/rand"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupConfig bounds the coordinator. Zero fields take the defaults below.
type GroupConfig struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (Kafka's group.min/max.session.timeout.ms); outside is
	// INVALID_SESSION_TIMEOUT. Defaults 6s and 30m.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxRebalanceTimeout clamps a member's rebalance timeout. Default 30m.
	MaxRebalanceTimeout time.Duration
	// InitialRebalanceDelay holds the first rebalance of an empty group
	// open for more members (group.initial.rebalance.delay.ms). Default
	// 3s; negative means none.
	InitialRebalanceDelay time.Duration
	// NewMemberJoinTimeout removes a new member whose first join has not
	// completed in that time. Default 5m.
	NewMemberJoinTimeout time.Duration
	// MaxGroups caps groups held in memory; an idle Empty group gives
	// its slot up to a new one, and when none is idle a new group gets
	// COORDINATOR_NOT_AVAILABLE. Default 10000.
	MaxGroups int
	// MaxGroupSize caps the members of one group (GROUP_MAX_SIZE_REACHED).
	// Default 1000.
	MaxGroupSize int
	// MaxMembers caps members and pending member ids over all groups
	// (COORDINATOR_NOT_AVAILABLE beyond). Default 20000.
	MaxMembers int
	// MaxProtocols caps the protocols one member offers. Default 32.
	MaxProtocols int
	// MaxMetadataBytes caps one member's protocol metadata, all protocols
	// together, and MaxAssignmentBytes one member's assignment. Both
	// INVALID_REQUEST beyond. Default 1 MiB each.
	MaxMetadataBytes, MaxAssignmentBytes int
}

// Defaults of GroupConfig.
const (
	defaultMinSession       = 6 * time.Second
	defaultMaxSession       = 30 * time.Minute
	defaultMaxRebalance     = 30 * time.Minute
	defaultInitialDelay     = 3 * time.Second
	defaultNewMemberTimeout = 5 * time.Minute
	defaultMaxGroups        = 10000
	defaultMaxGroupSize     = 1000
	defaultMaxMembers       = 20000
	defaultMaxProtocols     = 32
	defaultMaxBlob          = 1 << 20
	// maxGroupIDLen keeps "kafka.cg." + group within Iggy's 255-byte
	// names (bridge/iggy offsets.go); longer ids get INVALID_GROUP_ID.
	maxGroupIDLen = 246
	// parkSlack is added to a wait's deadline: the coordinator's own
	// timers settle every ticket before it, the deadline is a backstop.
	parkSlack = 5 * time.Second
)

func (c GroupConfig) withDefaults() GroupConfig {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defi := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MinSessionTimeout, defaultMinSession)
	def(&c.MaxSessionTimeout, defaultMaxSession)
	def(&c.MaxRebalanceTimeout, defaultMaxRebalance)
	def(&c.InitialRebalanceDelay, defaultInitialDelay)
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	def(&c.NewMemberJoinTimeout, defaultNewMemberTimeout)
	defi(&c.MaxGroups, defaultMaxGroups)
	defi(&c.MaxGroupSize, defaultMaxGroupSize)
	defi(&c.MaxMembers, defaultMaxMembers)
	defi(&c.MaxProtocols, defaultMaxProtocols)
	defi(&c.MaxMetadataBytes, defaultMaxBlob)
	defi(&c.MaxAssignmentBytes, defaultMaxBlob)
	return c
}

// groupState is a group's state; the names are Kafka's, as DescribeGroups
// and ListGroups report them.
type groupState uint8

const (
	stateEmpty groupState = iota
	statePreparing
	stateCompleting
	stateStable
	stateDead
)

func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparing:
		return "PreparingRebalance"
	case stateCompleting:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	}
	return "Dead"
}

// Groups is the coordinator. Safe for concurrent use.
type Groups struct {
	cfg   GroupConfig
	watch *Watchers
	log   *slog.Logger

	mu      sync.Mutex
	groups  map[string]*group
	members int // members and pending ids over all groups
	ticket  uint64
	results map[uint64]kmsg.Response // settled tickets not yet collected
}

// NewGroups returns a coordinator that wakes parked calls through w.
func NewGroups(cfg GroupConfig, w *Watchers, log *slog.Logger) *Groups {
	if log == nil {
		log = slog.Default()
	}
	return &Groups{
		cfg:     cfg.withDefaults(),
		watch:   w,
		log:     log,
		groups:  make(map[string]*group),
		results: make(map[uint64]kmsg.Response),
	}
}

type protocol struct {
	name string
	meta []byte
}

type member struct {
	id, instance, clientID, clientHost string
	session, rebalance                 time.Duration
	protocolType                       string
	protocols                          []protocol
	assignment                         []byte
	joinedAt                           uint64 // order of first join, for leader choice

	isNew      bool
	joinTicket uint64 // a parked JoinGroup; 0 = not awaiting join
	joinVer    int16
	syncTicket uint64 // a parked SyncGroup
	syncVer    int16
	synced     bool // sent SyncGroup in this generation

	deadline time.Time // session expiry
	timer    *time.Timer
}

func (m *member) awaitingJoin() bool { return m.joinTicket != 0 }

type group struct {
	name         string
	state        groupState
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string      // instance id -> member id
	pending      map[string]*time.Timer // KIP-394 ids handed out, not joined
	joinSeq      uint64

	timer     *time.Timer // rebalance or pending-sync deadline
	timerGen  uint64      // bumps on every (re)arm, so a stale fire is ignored
	deadline  time.Time   // of the rebalance in progress
	delayEnd  time.Time   // initial delay: the latest the barrier may extend to
	delaying  bool
	newJoined bool // a new member joined during the initial delay
}

// groupWait is what a parked JoinGroup or SyncGroup re-runs with.
type groupWait struct {
	ticket uint64
	key    PartitionKey
	final  func() kmsg.Response // the answer when the deadline passes first
}

func waitKey(t uint64) PartitionKey {
	return PartitionKey{Topic: "\x00group-wait:" + strconv.FormatUint(t, 10)}
}

// newTicket registers a wait; gs.mu is held.
func (gs *Groups) newTicket() uint64 {
	gs.ticket++
	return gs.ticket
}

// settle stores resp for ticket t and wakes its call; gs.mu is held. The
// wake is sent after a short delay again while the result lies
// uncollected, which covers a call that decided to park but whose watch
// the loop had not yet registered when the first signal went out.
func (gs *Groups) settle(t uint64, resp kmsg.Response, wake *[]uint64) {
	if t == 0 {
		return
	}
	gs.results[t] = resp
	*wake = append(*wake, t)
}

// wakeAll signals the tickets; gs.mu must NOT be held.
func (gs *Groups) wakeAll(ts []uint64) {
	for _, t := range ts {
		gs.wakeTicket(t, 0)
	}
}

func (gs *Groups) wakeTicket(t uint64, attempt int) {
	k := waitKey(t)
	gs.watch.mu.Lock()
	_, watched := gs.watch.byPK[k]
	gs.watch.mu.Unlock()
	if watched {
		gs.signal(k)
		return
	}
	if attempt >= 8 {
		return // the park deadline answers it
	}
	time.AfterFunc(time.Millisecond<<(2*attempt), func() {
		gs.mu.Lock()
		_, pending := gs.results[t]
		gs.mu.Unlock()
		if pending {
			gs.wakeTicket(t, attempt+1)
		}
	})
}

// signal runs the callbacks on k without counting a generation for it
// (ticket keys are used once).
func (gs *Groups) signal(k PartitionKey) {
	w := gs.watch
	w.mu.Lock()
	m := w.byPK[k]
	delete(w.byPK, k)
	w.mu.Unlock()
	for _, fn := range m {
		fn()
	}
}

// resume collects the result of a parked call's ticket, or on the final
// run gives up the wait. ok=false: park again.
func (gs *Groups) resume(c *Call) (kmsg.Response, bool) {
	w := c.gwait
	gs.mu.Lock()
	resp, ok := gs.results[w.ticket]
	if ok {
		delete(gs.results, w.ticket)
	} else if c.Final {
		gs.abandon(w.ticket)
	}
	gs.mu.Unlock()
	if ok {
		c.gwait = nil
		return resp, true
	}
	if c.Final {
		c.gwait = nil
		return w.final(), true
	}
	return nil, false
}

// abandon forgets a ticket whose call stopped waiting; gs.mu is held.
func (gs *Groups) abandon(t uint64) {
	for _, g := range gs.groups {
		for _, m := range g.members {
			if m.joinTicket == t {
				m.joinTicket = 0
			}
			if m.syncTicket == t {
				m.syncTicket = 0
			}
		}
	}
}

// park parks c on ticket t until at most until.
func park(c *Call, t uint64, until time.Time, final func() kmsg.Response) {
	c.gwait = &groupWait{ticket: t, key: waitKey(t), final: final}
	c.Park([]PartitionKey{c.gwait.key}, until)
}

func newMemberID(prefix string) string {
	if len(prefix) > 128 {
		prefix = prefix[:128]
	}
	return prefix + "-" + rand.Text()
}

// validGroupID: Kafka allows any non-empty id; ours must fit an Iggy name.
func validGroupID(g string) bool { return g != "" && len(g) <= maxGroupIDLen }

// ---- timers ----

// touch restarts m's session; gs.mu is held.
func (gs *Groups) touch(g *group, m *member) {
	m.deadline = time.Now().Add(m.session)
	if m.timer == nil {
		gname, mid := g.name, m.id
		m.timer = time.AfterFunc(m.session, func() { gs.sessionCheck(gname, mid) })
	}
}

// sessionCheck runs when a member's timer fires: expire it, or re-arm for
// the rest of its session.
func (gs *Groups) sessionCheck(gname, mid string) {
	var wake []uint64
	gs.mu.Lock()
	g := gs.groups[gname]
	var m *member
	if g != nil {
		m = g.members[mid]
	}
	if m == nil || m.timer == nil {
		gs.mu.Unlock()
		return
	}
	now := time.Now()
	keep := now.Before(m.deadline)
	if !keep && (m.awaitingJoin() || m.syncTicket != 0) {
		// A parked join or sync keeps the member alive, as on Kafka;
		// the rebalance deadline bounds it. A new member's first join
		// is bounded by NewMemberJoinTimeout.
		keep = !m.isNew || now.Before(m.deadline.Add(gs.cfg.NewMemberJoinTimeout-m.session))
	}
	if keep {
		d := max(time.Until(m.deadline), time.Second)
		m.timer.Reset(d)
		gs.mu.Unlock()
		return
	}
	gs.log.Info("group member session expired", "group", gname, "member", mid)
	gs.removeMember(g, m, &wake)
	gs.afterRemoval(g, &wake)
	gs.mu.Unlock()
	gs.wakeAll(wake)
}

// armGroupTimer (re)arms the group's deadline timer; gs.mu is held.
func (gs *Groups) armGroupTimer(g *group, d time.Duration, fn func(*group, *[]uint64)) {
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timerGen++
	gen, name := g.timerGen, g.name
	g.timer = time.AfterFunc(d, func() {
		var wake []uint64
		gs.mu.Lock()
		cur := gs.groups[name]
		if cur == g && g.timerGen == gen {
			g.timer = nil
			fn(g, &wake)
		}
		gs.mu.Unlock()
		gs.wakeAll(wake)
	})
}

func (g *group) stopTimer() {
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	g.timerGen++
}

// ---- rebalance ----

// prepareRebalance opens a join barrier; gs.mu is held.
func (gs *Groups) prepareRebalance(g *group, wake *[]uint64) {
	if g.state == stateCompleting {
		// Members parked in SyncGroup learn of the new rebalance.
		for _, m := range g.members {
			if m.syncTicket != 0 {
				gs.settle(m.syncTicket, syncError(m.syncVer, kerr.RebalanceInProgress.Code), wake)
				m.syncTicket = 0
			}
		}
	}
	for _, m := range g.members {
		m.assignment = nil
		m.synced = false
	}
	first := g.state == stateEmpty
	g.state = statePreparing
	rt := time.Duration(0)
	for _, m := range g.members {
		rt = max(rt, m.rebalance)
	}
	now := time.Now()
	if first && gs.cfg.InitialRebalanceDelay > 0 {
		delay := min(gs.cfg.InitialRebalanceDelay, rt)
		g.delaying, g.newJoined = true, false
		g.delayEnd = now.Add(rt)
		g.deadline = now.Add(delay)
		gs.armGroupTimer(g, delay, gs.delayExpired)
		return
	}
	g.delaying = false
	g.deadline = now.Add(rt)
	gs.armGroupTimer(g, rt, gs.rebalanceExpired)
	gs.tryCompleteJoin(g, wake)
}

// delayExpired ends (or extends) the initial rebalance delay.
func (gs *Groups) delayExpired(g *group, wake *[]uint64) {
	if g.state != statePreparing {
		return
	}
	now := time.Now()
	if g.newJoined && now.Before(g.delayEnd) {
		g.newJoined = false
		d := min(gs.cfg.InitialRebalanceDelay, g.delayEnd.Sub(now))
		g.deadline = now.Add(d)
		gs.armGroupTimer(g, d, gs.delayExpired)
		return
	}
	g.delaying = false
	gs.completeJoin(g, wake)
}

// rebalanceExpired closes the barrier at the rebalance timeout: members
// that did not rejoin are removed.
func (gs *Groups) rebalanceExpired(g *group, wake *[]uint64) {
	if g.state != statePreparing {
		return
	}
	gs.completeJoin(g, wake)
}

// allJoined: every member is awaiting join and no KIP-394 id is pending.
func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if !m.awaitingJoin() {
			return false
		}
	}
	return true
}

// tryCompleteJoin closes the barrier when everyone is in; gs.mu is held.
func (gs *Groups) tryCompleteJoin(g *group, wake *[]uint64) {
	if g.state == statePreparing && !g.delaying && g.allJoined() {
		gs.completeJoin(g, wake)
	}
}

// completeJoin removes members that did not rejoin, starts the next
// generation and answers every parked JoinGroup; gs.mu is held.
func (gs *Groups) completeJoin(g *group, wake *[]uint64) {
	for _, m := range g.members {
		if !m.awaitingJoin() {
			gs.removeMember(g, m, wake)
		}
	}
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
		gs.members--
	}
	g.stopTimer()
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = stateEmpty, "", ""
		gs.maybeForget(g)
		return
	}
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.firstJoined()
	}
	g.state = stateCompleting
	for _, m := range g.members {
		t, ver := m.joinTicket, m.joinVer
		m.joinTicket, m.isNew = 0, false
		gs.touch(g, m)
		gs.settle(t, g.joinResponse(m, ver, false), wake)
	}
	// Members that never send SyncGroup are removed at the rebalance
	// timeout, as on Kafka.
	rt := time.Duration(0)
	for _, m := range g.members {
		rt = max(rt, m.rebalance)
	}
	gs.armGroupTimer(g, rt, gs.syncExpired)
}

// syncExpired removes members that did not sync in time and rebalances.
func (gs *Groups) syncExpired(g *group, wake *[]uint64) {
	if g.state != stateCompleting && g.state != stateStable {
		return
	}
	removed := false
	for _, m := range g.members {
		if !m.synced {
			gs.removeMember(g, m, wake)
			removed = true
		}
	}
	if removed {
		gs.afterRemoval(g, wake)
	}
}

func (g *group) firstJoined() string {
	best, id := uint64(0), ""
	for _, m := range g.members {
		if id == "" || m.joinedAt < best {
			best, id = m.joinedAt, m.id
		}
	}
	return id
}

// selectProtocol picks, among the protocols every member supports, the one
// with the most votes: each member votes for the first of its own protocols
// that all members support; ties go to the leader's order.
func (g *group) selectProtocol() string {
	var candidates []string
	var ref *member
	if l := g.members[g.leader]; l != nil {
		ref = l
	} else {
		ref = g.members[g.firstJoined()]
	}
	for _, p := range ref.protocols {
		all := true
		for _, m := range g.members {
			if !m.supports(p.name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.name)
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if slices.Contains(candidates, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best := candidates[0]
	for _, c := range candidates[1:] {
		if votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func (m *member) supports(name string) bool {
	for _, p := range m.protocols {
		if p.name == name {
			return true
		}
	}
	return false
}

func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.meta
		}
	}
	return nil
}

// sameProtocols reports whether ps equals m's protocols.
func (m *member) sameProtocols(ps []protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || string(ps[i].meta) != string(m.protocols[i].meta) {
			return false
		}
	}
	return true
}

// joinResponse is what m gets when the barrier closes (or on a rejoin
// answered from the current generation). The leader gets the members.
func (g *group) joinResponse(m *member, ver int16, skip bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = ver
	r.Generation = g.generation
	r.ProtocolType = strp(g.protocolType)
	r.Protocol = strp(g.protocol)
	r.LeaderID = g.leader
	r.MemberID = m.id
	if m.id == g.leader {
		r.SkipAssignment = skip && ver >= 9
		ids := make([]string, 0, len(g.members))
		for id := range g.members {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b string) int {
			return cmp.Compare(g.members[a].joinedAt, g.members[b].joinedAt)
		})
		for _, id := range ids {
			o := g.members[id]
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = o.id
			if o.instance != "" {
				jm.InstanceID = strp(o.instance)
			}
			jm.ProtocolMetadata = o.metadata(g.protocol)
			r.Members = append(r.Members, jm)
		}
	}
	return r
}

func joinError(ver int16, code int16, memberID string) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = ver
	r.ErrorCode = code
	r.Generation = -1
	r.MemberID = memberID
	return r
}

func syncError(ver int16, code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = ver
	r.ErrorCode = code
	return r
}

// removeMember drops m, answering its parked calls; gs.mu is held. The
// caller runs afterRemoval once it removed what it meant to.
func (gs *Groups) removeMember(g *group, m *member, wake *[]uint64) {
	if m.joinTicket != 0 {
		gs.settle(m.joinTicket, joinError(m.joinVer, kerr.UnknownMemberID.Code, ""), wake)
		m.joinTicket = 0
	}
	if m.syncTicket != 0 {
		gs.settle(m.syncTicket, syncError(m.syncVer, kerr.UnknownMemberID.Code), wake)
		m.syncTicket = 0
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if m.instance != "" && g.static[m.instance] == m.id {
		delete(g.static, m.instance)
	}
	delete(g.members, m.id)
	gs.members--
	if g.leader == m.id {
		g.leader = ""
	}
}

// afterRemoval moves the group on after members left; gs.mu is held.
func (gs *Groups) afterRemoval(g *group, wake *[]uint64) {
	switch g.state {
	case stateStable, stateCompleting:
		if len(g.members) == 0 {
			g.stopTimer()
			g.state, g.protocol, g.leader = stateEmpty, "", ""
			g.generation++
			gs.maybeForget(g)
			return
		}
		gs.prepareRebalance(g, wake)
	case statePreparing:
		if len(g.members) == 0 && len(g.pending) == 0 {
			gs.completeJoin(g, wake)
			return
		}
		gs.tryCompleteJoin(g, wake)
	}
}

// maybeForget retires a group left with no members: it stays in memory as
// Empty (as on Kafka, so ListGroups and DescribeGroups see it even on a
// store that cannot list groups) until DeleteGroups, or until a new group
// needs its slot (newGroupSlot). gs.mu is held.
func (gs *Groups) maybeForget(g *group) {
	if g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 {
		g.stopTimer()
	}
}

// newGroupSlot makes room for one more group under MaxGroups by dropping
// an idle Empty group (its offsets stay in the store); false when every
// group is in use. gs.mu is held.
func (gs *Groups) newGroupSlot() bool {
	if len(gs.groups) < gs.cfg.MaxGroups {
		return true
	}
	for name, g := range gs.groups {
		if g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 {
			g.stopTimer()
			delete(gs.groups, name)
			return true
		}
	}
	return false
}

// NoteCommitted records that group committed offsets, so it is listed
// (Empty) while this gateway runs even on a store that cannot enumerate
// groups.
func (gs *Groups) NoteCommitted(name string) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.groups[name] != nil || !gs.newGroupSlot() {
		return
	}
	gs.groups[name] = &group{name: name, protocolType: "consumer", members: map[string]*member{}, static: map[string]string{}, pending: map[string]*time.Timer{}}
}

// ---- requests ----

// joinArgs is a decoded JoinGroup.
type joinArgs struct {
	ver                int16
	group, memberID    string
	instance           string
	clientID           string
	clientHost         string
	session, rebalance time.Duration
	protocolType       string
	protocols          []protocol
}

// Join runs a JoinGroup. It returns the response, or a ticket and the
// latest the call should wait for it.
func (gs *Groups) Join(a *joinArgs) (kmsg.Response, uint64, time.Time) {
	ver := a.ver
	if !validGroupID(a.group) {
		return joinError(ver, kerr.InvalidGroupID.Code, a.memberID), 0, time.Time{}
	}
	if a.session < gs.cfg.MinSessionTimeout || a.session > gs.cfg.MaxSessionTimeout {
		return joinError(ver, kerr.InvalidSessionTimeout.Code, a.memberID), 0, time.Time{}
	}
	if a.protocolType == "" || len(a.protocols) == 0 {
		return joinError(ver, kerr.InconsistentGroupProtocol.Code, a.memberID), 0, time.Time{}
	}
	if len(a.protocols) > gs.cfg.MaxProtocols {
		return joinError(ver, kerr.InvalidRequest.Code, a.memberID), 0, time.Time{}
	}
	size := 0
	for _, p := range a.protocols {
		size += len(p.name) + len(p.meta)
	}
	if size > gs.cfg.MaxMetadataBytes {
		return joinError(ver, kerr.InvalidRequest.Code, a.memberID), 0, time.Time{}
	}
	a.rebalance = min(max(a.rebalance, a.session), gs.cfg.MaxRebalanceTimeout)

	var wake []uint64
	gs.mu.Lock()
	resp, t, until := gs.join(a, &wake)
	gs.mu.Unlock()
	gs.wakeAll(wake)
	return resp, t, until
}

func (gs *Groups) join(a *joinArgs, wake *[]uint64) (kmsg.Response, uint64, time.Time) {
	ver := a.ver
	g := gs.groups[a.group]
	if g == nil {
		if a.memberID != "" {
			return joinError(ver, kerr.UnknownMemberID.Code, a.memberID), 0, time.Time{}
		}
		if !gs.newGroupSlot() {
			return joinError(ver, kerr.CoordinatorNotAvailable.Code, a.memberID), 0, time.Time{}
		}
		g = &group{name: a.group, members: map[string]*member{}, static: map[string]string{}, pending: map[string]*time.Timer{}}
		gs.groups[a.group] = g
	}
	// The protocol type must match, and some protocol must be supported
	// by every member (the joining one replacing its old self).
	if g.state != stateEmpty || len(g.members) > 0 {
		if a.protocolType != g.protocolType || !g.compatible(a) {
			gs.maybeForget(g)
			return joinError(ver, kerr.InconsistentGroupProtocol.Code, a.memberID), 0, time.Time{}
		}
	}

	if a.memberID == "" {
		if a.instance != "" {
			return gs.joinStaticUnknown(g, a, wake)
		}
		if len(g.members)+len(g.pending) >= gs.cfg.MaxGroupSize {
			gs.maybeForget(g)
			return joinError(ver, kerr.GroupMaxSizeReached.Code, ""), 0, time.Time{}
		}
		if gs.members >= gs.cfg.MaxMembers {
			gs.maybeForget(g)
			return joinError(ver, kerr.CoordinatorNotAvailable.Code, ""), 0, time.Time{}
		}
		id := newMemberID(a.clientID)
		if ver >= 4 {
			// KIP-394: hand out an id and wait for the join carrying it.
			gname := g.name
			g.pending[id] = time.AfterFunc(a.session, func() { gs.pendingExpired(gname, id) })
			gs.members++
			return joinError(ver, kerr.MemberIDRequired.Code, id), 0, time.Time{}
		}
		gs.members++
		return gs.addMemberAndRebalance(g, a, id, wake)
	}

	if t, ok := g.pending[a.memberID]; ok {
		t.Stop()
		delete(g.pending, a.memberID)
		gs.members--
		if len(g.members) >= gs.cfg.MaxGroupSize {
			gs.afterRemoval(g, wake)
			return joinError(ver, kerr.GroupMaxSizeReached.Code, a.memberID), 0, time.Time{}
		}
		gs.members++
		return gs.addMemberAndRebalance(g, a, a.memberID, wake)
	}
	m := g.members[a.memberID]
	if a.instance != "" {
		if cur, ok := g.static[a.instance]; ok && cur != a.memberID {
			return joinError(ver, kerr.FencedInstanceID.Code, a.memberID), 0, time.Time{}
		}
	}
	if m == nil {
		return joinError(ver, kerr.UnknownMemberID.Code, a.memberID), 0, time.Time{}
	}
	switch g.state {
	case statePreparing:
		return gs.updateAndAwait(g, m, a, wake)
	case stateCompleting:
		if m.sameProtocols(a.protocols) {
			// A retried join of this generation: answer it again.
			gs.touch(g, m)
			return g.joinResponse(m, ver, false), 0, time.Time{}
		}
		return gs.updateAndRebalance(g, m, a, wake)
	case stateStable:
		if m.id == g.leader || !m.sameProtocols(a.protocols) {
			return gs.updateAndRebalance(g, m, a, wake)
		}
		gs.touch(g, m)
		return g.joinResponse(m, ver, false), 0, time.Time{}
	}
	return joinError(ver, kerr.UnknownMemberID.Code, a.memberID), 0, time.Time{}
}

// compatible: a's protocols share one with every other member's.
func (g *group) compatible(a *joinArgs) bool {
	for _, p := range a.protocols {
		ok := true
		for id, m := range g.members {
			if id == a.memberID || (a.instance != "" && m.instance == a.instance) {
				continue
			}
			if !m.supports(p.name) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// joinStaticUnknown: a member with a group.instance.id and no member id.
// A known instance gets a new member id in place of the old one; when the
// group is Stable and its protocols did not change it keeps its
// assignment and the group does not rebalance (KIP-345).
func (gs *Groups) joinStaticUnknown(g *group, a *joinArgs, wake *[]uint64) (kmsg.Response, uint64, time.Time) {
	ver := a.ver
	oldID, known := g.static[a.instance]
	newID := newMemberID(a.instance)
	if !known {
		if len(g.members)+len(g.pending) >= gs.cfg.MaxGroupSize {
			gs.maybeForget(g)
			return joinError(ver, kerr.GroupMaxSizeReached.Code, ""), 0, time.Time{}
		}
		if gs.members >= gs.cfg.MaxMembers {
			gs.maybeForget(g)
			return joinError(ver, kerr.CoordinatorNotAvailable.Code, ""), 0, time.Time{}
		}
		gs.members++
		return gs.addMemberAndRebalance(g, a, newID, wake)
	}
	old := g.members[oldID]
	// Fence the old incarnation: its parked calls learn it is gone.
	if old.joinTicket != 0 {
		gs.settle(old.joinTicket, joinError(old.joinVer, kerr.FencedInstanceID.Code, oldID), wake)
		old.joinTicket = 0
	}
	if old.syncTicket != 0 {
		gs.settle(old.syncTicket, syncError(old.syncVer, kerr.FencedInstanceID.Code), wake)
		old.syncTicket = 0
	}
	if old.timer != nil {
		old.timer.Stop()
		old.timer = nil
	}
	delete(g.members, oldID)
	old.id = newID
	g.members[newID] = old
	g.static[a.instance] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	old.clientID, old.session, old.rebalance = a.clientID, a.session, a.rebalance
	gs.touch(g, old)
	if g.state == stateStable && old.sameProtocols(a.protocols) {
		return g.joinResponse(old, ver, true), 0, time.Time{}
	}
	return gs.updateAndRebalance(g, old, a, wake)
}

// addMemberAndRebalance adds a new member and parks its join; gs.mu is
// held and gs.members already counts it.
func (gs *Groups) addMemberAndRebalance(g *group, a *joinArgs, id string, wake *[]uint64) (kmsg.Response, uint64, time.Time) {
	g.joinSeq++
	m := &member{
		id: id, instance: a.instance, clientID: a.clientID, clientHost: a.clientHost,
		session: a.session, rebalance: a.rebalance,
		protocolType: a.protocolType, protocols: a.protocols,
		joinedAt: g.joinSeq, isNew: true,
	}
	if len(g.members) == 0 {
		g.protocolType = a.protocolType
	}
	g.members[id] = m
	if a.instance != "" {
		g.static[a.instance] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	gs.touch(g, m)
	t := gs.newTicket()
	m.joinTicket, m.joinVer = t, a.ver
	if g.state == statePreparing {
		if g.delaying {
			g.newJoined = true
		}
		gs.tryCompleteJoin(g, wake)
	} else {
		gs.prepareRebalance(g, wake)
	}
	return gs.joinOutcome(g, m, t, wake)
}

// joinOutcome answers a join at once when the barrier already closed
// (wake then holds its own ticket), else parks it.
func (gs *Groups) joinOutcome(g *group, m *member, t uint64, wake *[]uint64) (kmsg.Response, uint64, time.Time) {
	// Other tickets settled by this join are woken by Join after it
	// unlocks; ours is answered directly.
	if mine, ok := gs.results[t]; ok {
		delete(gs.results, t)
		*wake = slices.DeleteFunc(*wake, func(w uint64) bool { return w == t })
		return mine, 0, time.Time{}
	}
	until := g.deadline
	if own := time.Now().Add(m.rebalance); own.After(until) {
		until = own
	}
	return nil, t, until.Add(parkSlack)
}

// updateAndRebalance records m's new protocols and starts a rebalance.
func (gs *Groups) updateAndRebalance(g *group, m *member, a *joinArgs, wake *[]uint64) (kmsg.Response, uint64, time.Time) {
	m.protocols, m.clientID, m.clientHost = a.protocols, a.clientID, a.clientHost
	m.session, m.rebalance = a.session, a.rebalance
	gs.touch(g, m)
	t := gs.newTicket()
	m.joinTicket, m.joinVer = t, a.ver
	gs.prepareRebalance(g, wake)
	return gs.joinOutcome(g, m, t, wake)
}

// updateAndAwait: a member rejoining an open barrier.
func (gs *Groups) updateAndAwait(g *group, m *member, a *joinArgs, wake *[]uint64) (kmsg.Response, uint64, time.Time) {
	m.protocols, m.clientID, m.clientHost = a.protocols, a.clientID, a.clientHost
	m.session, m.rebalance = a.session, a.rebalance
	gs.touch(g, m)
	if m.joinTicket != 0 {
		// A second join of the same member replaces the first.
		gs.settle(m.joinTicket, joinError(m.joinVer, kerr.RebalanceInProgress.Code, m.id), wake)
	}
	t := gs.newTicket()
	m.joinTicket, m.joinVer = t, a.ver
	gs.tryCompleteJoin(g, wake)
	return gs.joinOutcome(g, m, t, wake)
}

// pendingExpired drops a KIP-394 id that never joined.
func (gs *Groups) pendingExpired(gname, id string) {
	var wake []uint64
	gs.mu.Lock()
	if g := gs.groups[gname]; g != nil {
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			gs.members--
			if g.state == statePreparing {
				gs.tryCompleteJoin(g, &wake)
			} else {
				gs.maybeForget(g)
			}
		}
	}
	gs.mu.Unlock()
	gs.wakeAll(wake)
}

// syncArgs is a decoded SyncGroup.
type syncArgs struct {
	ver                    int16
	group, memberID        string
	instance               string
	generation             int32
	protocolType, protocol *string
	assignments            map[string][]byte
}

func (gs *Groups) syncOK(g *group, m *member, ver int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = ver
	r.ProtocolType = strp(g.protocolType)
	r.Protocol = strp(g.protocol)
	r.MemberAssignment = m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// Sync runs a SyncGroup: a response, or a ticket to wait on.
func (gs *Groups) Sync(a *syncArgs) (kmsg.Response, uint64, time.Time) {
	for _, b := range a.assignments {
		if len(b) > gs.cfg.MaxAssignmentBytes {
			return syncError(a.ver, kerr.InvalidRequest.Code), 0, time.Time{}
		}
	}
	var wake []uint64
	gs.mu.Lock()
	resp, t, until := gs.sync(a, &wake)
	gs.mu.Unlock()
	gs.wakeAll(wake)
	return resp, t, until
}

func (gs *Groups) sync(a *syncArgs, wake *[]uint64) (kmsg.Response, uint64, time.Time) {
	ver := a.ver
	g := gs.groups[a.group]
	if g == nil {
		return syncError(ver, kerr.UnknownMemberID.Code), 0, time.Time{}
	}
	if a.instance != "" {
		if cur, ok := g.static[a.instance]; ok && cur != a.memberID {
			return syncError(ver, kerr.FencedInstanceID.Code), 0, time.Time{}
		}
	}
	m := g.members[a.memberID]
	if m == nil {
		return syncError(ver, kerr.UnknownMemberID.Code), 0, time.Time{}
	}
	if a.generation != g.generation {
		return syncError(ver, kerr.IllegalGeneration.Code), 0, time.Time{}
	}
	if (a.protocolType != nil && *a.protocolType != g.protocolType) || (a.protocol != nil && *a.protocol != g.protocol) {
		return syncError(ver, kerr.InconsistentGroupProtocol.Code), 0, time.Time{}
	}
	switch g.state {
	case statePreparing:
		return syncError(ver, kerr.RebalanceInProgress.Code), 0, time.Time{}
	case stateStable:
		m.synced = true
		gs.touch(g, m)
		return gs.syncOK(g, m, ver), 0, time.Time{}
	case stateCompleting:
	default:
		return syncError(ver, kerr.UnknownMemberID.Code), 0, time.Time{}
	}
	m.synced = true
	gs.touch(g, m)
	if m.id != g.leader {
		if m.syncTicket != 0 {
			gs.settle(m.syncTicket, syncError(m.syncVer, kerr.RebalanceInProgress.Code), wake)
		}
		t := gs.newTicket()
		m.syncTicket, m.syncVer = t, ver
		return nil, t, time.Now().Add(m.rebalance + parkSlack)
	}
	// The leader's assignment: members it left out get an empty one.
	for id, o := range g.members {
		o.assignment = a.assignments[id]
		if o.syncTicket != 0 {
			gs.settle(o.syncTicket, gs.syncOK(g, o, o.syncVer), wake)
			o.syncTicket = 0
		}
	}
	g.state = stateStable
	// Members that have not synced yet are removed at the sync deadline
	// (already armed by completeJoin).
	if g.allSynced() {
		g.stopTimer()
	}
	return gs.syncOK(g, m, ver), 0, time.Time{}
}

func (g *group) allSynced() bool {
	for _, m := range g.members {
		if !m.synced {
			return false
		}
	}
	return true
}

// Heartbeat answers a heartbeat's error code.
func (gs *Groups) Heartbeat(group, memberID, instance string, generation int32) int16 {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.groups[group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if instance != "" {
		if cur, ok := g.static[instance]; ok && cur != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	gs.touch(g, m)
	if g.state == statePreparing {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// leaveOne is one member leaving.
type leaveOne struct {
	memberID, instance string
	code               int16
}

// Leave removes members; it fills each one's code and returns the
// group-level code.
func (gs *Groups) Leave(group string, who []leaveOne) int16 {
	var wake []uint64
	gs.mu.Lock()
	defer func() {
		gs.mu.Unlock()
		gs.wakeAll(wake)
	}()
	g := gs.groups[group]
	if g == nil {
		for i := range who {
			who[i].code = kerr.UnknownMemberID.Code
		}
		return 0
	}
	removed := false
	for i := range who {
		w := &who[i]
		id := w.memberID
		if w.instance != "" {
			cur, ok := g.static[w.instance]
			switch {
			case !ok:
				w.code = kerr.UnknownMemberID.Code
				continue
			case id != "" && id != cur:
				w.code = kerr.FencedInstanceID.Code
				continue
			}
			id = cur
		} else if t, ok := g.pending[id]; ok {
			t.Stop()
			delete(g.pending, id)
			gs.members--
			removed = true
			continue
		}
		m := g.members[id]
		if m == nil {
			w.code = kerr.UnknownMemberID.Code
			continue
		}
		gs.removeMember(g, m, &wake)
		removed = true
	}
	if removed {
		gs.afterRemoval(g, &wake)
		gs.maybeForget(g)
	}
	return 0
}

// CommitCheck is the membership check of an OffsetCommit: 0 means the
// commit may go to the store.
func (gs *Groups) CommitCheck(group, memberID, instance string, generation int32) int16 {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.groups[group]
	if g == nil || (g.state == stateEmpty && len(g.members) == 0) {
		if generation < 0 {
			return 0 // a simple consumer or an admin tool
		}
		// A group that is not live: the member's generation is gone
		// (a gateway restart, or the member was removed).
		if memberID != "" {
			return kerr.UnknownMemberID.Code
		}
		return kerr.IllegalGeneration.Code
	}
	if instance != "" {
		if cur, ok := g.static[instance]; ok && cur != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	if g.state == stateCompleting {
		return kerr.RebalanceInProgress.Code
	}
	// Stable, or PreparingRebalance (a member commits while revoking).
	gs.touch(g, m)
	return 0
}

// groupView is a snapshot of a group for DescribeGroups and friends.
type groupView struct {
	state        groupState
	protocolType string
	protocol     string
	members      []memberView
}

type memberView struct {
	id, instance, clientID, clientHost string
	metadata, assignment               []byte
	topics                             []string // consumer protocol subscription, when parseable
}

// View returns the group's live state; ok=false when it is not in memory.
func (gs *Groups) View(name string) (groupView, bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.groups[name]
	if g == nil {
		return groupView{}, false
	}
	v := groupView{state: g.state, protocolType: g.protocolType, protocol: g.protocol}
	ids := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ids = append(ids, m)
	}
	slices.SortFunc(ids, func(a, b *member) int { return cmp.Compare(a.joinedAt, b.joinedAt) })
	for _, m := range ids {
		mv := memberView{id: m.id, instance: m.instance, clientID: m.clientID, clientHost: m.clientHost}
		if g.state == stateStable {
			mv.assignment = m.assignment
		}
		if g.state != statePreparing {
			mv.metadata = m.metadata(g.protocol)
		}
		if g.protocolType == "consumer" {
			for _, p := range m.protocols {
				var cm kmsg.ConsumerMemberMetadata
				if cm.ReadFrom(p.meta) == nil {
					mv.topics = append(mv.topics, cm.Topics...)
				}
			}
		}
		v.members = append(v.members, mv)
	}
	return v, true
}

// Names lists the groups in memory with their state and protocol type.
func (gs *Groups) Names() []groupName {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	out := make([]groupName, 0, len(gs.groups))
	for _, g := range gs.groups {
		out = append(out, groupName{g.name, g.state, g.protocolType})
	}
	return out
}

type groupName struct {
	name         string
	state        groupState
	protocolType string
}

// Delete removes a group from memory if it has no members: 0, or
// NON_EMPTY_GROUP. known says it was in memory.
func (gs *Groups) Delete(name string) (code int16, known bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.groups[name]
	if g == nil {
		return 0, false
	}
	if len(g.members) > 0 || len(g.pending) > 0 {
		return kerr.NonEmptyGroup.Code, true
	}
	g.stopTimer()
	g.state = stateDead
	delete(gs.groups, name)
	return 0, true
}

// unwired holds the coordinators of gateways built by hand without
// NewGateway (older test helpers), so the group keys still work there.
var unwired sync.Map // *Gateway -> *Groups

// coordinator returns g.Groups, or a coordinator made once for a gateway
// whose Groups field was never set.
func (g *Gateway) coordinator() *Groups {
	if g.Groups != nil {
		return g.Groups
	}
	if v, ok := unwired.Load(g); ok {
		return v.(*Groups)
	}
	v, _ := unwired.LoadOrStore(g, NewGroups(g.Cfg.Groups, g.Watch, g.Log))
	return v.(*Groups)
}
