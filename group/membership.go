package group

// The membership operations: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.
// Each exported method runs on a worker, takes co.mu for its state change
// and signals the tickets it settled after unlocking.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Join runs a JoinGroup from a client (clientID from the request header,
// clientHost the peer as DescribeGroups reports it). It answers at once,
// or returns a Wait when the join has to wait for the barrier. It copies
// what it keeps: req may be reused after it returns.
func (co *Coordinator) Join(req *kmsg.JoinGroupRequest, clientID, clientHost string) (kmsg.Response, Wait) {
	a := &joinArgs{
		ver:          req.Version,
		group:        req.Group,
		memberID:     req.MemberID,
		clientID:     clientID,
		clientHost:   clientHost,
		session:      time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		rebalance:    time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		protocolType: req.ProtocolType,
	}
	if req.Version == 0 {
		a.rebalance = a.session
	}
	if req.InstanceID != nil {
		a.instance = *req.InstanceID
	}
	a.protocols = make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		// Copied: the request bytes go back to their pool after this run.
		a.protocols[i] = protocol{name: p.Name, meta: append([]byte(nil), p.Metadata...)}
	}
	resp, t, until := co.runJoin(a)
	if t == 0 {
		return resp, Wait{}
	}
	return nil, Wait{Ticket: t, Until: until, ver: req.Version, memberID: req.MemberID}
}

// Sync runs a SyncGroup: an answer at once, or a Wait for a follower whose
// leader has not synced yet. It copies the assignments it keeps.
func (co *Coordinator) Sync(req *kmsg.SyncGroupRequest) (kmsg.Response, Wait) {
	a := &syncArgs{
		ver:          req.Version,
		group:        req.Group,
		memberID:     req.MemberID,
		generation:   req.Generation,
		protocolType: req.ProtocolType,
		protocol:     req.Protocol,
	}
	if req.InstanceID != nil {
		a.instance = *req.InstanceID
	}
	if len(req.GroupAssignment) > 0 {
		a.assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, ga := range req.GroupAssignment {
			a.assignments[ga.MemberID] = append([]byte(nil), ga.MemberAssignment...)
		}
	}
	resp, t, until := co.runSync(a)
	if t == 0 {
		return resp, Wait{}
	}
	return nil, Wait{Ticket: t, Until: until, sync: true, ver: req.Version}
}

// Heartbeat restarts the member's session and tells it whether to rejoin.
func (co *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	resp.ErrorCode = co.heartbeat(req.Group, req.MemberID, instance, req.Generation)
	return resp
}

// Leave removes the members a LeaveGroup names: one at v0-2, a batch by
// member or instance id at v3+.
func (co *Coordinator) Leave(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if code := co.placed(req.Group); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if req.Version < 3 {
		who := []leaveOne{{memberID: req.MemberID}}
		co.leave(req.Group, who)
		resp.ErrorCode = who[0].code
		return resp
	}
	who := make([]leaveOne, len(req.Members))
	for i, m := range req.Members {
		who[i].memberID = m.MemberID
		if m.InstanceID != nil {
			who[i].instance = *m.InstanceID
		}
	}
	resp.ErrorCode = co.leave(req.Group, who)
	resp.Members = make([]kmsg.LeaveGroupResponseMember, len(who))
	for i, m := range req.Members {
		rm := &resp.Members[i]
		rm.Default()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, who[i].code
	}
	return resp
}

// Collect returns the answer of a parked call's wait once the coordinator
// settled it (ok=true), or nil and false while it is still open: the caller
// parks again. With final set (the wait's deadline passed, or the gateway
// drains) it never returns false: an unsettled wait is given up and
// answered REBALANCE_IN_PROGRESS, so the client rejoins. A worker; takes
// co.mu.
func (co *Coordinator) Collect(w Wait, final bool) (resp kmsg.Response, ok bool) {
	co.mu.Lock()
	resp, ok = co.results[w.Ticket]
	if ok {
		delete(co.results, w.Ticket)
	} else if final {
		co.abandon(w.Ticket)
	}
	co.mu.Unlock()
	if ok || !final {
		return resp, ok
	}
	if w.sync {
		return syncError(w.ver, kerr.RebalanceInProgress.Code), true
	}
	return joinError(w.ver, kerr.RebalanceInProgress.Code, w.memberID), true
}

