package group

// Mixed groups: Kafka 4's online migration between the protocols
// (group.consumer.migration.policy=BIDIRECTIONAL, its default).
//
//   - Upgrade: the first ConsumerGroupHeartbeat (epoch 0) to a live classic
//     group of the consumer protocol type turns it into a consumer group;
//     its classic members become classic members of it, keeping their
//     generation as member epoch and their current assignment as target,
//     so nothing moves until the new member's join bumps the group epoch.
//   - Classic members then keep speaking JoinGroup, SyncGroup, Heartbeat
//     and LeaveGroup, answered from the consumer group: a JoinGroup is
//     answered at once (no leader: the coordinator assigns) with the member
//     epoch as generation, SyncGroup hands out the member's current
//     assignment, and a Heartbeat says REBALANCE_IN_PROGRESS when the group
//     moved on (or partitions it waits for were released), so the member
//     rejoins and reconciles. Revocation works as for other members: what a
//     classic member's JoinGroup subscription lists as owned
//     (ConsumerProtocolSubscription v1+) counts as still held; an eager
//     member rejoins owning nothing.
//   - Downgrade: when the last consumer-protocol member leaves (or is
//     removed), a group of only classic members becomes a classic group
//     again, Stable with their assignments at the group epoch, and starts a
//     rebalance, so its members rejoin through the classic protocol.
//
// Every function here runs with co.mu held.

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicInfo is what a classic member of a consumer group joined with.
type classicInfo struct {
	session   time.Duration
	protocols []protocol
}

// upgrade converts the live classic group g into a consumer group, or
// reports false (g unchanged) when it cannot: another protocol type, too
// many members, or a member whose subscription or assignment does not
// parse. Parked joins and syncs are answered REBALANCE_IN_PROGRESS.
func (co *Coordinator) upgrade(g *group, meta *metaSnap, wake *[]Ticket) bool {
	if g.protocolType != "consumer" || len(g.members) > co.cfg.MaxGroupSize {
		return false
	}
	cg := newCGroup()
	cg.epoch, cg.assignEpoch = g.generation, g.generation
	olds := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		olds = append(olds, m)
	}
	slices.SortFunc(olds, func(a, b *member) int { return cmp.Compare(a.joinedAt, b.joinedAt) })
	var news []*cmember
	for _, m := range olds {
		md := m.metadata(g.protocol)
		if md == nil && len(m.protocols) > 0 {
			md = m.protocols[0].meta
		}
		var sub kmsg.ConsumerMemberMetadata
		if sub.ReadFrom(md) != nil {
			return false
		}
		var asg kmsg.ConsumerMemberAssignment
		if len(m.assignment) > 0 && asg.ReadFrom(m.assignment) != nil {
			return false
		}
		assigned := partSet{}
		for _, t := range asg.Topics {
			tm, ok := meta.byName[t.Topic]
			if !ok {
				continue
			}
			for _, p := range t.Partitions {
				if q := (tp{tm.id, p}); p >= 0 && p < tm.partitions && cg.owner[q] == "" {
					assigned[q] = struct{}{}
				}
			}
		}
		topics := slices.Clone(sub.Topics)
		slices.Sort(topics)
		cm := &cmember{
			memberCore: memberCore{id: m.id, instance: m.instance, clientID: m.clientID, clientHost: m.clientHost,
				epoch: g.generation, prevEpoch: g.generation, rebalance: m.rebalance, joinedAt: m.joinedAt},
			topics: slices.Compact(topics), assigned: partSet{}, revoking: partSet{},
			classic: &classicInfo{session: m.session, protocols: m.protocols},
		}
		cg.members[cm.id] = cm // owner bookkeeping below needs it in place
		cg.setOwned(cm, assigned, partSet{})
		cg.target[cm.id] = assigned.clone()
		if cm.instance != "" {
			cg.static[cm.instance] = cm.id
		}
		cg.seq = max(cg.seq, cm.joinedAt)
		news = append(news, cm)
	}
	// Committed: the classic group's calls and timers end here.
	for _, m := range olds {
		co.endMember(m, kerr.RebalanceInProgress.Code, m.id, wake)
	}
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
		co.members--
	}
	g.stopTimer()
	g.members, g.static = map[string]*member{}, map[string]string{}
	g.state, g.protocol, g.leader, g.delaying = stateEmpty, "", "", false
	g.consumer, g.protocolType = cg, "consumer"
	cg.meta, cg.metaHash = meta, cg.metaHashOf(meta)
	for id, t := range meta.byID {
		cg.names[id] = t.name
	}
	for _, cm := range news {
		co.armSession(g, cm)
	}
	co.log.Info("classic group upgraded to a consumer group", "group", g.name, "members", len(news), "epoch", cg.epoch)
	return true
}

