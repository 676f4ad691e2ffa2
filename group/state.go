package group

// The classic protocol's state machine: a group's members, its generation
// and the timers that move it on. States, as on a Kafka broker: Empty (no
// members), PreparingRebalance (a join barrier is open),
// CompletingRebalance (the barrier closed; waiting for the leader's
// SyncGroup), Stable, Dead (deleted; only seen by a caller holding a
// removed group). Every function here runs with co.mu held (timer
// callbacks, Close and view take it first) and never blocks; tickets
// settled on the way are collected in wake and signalled by the caller
// after it unlocked.

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	joinTicket Ticket // a parked JoinGroup; 0 = not awaiting join
	joinVer    int16
	syncTicket Ticket // a parked SyncGroup
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

	// consumer is set when the group speaks the consumer protocol
	// (KIP-848, consumer.go); its classic fields then stay unused.
	consumer *cgroup
	// streams is set for a streams group (KIP-1071, streams.go).
	streams *sgroup
}

// idle: no member of either protocol and no pending member id.
func (g *group) idle() bool {
	return g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 &&
		(g.consumer == nil || len(g.consumer.members) == 0) &&
		(g.streams == nil || len(g.streams.members) == 0)
}

// ---- timers ----

// touch restarts m's session; co.mu is held.
func (co *Coordinator) touch(g *group, m *member) {
	m.deadline = time.Now().Add(m.session)
	if m.timer == nil && !co.closed {
		gname, mid := g.name, m.id
		m.timer = time.AfterFunc(m.session, func() { co.sessionCheck(gname, mid) })
	}
}

// sessionCheck runs when a member's timer fires: expire it, or re-arm for
// the rest of its session.
func (co *Coordinator) sessionCheck(gname, mid string) {
	var wake []Ticket
	co.mu.Lock()
	g := co.groups[gname]
	var m *member
	if g != nil {
		m = g.members[mid]
	}
	if m == nil || m.timer == nil {
		co.mu.Unlock()
		return
	}
	now := time.Now()
	keep := now.Before(m.deadline)
	if !keep && (m.awaitingJoin() || m.syncTicket != 0) {
		// A parked join or sync keeps the member alive, as on Kafka;
		// the rebalance deadline bounds it. A new member's first join
		// is bounded by NewMemberJoinTimeout.
		keep = !m.isNew || now.Before(m.deadline.Add(co.cfg.NewMemberJoinTimeout-m.session))
	}
	if keep {
		d := max(time.Until(m.deadline), time.Second)
		m.timer.Reset(d)
		co.mu.Unlock()
		return
	}
	co.log.Info("group member session expired", "group", gname, "member", mid)
	co.removeMember(g, m, &wake)
	co.afterRemoval(g, &wake)
	co.mu.Unlock()
	co.wakeAll(wake)
}