// abandon forgets a ticket whose call stopped waiting; co.mu is held.
func (co *Coordinator) abandon(t Ticket) {
	for _, g := range co.groups {
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

// runJoin runs a decoded JoinGroup. It returns the response, or a ticket
// and the latest the call should wait for it.
func (co *Coordinator) runJoin(a *joinArgs) (kmsg.Response, Ticket, time.Time) {
	ver := a.ver
	if !validGroupID(a.group) {
		return joinError(ver, kerr.InvalidGroupID.Code, a.memberID), 0, time.Time{}
	}
	if code := co.placed(a.group); code != 0 {
		return joinError(ver, code, a.memberID), 0, time.Time{}
	}
	if a.session < co.cfg.MinSessionTimeout || a.session > co.cfg.MaxSessionTimeout {
		return joinError(ver, kerr.InvalidSessionTimeout.Code, a.memberID), 0, time.Time{}
	}
	if a.protocolType == "" || len(a.protocols) == 0 {
		return joinError(ver, kerr.InconsistentGroupProtocol.Code, a.memberID), 0, time.Time{}
	}
	if len(a.protocols) > co.cfg.MaxProtocols {
		return joinError(ver, kerr.InvalidRequest.Code, a.memberID), 0, time.Time{}
	}
	size := 0
	for _, p := range a.protocols {
		size += len(p.name) + len(p.meta)
	}
	if size > co.cfg.MaxMetadataBytes {
		return joinError(ver, kerr.InvalidRequest.Code, a.memberID), 0, time.Time{}
	}
	a.rebalance = min(max(a.rebalance, a.session), co.cfg.MaxRebalanceTimeout)

	return lockedCall(co, a, co.join)
}

func (co *Coordinator) join(a *joinArgs, wake *[]Ticket) (kmsg.Response, Ticket, time.Time) {
	ver := a.ver
	g := co.groups[a.group]
	if g == nil {
		if a.memberID != "" {
			return joinError(ver, kerr.UnknownMemberID.Code, a.memberID), 0, time.Time{}
		}
		if !co.newGroupSlot() {
			return joinError(ver, kerr.CoordinatorNotAvailable.Code, a.memberID), 0, time.Time{}
		}
		g = &group{name: a.group, members: map[string]*member{}, static: map[string]string{}, pending: map[string]*time.Timer{}}
		co.groups[a.group] = g
	}
	if g.streams != nil {
		if len(g.streams.members) > 0 {
			// A live streams group takes no classic member (as Kafka 4.4).
			return joinError(ver, kerr.InconsistentGroupProtocol.Code, a.memberID), 0, time.Time{}
		}
		// An empty streams group becomes a classic one (an app moved back
		// to the classic protocol); its committed offsets stay.
		g.streams = nil
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// A mixed group: the consumer group answers (mixed.go).
			return co.classicJoin848(g, a), 0, time.Time{}
		}
		// An empty consumer group becomes a classic one (as Kafka); its
		// committed offsets stay.
		g.consumer = nil
	}
	// The protocol type must match, and some protocol must be supported
	// by every member (the joining one replacing its old self).
	if g.state != stateEmpty || len(g.members) > 0 {
		if a.protocolType != g.protocolType || !g.compatible(a) {
			co.maybeForget(g)
			return joinError(ver, kerr.InconsistentGroupProtocol.Code, a.memberID), 0, time.Time{}
		}
	}

	if a.memberID == "" {
		if a.instance != "" {
			return co.joinStaticUnknown(g, a, wake)
		}
		if code := co.roomForMember(g); code != 0 {
			return joinError(ver, code, ""), 0, time.Time{}
		}
		id := newMemberID(a.clientID)
		if ver >= 4 {
			// KIP-394: hand out an id and wait for the join carrying it.
			gname := g.name
			g.pending[id] = time.AfterFunc(a.session, func() { co.pendingExpired(gname, id) })
			co.members++
			return joinError(ver, kerr.MemberIDRequired.Code, id), 0, time.Time{}
		}
		co.members++
		return co.addMemberAndRebalance(g, a, id, wake)
	}

	if t, ok := g.pending[a.memberID]; ok {
		t.Stop()
		delete(g.pending, a.memberID)
		co.members--
		if len(g.members) >= co.cfg.MaxGroupSize {
			co.afterRemoval(g, wake)
			return joinError(ver, kerr.GroupMaxSizeReached.Code, a.memberID), 0, time.Time{}
		}
		co.members++
		return co.addMemberAndRebalance(g, a, a.memberID, wake)
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
		return co.updateAndAwait(g, m, a, wake)
	case stateCompleting:
		if m.sameProtocols(a.protocols) {
			// A retried join of this generation: answer it again.
			co.touch(g, m)
			return g.joinResponse(m, ver, false), 0, time.Time{}
		}
		return co.updateAndRebalance(g, m, a, wake)
	case stateStable:
		if m.id == g.leader || !m.sameProtocols(a.protocols) {
			return co.updateAndRebalance(g, m, a, wake)
		}
		co.touch(g, m)
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

// roomForMember is the error a join that adds a member to g answers
// when g is at --group-max-size (GROUP_MAX_SIZE_REACHED) or the gateway
// at its member cap (COORDINATOR_NOT_AVAILABLE), else 0. co.mu is held.
func (co *Coordinator) roomForMember(g *group) int16 {
	code := int16(0)
	switch {
	case len(g.members)+len(g.pending) >= co.cfg.MaxGroupSize:
		code = kerr.GroupMaxSizeReached.Code
	case co.members >= co.cfg.MaxMembers:
		code = kerr.CoordinatorNotAvailable.Code
	}
	if code != 0 {
		co.maybeForget(g)
	}
	return code
}

// joinStaticUnknown: a member with a group.instance.id and no member id.
// A known instance gets a new member id in place of the old one; when the
// group is Stable and its protocols did not change it keeps its
// assignment and the group does not rebalance (KIP-345).
func (co *Coordinator) joinStaticUnknown(g *group, a *joinArgs, wake *[]Ticket) (kmsg.Response, Ticket, time.Time) {
	ver := a.ver
	oldID, known := g.static[a.instance]
	newID := newMemberID(a.instance)
	if !known {
		if code := co.roomForMember(g); code != 0 {
			return joinError(ver, code, ""), 0, time.Time{}
		}
		co.members++
		return co.addMemberAndRebalance(g, a, newID, wake)
	}
	old := g.members[oldID]
	// Fence the old incarnation: its parked calls learn it is gone.
	co.endMember(old, kerr.FencedInstanceID.Code, oldID, wake)
	delete(g.members, oldID)
	old.id = newID
	g.members[newID] = old
	g.static[a.instance] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	old.clientID, old.session, old.rebalance = a.clientID, a.session, a.rebalance
	co.touch(g, old)
	if g.state == stateStable && old.sameProtocols(a.protocols) {
		return g.joinResponse(old, ver, true), 0, time.Time{}
	}
	return co.updateAndRebalance(g, old, a, wake)
}

// addMemberAndRebalance adds a new member and parks its join; co.mu is
// held and co.members already counts it.
func (co *Coordinator) addMemberAndRebalance(g *group, a *joinArgs, id string, wake *[]Ticket) (kmsg.Response, Ticket, time.Time) {
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
	co.touch(g, m)
	t := co.newTicket()
	m.joinTicket, m.joinVer = t, a.ver
	if g.state == statePreparing {
		if g.delaying {
			g.newJoined = true
		}
		co.tryCompleteJoin(g, wake)
	} else {
		co.prepareRebalance(g, wake)
	}
	return co.joinOutcome(g, m, t, wake)
}

// joinOutcome answers a join at once when the barrier already closed
// (wake then holds its own ticket), else parks it.
func (co *Coordinator) joinOutcome(g *group, m *member, t Ticket, wake *[]Ticket) (kmsg.Response, Ticket, time.Time) {
	// Other tickets settled by this join are woken by Join after it
	// unlocks; ours is answered directly.
	if mine, ok := co.results[t]; ok {
		delete(co.results, t)
		*wake = slices.DeleteFunc(*wake, func(w Ticket) bool { return w == t })
		return mine, 0, time.Time{}
	}
	until := g.deadline
	if own := time.Now().Add(m.rebalance); own.After(until) {
		until = own
	}
	return nil, t, until.Add(parkSlack)
}

// updateAndRebalance records m's new protocols and starts a rebalance.
func (co *Coordinator) updateAndRebalance(g *group, m *member, a *joinArgs, wake *[]Ticket) (kmsg.Response, Ticket, time.Time) {
	m.protocols, m.clientID, m.clientHost = a.protocols, a.clientID, a.clientHost
	m.session, m.rebalance = a.session, a.rebalance
	co.touch(g, m)
	t := co.newTicket()
	m.joinTicket, m.joinVer = t, a.ver
	co.prepareRebalance(g, wake)
	return co.joinOutcome(g, m, t, wake)
}

// updateAndAwait: a member rejoining an open barrier.
func (co *Coordinator) updateAndAwait(g *group, m *member, a *joinArgs, wake *[]Ticket) (kmsg.Response, Ticket, time.Time) {
	m.protocols, m.clientID, m.clientHost = a.protocols, a.clientID, a.clientHost
	m.session, m.rebalance = a.session, a.rebalance
	co.touch(g, m)
	if m.joinTicket != 0 {
		// A second join of the same member replaces the first.
		co.settle(m.joinTicket, joinError(m.joinVer, kerr.RebalanceInProgress.Code, m.id), wake)
	}
	t := co.newTicket()
	m.joinTicket, m.joinVer = t, a.ver
	co.tryCompleteJoin(g, wake)
	return co.joinOutcome(g, m, t, wake)
}

// pendingExpired drops a KIP-394 id that never joined.
func (co *Coordinator) pendingExpired(gname, id string) {
	var wake []Ticket
	co.mu.Lock()
	if g := co.groups[gname]; g != nil {
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			co.members--
			if g.state == statePreparing {
				co.tryCompleteJoin(g, &wake)
			} else {
				co.maybeForget(g)
			}
		}
	}
	co.mu.Unlock()
	co.wakeAll(wake)
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

func (co *Coordinator) syncOK(g *group, m *member, ver int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = ver
	r.ProtocolType = kmsg.StringPtr(g.protocolType)
	r.Protocol = kmsg.StringPtr(g.protocol)
	r.MemberAssignment = m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// runSync runs a decoded SyncGroup: a response, or a ticket to wait on.
func (co *Coordinator) runSync(a *syncArgs) (kmsg.Response, Ticket, time.Time) {
	for _, b := range a.assignments {
		if len(b) > co.cfg.MaxAssignmentBytes {
			return syncError(a.ver, kerr.InvalidRequest.Code), 0, time.Time{}
		}
	}
	return lockedCall(co, a, co.sync)
}

func (co *Coordinator) sync(a *syncArgs, wake *[]Ticket) (kmsg.Response, Ticket, time.Time) {
	ver := a.ver
	if code := co.placed(a.group); code != 0 {
		return syncError(ver, code), 0, time.Time{}
	}
	g := co.groups[a.group]
	if g == nil {
		return syncError(ver, kerr.UnknownMemberID.Code), 0, time.Time{}
	}
	if g.consumer != nil {
		return co.classicSync848(g, a), 0, time.Time{}
	}
	m, code := g.memberOf(a.memberID, a.instance, a.generation)
	if code != 0 {
		return syncError(ver, code), 0, time.Time{}
	}
	if (a.protocolType != nil && *a.protocolType != g.protocolType) || (a.protocol != nil && *a.protocol != g.protocol) {
		return syncError(ver, kerr.InconsistentGroupProtocol.Code), 0, time.Time{}
	}
	switch g.state {
	case statePreparing:
		return syncError(ver, kerr.RebalanceInProgress.Code), 0, time.Time{}
	case stateStable:
		m.synced = true
		co.touch(g, m)
		return co.syncOK(g, m, ver), 0, time.Time{}
	case stateCompleting:
	default:
		return syncError(ver, kerr.UnknownMemberID.Code), 0, time.Time{}
	}
	m.synced = true
	co.touch(g, m)
	if m.id != g.leader {
		if m.syncTicket != 0 {
			co.settle(m.syncTicket, syncError(m.syncVer, kerr.RebalanceInProgress.Code), wake)
		}
		t := co.newTicket()
		m.syncTicket, m.syncVer = t, ver
		return nil, t, time.Now().Add(m.rebalance + parkSlack)
	}
	// The leader's assignment: members it left out get an empty one.
	for id, o := range g.members {
		o.assignment = a.assignments[id]
		if o.syncTicket != 0 {
			co.settle(o.syncTicket, co.syncOK(g, o, o.syncVer), wake)
			o.syncTicket = 0
		}
	}
	g.state = stateStable
	// Members that have not synced yet are removed at the sync deadline
	// (already armed by completeJoin).
	if g.allSynced() {
		g.stopTimer()
	}
	return co.syncOK(g, m, ver), 0, time.Time{}
}

func (g *group) allSynced() bool {
	for _, m := range g.members {
		if !m.synced {
			return false
		}
	}
	return true
}

// heartbeat answers a heartbeat's error code.
func (co *Coordinator) heartbeat(group, memberID, instance string, generation int32) int16 {
	if code := co.placed(group); code != 0 {
		return code
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if g.consumer != nil {
		return co.classicHeartbeat848(g, memberID, instance, generation)
	}
	m, code := g.memberOf(memberID, instance, generation)
	if code != 0 {
		return code
	}
	co.touch(g, m)
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

// member resolves who is leaving to a member id: the id given, or the one
// its static instance id is bound to in static. ok is false with w.code
// set when the instance is unknown or bound to another id (fenced).
func (w *leaveOne) member(static map[string]string) (id string, ok bool) {
	if w.instance == "" {
		return w.memberID, true
	}
	cur, bound := static[w.instance]
	switch {
	case !bound:
		w.code = kerr.UnknownMemberID.Code
		return "", false
	case w.memberID != "" && w.memberID != cur:
		w.code = kerr.FencedInstanceID.Code
		return "", false
	}
	return cur, true
}

// leave removes members; it fills each one's code and returns the
// group-level code.
func (co *Coordinator) leave(group string, who []leaveOne) int16 {
	var wake []Ticket
	co.mu.Lock()
	defer func() {
		co.mu.Unlock()
		co.wakeAll(wake)
	}()
	g := co.groups[group]
	if g == nil {
		for i := range who {
			who[i].code = kerr.UnknownMemberID.Code
		}
		return 0
	}
	if g.consumer != nil {
		co.classicLeave848(g, who, &wake)
		return 0
	}
	removed := false
	for i := range who {
		w := &who[i]
		id, ok := w.member(g.static)
		if !ok {
			continue
		}
		if t, ok := g.pending[id]; ok && w.instance == "" {
			t.Stop()
			delete(g.pending, id)
			co.members--
			removed = true
			continue
		}
		m := g.members[id]
		if m == nil {
			w.code = kerr.UnknownMemberID.Code
			continue
		}
		co.removeMember(g, m, &wake)
		removed = true
	}
	if removed {
		co.afterRemoval(g, &wake)
		co.maybeForget(g)
	}
	return 0
}