// maybeDowngrade turns a consumer group whose members all use the classic
// protocol back into a classic group and starts a rebalance; an empty
// consumer group stays one.
func (co *Coordinator) maybeDowngrade(g *group, wake *[]Ticket) {
	if g == nil || g.consumer == nil || len(g.consumer.members) == 0 || len(g.consumer.members) > co.cfg.MaxGroupSize {
		return
	}
	cg := g.consumer
	for _, m := range cg.members {
		if m.classic == nil {
			return
		}
	}
	g.consumer = nil
	g.members, g.static = map[string]*member{}, map[string]string{}
	for _, cm := range cg.sortedMembers() {
		cm.stopTimers()
		m := &member{
			id: cm.id, instance: cm.instance, clientID: cm.clientID, clientHost: cm.clientHost,
			session: cm.classic.session, rebalance: cm.rebalance, protocolType: "consumer",
			protocols: cm.classic.protocols, assignment: encodeAssignment(cg, cm.assigned),
			joinedAt: cm.joinedAt, synced: true,
		}
		g.members[m.id] = m
		if m.instance != "" {
			g.static[m.instance] = m.id
		}
		g.joinSeq = max(g.joinSeq, m.joinedAt)
		co.touch(g, m)
	}
	// The generation its members heartbeat with (their epoch), so they
	// hear REBALANCE_IN_PROGRESS rather than ILLEGAL_GENERATION.
	g.generation = 0
	for _, cm := range cg.members {
		g.generation = max(g.generation, cm.epoch)
	}
	g.protocolType = "consumer"
	g.leader = g.firstJoined()
	g.protocol = g.selectProtocol()
	g.state = stateStable
	co.log.Info("consumer group downgraded to a classic group", "group", g.name, "members", len(g.members), "generation", g.generation)
	co.prepareRebalance(g, wake)
}

// encodeAssignment is s as the consumer protocol's assignment blob (v0),
// topics by name.
func encodeAssignment(cg *cgroup, s partSet) []byte {
	var a kmsg.ConsumerMemberAssignment
	for _, t := range assignmentTopics(s) {
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: cg.names[t.TopicID], Partitions: t.Partitions})
	}
	return a.AppendTo(nil)
}