// armGroupTimer (re)arms the group's deadline timer; co.mu is held.
func (co *Coordinator) armGroupTimer(g *group, d time.Duration, fn func(*group, *[]Ticket)) {
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timerGen++
	if co.closed {
		g.timer = nil
		return
	}
	gen, name := g.timerGen, g.name
	g.timer = time.AfterFunc(d, func() {
		var wake []Ticket
		co.mu.Lock()
		cur := co.groups[name]
		if cur == g && g.timerGen == gen {
			g.timer = nil
			fn(g, &wake)
		}
		co.mu.Unlock()
		co.wakeAll(wake)
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

// prepareRebalance opens a join barrier; co.mu is held.
func (co *Coordinator) prepareRebalance(g *group, wake *[]Ticket) {
	if g.state == stateCompleting {
		// Members parked in SyncGroup learn of the new rebalance.
		for _, m := range g.members {
			if m.syncTicket != 0 {
				co.settle(m.syncTicket, syncError(m.syncVer, kerr.RebalanceInProgress.Code), wake)
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
	if first && co.cfg.InitialRebalanceDelay > 0 {
		delay := min(co.cfg.InitialRebalanceDelay, rt)
		g.delaying, g.newJoined = true, false
		g.delayEnd = now.Add(rt)
		g.deadline = now.Add(delay)
		co.armGroupTimer(g, delay, co.delayExpired)
		return
	}
	g.delaying = false
	g.deadline = now.Add(rt)
	co.armGroupTimer(g, rt, co.rebalanceExpired)
	co.tryCompleteJoin(g, wake)
}

// delayExpired ends (or extends) the initial rebalance delay.
func (co *Coordinator) delayExpired(g *group, wake *[]Ticket) {
	if g.state != statePreparing {
		return
	}
	now := time.Now()
	if g.newJoined && now.Before(g.delayEnd) {
		g.newJoined = false
		d := min(co.cfg.InitialRebalanceDelay, g.delayEnd.Sub(now))
		g.deadline = now.Add(d)
		co.armGroupTimer(g, d, co.delayExpired)
		return
	}
	g.delaying = false
	co.completeJoin(g, wake)
}

// rebalanceExpired closes the barrier at the rebalance timeout: members
// that did not rejoin are removed.
func (co *Coordinator) rebalanceExpired(g *group, wake *[]Ticket) {
	if g.state != statePreparing {
		return
	}
	co.completeJoin(g, wake)
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

// tryCompleteJoin closes the barrier when everyone is in; co.mu is held.
func (co *Coordinator) tryCompleteJoin(g *group, wake *[]Ticket) {
	if g.state == statePreparing && !g.delaying && g.allJoined() {
		co.completeJoin(g, wake)
	}
}

// completeJoin removes members that did not rejoin, starts the next
// generation and answers every parked JoinGroup; co.mu is held.
func (co *Coordinator) completeJoin(g *group, wake *[]Ticket) {
	for _, m := range g.members {
		if !m.awaitingJoin() {
			co.removeMember(g, m, wake)
		}
	}
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
		co.members--
	}
	g.stopTimer()
	g.generation++
	if len(g.members) == 0 {
		g.state, g.protocol, g.leader = stateEmpty, "", ""
		co.maybeForget(g)
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
		co.touch(g, m)
		co.settle(t, g.joinResponse(m, ver, false), wake)
	}
	// Members that never send SyncGroup are removed at the rebalance
	// timeout, as on Kafka.
	rt := time.Duration(0)
	for _, m := range g.members {
		rt = max(rt, m.rebalance)
	}
	co.armGroupTimer(g, rt, co.syncExpired)
}

// syncExpired removes members that did not sync in time and rebalances.
func (co *Coordinator) syncExpired(g *group, wake *[]Ticket) {
	if g.state != stateCompleting && g.state != stateStable {
		return
	}
	removed := false
	for _, m := range g.members {
		if !m.synced {
			co.removeMember(g, m, wake)
			removed = true
		}
	}
	if removed {
		co.afterRemoval(g, wake)
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
	r.ProtocolType = kmsg.StringPtr(g.protocolType)
	r.Protocol = kmsg.StringPtr(g.protocol)
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
				jm.InstanceID = kmsg.StringPtr(o.instance)
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

// removeMember drops m, answering its parked calls; co.mu is held. The
// caller runs afterRemoval once it removed what it meant to.
func (co *Coordinator) removeMember(g *group, m *member, wake *[]Ticket) {
	co.endMember(m, kerr.UnknownMemberID.Code, "", wake)
	if m.instance != "" && g.static[m.instance] == m.id {
		delete(g.static, m.instance)
	}
	delete(g.members, m.id)
	co.members--
	if g.leader == m.id {
		g.leader = ""
	}
}

// endMember ends m's incarnation: its parked JoinGroup (answered with
// joinMemberID) and SyncGroup get code, and its session timer stops; co.mu
// is held.
func (co *Coordinator) endMember(m *member, code int16, joinMemberID string, wake *[]Ticket) {
	if m.joinTicket != 0 {
		co.settle(m.joinTicket, joinError(m.joinVer, code, joinMemberID), wake)
		m.joinTicket = 0
	}
	if m.syncTicket != 0 {
		co.settle(m.syncTicket, syncError(m.syncVer, code), wake)
		m.syncTicket = 0
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
}

// memberOf finds the member a call names, in the order Kafka checks: an
// instance id now held by another member id is FENCED_INSTANCE_ID, an
// unknown member UNKNOWN_MEMBER_ID, another generation ILLEGAL_GENERATION.
// co.mu is held.
func (g *group) memberOf(memberID, instance string, generation int32) (*member, int16) {
	if instance != "" {
		if cur, ok := g.static[instance]; ok && cur != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m := g.members[memberID]
	if m == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return nil, kerr.IllegalGeneration.Code
	}
	return m, 0
}

// afterRemoval moves the group on after members left; co.mu is held.
func (co *Coordinator) afterRemoval(g *group, wake *[]Ticket) {
	switch g.state {
	case stateStable, stateCompleting:
		if len(g.members) == 0 {
			g.stopTimer()
			g.state, g.protocol, g.leader = stateEmpty, "", ""
			g.generation++
			co.maybeForget(g)
			return
		}
		co.prepareRebalance(g, wake)
	case statePreparing:
		if len(g.members) == 0 && len(g.pending) == 0 {
			co.completeJoin(g, wake)
			return
		}
		co.tryCompleteJoin(g, wake)
	}
}

// maybeForget retires a group left with no members: it stays in memory as
// Empty (as on Kafka, so ListGroups and DescribeGroups see it even on a
// store that cannot list groups) until DeleteGroups, or until a new group
// needs its slot (newGroupSlot). co.mu is held.
func (co *Coordinator) maybeForget(g *group) {
	if g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 {
		g.stopTimer()
	}
}

// newGroupSlot makes room for one more group under MaxGroups by dropping
// an idle Empty group (its offsets stay in the store); false when every
// group is in use. co.mu is held.
func (co *Coordinator) newGroupSlot() bool {
	if len(co.groups) < co.cfg.MaxGroups {
		return true
	}
	for name, g := range co.groups {
		if g.idle() {
			g.stopTimer()
			delete(co.groups, name)
			return true
		}
	}
	return false
}

// Close stops every timer of the coordinator (sessions, rebalance and sync
// deadlines, pending member ids; a re-wake that fires later does nothing),
// so none acts after the gateway stopped serving. Call it after the loop
// drained: calls still parked are answered by their Final run. Operations
// after Close still answer from memory but arm no session or group timer.
// Any goroutine; idempotent.
func (co *Coordinator) Close() {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.closed = true
	for _, g := range co.groups {
		g.stopTimer()
		for _, m := range g.members {
			if m.timer != nil {
				m.timer.Stop()
				m.timer = nil
			}
		}
		for _, t := range g.pending {
			t.Stop()
		}
		if g.consumer != nil {
			for _, m := range g.consumer.members {
				m.stopTimers()
			}
		}
		if g.streams != nil {
			for _, m := range g.streams.members {
				m.stopTimers()
			}
		}
	}
}

// Forget drops the membership state of every group drop reports true for
// (cluster mode: groups another gateway coordinates now). Parked joins
// and syncs are answered NOT_COORDINATOR, timers stop; committed offsets
// stay in the store, where the new coordinator reads them. The members
// find the new coordinator and join it. Any goroutine.
func (co *Coordinator) Forget(drop func(group string) bool) int {
	var wake []Ticket
	co.mu.Lock()
	n := 0
	for name, g := range co.groups {
		if !drop(name) {
			continue
		}
		g.stopTimer()
		for _, m := range g.members {
			co.endMember(m, kerr.NotCoordinator.Code, m.id, &wake)
			co.members--
		}
		for _, t := range g.pending {
			t.Stop()
			co.members--
		}
		if g.consumer != nil {
			for _, m := range g.consumer.members {
				m.stopTimers()
				co.members--
			}
		}
		if g.streams != nil {
			for _, m := range g.streams.members {
				m.stopTimers()
				co.members--
			}
		}
		delete(co.groups, name)
		n++
	}
	co.mu.Unlock()
	co.wakeAll(wake)
	return n
}

// groupView is a snapshot of a group for DescribeGroups and friends.
type groupView struct {
	consumer     bool // a consumer-protocol group (KIP-848)
	streams      bool // a streams group (KIP-1071)
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

// view returns the group's live state; ok=false when it is not in memory.
func (co *Coordinator) view(name string) (groupView, bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[name]
	if g == nil {
		return groupView{}, false
	}
	v := groupView{state: g.state, protocolType: g.protocolType, protocol: g.protocol}
	if sg := g.streams; sg != nil {
		v.streams = true
		var topics []string // what OffsetDelete refuses to drop while live
		if sg.conf != nil {
			for _, sub := range sortedKeys(sg.conf.sources) {
				topics = append(topics, sg.conf.sources[sub]...)
			}
		}
		for _, id := range sortedKeys(sg.members) {
			m := sg.members[id]
			v.members = append(v.members, memberView{id: m.id, instance: m.instance, clientID: m.clientID, clientHost: m.clientHost, topics: topics})
		}
		return v, true
	}
	if cg := g.consumer; cg != nil {
		v.consumer = true
		co.metaMu.Lock() // lock order: co.mu, then co.metaMu
		meta := co.meta
		co.metaMu.Unlock()
		for _, m := range cg.sortedMembers() {
			mv := memberView{id: m.id, instance: m.instance, clientID: m.clientID, clientHost: m.clientHost}
			mv.topics = append(mv.topics, m.topics...)
			if m.re != nil && meta != nil {
				for _, n := range meta.names {
					if m.re.MatchString(n) {
						mv.topics = append(mv.topics, n)
					}
				}
			}
			v.members = append(v.members, mv)
		}
		return v, true
	}
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