// classicMember finds the classic member a classic call names, with
// Kafka's checks: an instance held by another member id
// FENCED_INSTANCE_ID, a member that is unknown or speaks the consumer
// protocol UNKNOWN_MEMBER_ID.
func (cg *cgroup) classicMember(memberID, instance string) (*cmember, int16) {
	if instance != "" {
		if cur, ok := cg.static[instance]; ok && cur != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m := cg.members[memberID]
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// classicJoin848 is a JoinGroup to a consumer group with members: the
// joining classic member is created or updated and reconciled at once.
func (co *Coordinator) classicJoin848(g *group, a *joinArgs) kmsg.Response {
	cg := g.consumer
	ver := a.ver
	if a.protocolType != "consumer" {
		return joinError(ver, kerr.InconsistentGroupProtocol.Code, a.memberID)
	}
	var sub kmsg.ConsumerMemberMetadata
	if sub.ReadFrom(a.protocols[0].meta) != nil {
		return joinError(ver, kerr.InconsistentGroupProtocol.Code, a.memberID)
	}
	meta := co.snapshotCached()
	if meta == nil {
		return joinError(ver, kerr.CoordinatorNotAvailable.Code, a.memberID)
	}
	id := a.memberID
	var m *cmember
	if a.instance != "" {
		if cur := cg.members[cg.static[a.instance]]; cur != nil {
			switch {
			case id == "" && cur.classic != nil:
				// A returning static classic member takes its place.
				m = co.replaceStatic(g, cg, cur, newMemberID(a.instance))
				m.classic = cur.classic
				id = m.id
			case id == "":
				return joinError(ver, kerr.UnreleasedInstanceID.Code, "")
			case cur.id != id:
				return joinError(ver, kerr.FencedInstanceID.Code, id)
			}
		}
	}
	if id == "" {
		id = newMemberID(a.clientID)
		if a.instance == "" && ver >= 4 {
			// KIP-394: the member joins again with this id.
			return joinError(ver, kerr.MemberIDRequired.Code, id)
		}
	}
	if m == nil {
		m = cg.members[id]
	}
	if m != nil && m.classic == nil {
		return joinError(ver, kerr.UnknownMemberID.Code, id)
	}
	if m == nil {
		if len(cg.members) >= co.cfg.MaxGroupSize {
			return joinError(ver, kerr.GroupMaxSizeReached.Code, id)
		}
		if co.members >= co.cfg.MaxMembers {
			return joinError(ver, kerr.CoordinatorNotAvailable.Code, id)
		}
		m = &cmember{memberCore: memberCore{id: id, instance: a.instance}, assigned: partSet{}, revoking: partSet{}}
		cg.members[id] = m
		if a.instance != "" {
			cg.static[a.instance] = id
		}
		co.members++
	}
	bump := m.joinedAt == 0
	if bump {
		cg.seq++
		m.joinedAt = cg.seq
	}
	m.classic = &classicInfo{session: a.session, protocols: a.protocols}
	m.rebalance, m.clientID, m.clientHost = a.rebalance, a.clientID, a.clientHost
	topics := slices.Clone(sub.Topics)
	slices.Sort(topics)
	if topics = slices.Compact(topics); !slices.Equal(topics, m.topics) {
		m.topics, bump = topics, true
	}
	owned := partSet{}
	for _, t := range sub.OwnedPartitions {
		if tm, ok := meta.byName[t.Topic]; ok {
			for _, p := range t.Partitions {
				owned[tp{tm.id, p}] = struct{}{}
			}
		}
	}
	co.advance(g, cg, m, bump, meta, owned, true)
	r := kmsg.NewPtrJoinGroupResponse()
	r.Version = ver
	r.Generation = m.epoch
	r.ProtocolType = kmsg.StringPtr("consumer")
	r.Protocol = kmsg.StringPtr(a.protocols[0].name)
	r.LeaderID = "" // the coordinator assigns; every classic member is a follower
	r.MemberID = id
	return r
}

// classicSync848 is a SyncGroup of a classic member of a consumer group:
// its current assignment.
func (co *Coordinator) classicSync848(g *group, a *syncArgs) kmsg.Response {
	cg := g.consumer
	m, code := cg.classicMember(a.memberID, a.instance)
	switch {
	case code != 0:
		return syncError(a.ver, code)
	case a.generation != m.epoch:
		return syncError(a.ver, kerr.IllegalGeneration.Code)
	case a.protocolType != nil && *a.protocolType != "consumer":
		return syncError(a.ver, kerr.InconsistentGroupProtocol.Code)
	}
	co.armSession(g, m)
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = a.ver
	r.ProtocolType = kmsg.StringPtr("consumer")
	if len(m.classic.protocols) > 0 {
		r.Protocol = kmsg.StringPtr(m.classic.protocols[0].name)
	}
	if a.protocol != nil {
		r.Protocol = a.protocol
	}
	r.MemberAssignment = encodeAssignment(cg, m.assigned)
	return r
}

// classicHeartbeat848 is a Heartbeat of a classic member of a consumer
// group: REBALANCE_IN_PROGRESS when it has to rejoin to move on.
func (co *Coordinator) classicHeartbeat848(g *group, memberID, instance string, generation int32) int16 {
	cg := g.consumer
	m, code := cg.classicMember(memberID, instance)
	if code != 0 {
		return code
	}
	if generation != m.epoch {
		return kerr.IllegalGeneration.Code
	}
	co.armSession(g, m)
	switch {
	case m.state == mUnrevoked:
		// It was told what to give up and rejoins by itself once done.
	case cg.epoch > m.epoch || m.epoch != cg.assignEpoch:
		return kerr.RebalanceInProgress.Code
	case m.state == mUnreleased:
		for p := range cg.target[m.id] {
			if _, held := cg.owner[p]; !held {
				return kerr.RebalanceInProgress.Code // what it waited for is free
			}
		}
	}
	return 0
}

// classicLeave848 removes classic members of a consumer group (LeaveGroup)
// and downgrades the group when only classic members remain.
func (co *Coordinator) classicLeave848(g *group, who []leaveOne, wake *[]Ticket) {
	cg := g.consumer
	for i := range who {
		w := &who[i]
		id, ok := w.member(cg.static)
		if !ok {
			continue
		}
		m := cg.members[id]
		if m == nil {
			w.code = kerr.UnknownMemberID.Code
			continue
		}
		co.log.Info("consumer group member left", "group", g.name, "member", id, "classic", m.classic != nil)
		co.removeMember848(cg, m)
	}
	co.maybeDowngrade(g, wake)
}

// snapshotCached is the latest topic list, or nil before the first.
// co.mu is held (lock order: co.mu, then co.metaMu).
func (co *Coordinator) snapshotCached() *metaSnap {
	co.metaMu.Lock()
	defer co.metaMu.Unlock()
	return co.meta
}
