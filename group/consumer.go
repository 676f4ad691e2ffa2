package group

// The consumer protocol of KIP-848 (ConsumerGroupHeartbeat): the
// coordinator assigns partitions itself and members only heartbeat.
//
// A consumer group has a group epoch, bumped whenever what the assignment
// depends on changes (a member joins or leaves, a subscription or the
// requested assignor changes, a subscribed topic appears, disappears or
// grows partitions). When the group epoch passes the assignment epoch the
// target assignment is computed again by the group's assignor
// (assignor.go). Each member then moves towards its target on its own
// heartbeats, as Kafka's CurrentAssignmentBuilder does:
//
//   - partitions it holds that are no longer in its target are revoked
//     first: the member stays at its epoch (state UNREVOKED_PARTITIONS) and
//     is sent its assignment without them; once a heartbeat's
//     TopicPartitions no longer lists them they are free;
//   - partitions of its target still held (assigned or being revoked) by
//     another member are withheld (UNRELEASED_PARTITIONS) until that member
//     released them; the rest are given at once and the member moves to
//     the assignment epoch.
//
// So a partition is never assigned to two members at once. A member that
// does not revoke within its rebalance timeout is fenced (removed), one
// that stops heartbeating is removed at the session timeout; either frees
// its partitions and bumps the group epoch.
//
// Every function here runs with co.mu held except the exported entry
// points, which take it, and the timer callbacks, which take it first.
// Timers come from co.clock (injectable for tests). Nothing here blocks:
// the only store call (the topic list, topicSnapshot) runs before co.mu is
// taken.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// Member epochs with a meaning of their own (KIP-848).
const (
	epochLeave       = -1 // the member leaves
	epochStaticLeave = -2 // a static member leaves for now; its partitions wait for it
)

// maxMemberIDLen bounds a client-generated member id (Kafka's are 22-byte
// UUIDs); longer ones are INVALID_REQUEST.
const maxMemberIDLen = 255

// maxOwnedPartitions bounds the partitions one heartbeat may list as owned
// (the set is built in memory); more is INVALID_REQUEST.
const maxOwnedPartitions = 1 << 17

// memberState is a consumer-protocol member's reconciliation state.
type memberState uint8

const (
	mStable     memberState = iota // holds its target at the assignment epoch
	mUnrevoked                     // must release partitions before moving on
	mUnreleased                    // waits for partitions others still hold
)

func (s memberState) String() string {
	switch s {
	case mUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case mUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "STABLE"
}

type cmember struct {
	memberCore
	topics             []string // subscribed names, sorted
	regex              string   // "" = none
	re                 *regexp.Regexp
	assignor           string // the ServerAssignor it asked for; "" = none
	assigned, revoking partSet
	classic            *classicInfo // a classic-protocol member of a mixed group (mixed.go)
}

// cgroup is the consumer-protocol half of a group (group.consumer).
type cgroup struct {
	epoch, assignEpoch int32
	members            map[string]*cmember
	static             map[string]string // instance id -> member id
	target             map[string]partSet
	owner              map[tp]string // partition -> member holding it (assigned or being revoked)
	assignor           string
	metaHash           uint64
	meta               *metaSnap           // the snapshot metaHash and names were taken from
	names              map[[16]byte]string // topic names of the latest snapshot, for Describe
	seq                uint64
	// settings are the group's configs as of its latest heartbeat; zero
	// until then (the coordinator's defaults apply).
	settings groupSettings
}

func newCGroup() *cgroup {
	return &cgroup{
		members: map[string]*cmember{}, static: map[string]string{}, target: map[string]partSet{},
		owner: map[tp]string{}, names: map[[16]byte]string{},
	}
}

// state is the group state as ConsumerGroupDescribe and ListGroups name it.
func (cg *cgroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignEpoch || m.state != mStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// hbArgs is a decoded, validated ConsumerGroupHeartbeat.
type hbArgs struct {
	ver                  int16
	group, memberID      string
	epoch                int32
	instance             string
	rack                 *string
	rebalance            time.Duration // < 0: unchanged
	names                []string      // nil: unchanged
	regex                *string       // nil: unchanged
	re                   *regexp.Regexp
	assignor             *string // nil: unchanged
	owned                partSet // nil with ownedNull
	ownedNull            bool
	clientID, clientHost string
	settings             groupSettings // the group's configs (epoch >= 0 only)
}

// topicMeta is one topic of the stream as the assignment sees it.
type topicMeta struct {
	name       string
	id         [16]byte
	partitions int32
}

// metaSnap is the stream's topic list at one moment.
type metaSnap struct {
	at     time.Time
	byName map[string]topicMeta
	byID   map[[16]byte]topicMeta
	names  []string // sorted
}

// ConsumerHeartbeat answers a ConsumerGroupHeartbeat (KIP-848): join,
// heartbeat, reconcile, leave. clientID is the request header's, clientHost
// the peer as ConsumerGroupDescribe reports it. It copies what it keeps. A
// worker: it may list the stream's topics (a store call, without co.mu).
func (co *Coordinator) ConsumerHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	a, code, msg := co.decodeHeartbeat(req, clientID, clientHost)
	if code != 0 {
		return hbError(resp, code, msg)
	}
	var meta *metaSnap
	if a.epoch >= 0 {
		var err error
		if meta, err = co.topicSnapshot(ctx); err != nil {
			return hbError(resp, offsetErrCode(err), "listing the topics failed: "+err.Error())
		}
		if a.settings, err = co.groupSettings(ctx, a.group); err != nil {
			return hbError(resp, offsetErrCode(err), "reading the group's configs failed: "+err.Error())
		}
	}
	co.locked(func(wake *[]Ticket) { code, msg = co.heartbeat848(a, meta, resp, wake) })
	if code != 0 {
		return hbError(resp, code, msg)
	}
	return resp
}

func hbError(resp *kmsg.ConsumerGroupHeartbeatResponse, code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp.ErrorCode = code
	resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis, resp.Assignment = nil, 0, 0, nil
	if msg != "" {
		resp.ErrorMessage = kmsg.StringPtr(msg)
	}
	return resp
}

// decodeHeartbeat validates req as Kafka's throwIfConsumerGroupHeartbeat-
// RequestIsInvalid does (INVALID_REQUEST with Kafka's messages), plus the
// gateway's caps, and copies what the coordinator keeps.
func (co *Coordinator) decodeHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) (*hbArgs, int16, string) {
	invalid := func(msg string) (*hbArgs, int16, string) { return nil, kerr.InvalidRequest.Code, msg }
	a := &hbArgs{
		ver: req.Version, group: req.Group, memberID: req.MemberID, epoch: req.MemberEpoch,
		rebalance: -1, clientID: clientID, clientHost: clientHost,
	}
	switch {
	case req.Group == "":
		return invalid("GroupId can't be empty.")
	case !validGroupID(req.Group):
		return nil, kerr.InvalidGroupID.Code, fmt.Sprintf("group ids are at most %d bytes on this gateway", MaxGroupIDLen)
	case co.placed(req.Group) != 0:
		return nil, co.placed(req.Group), "this gateway does not coordinate the group now"
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	case len(req.MemberID) > maxMemberIDLen:
		return invalid(fmt.Sprintf("MemberId is longer than %d bytes.", maxMemberIDLen))
	}
	if req.InstanceID != nil {
		a.instance = *req.InstanceID
		if len(a.instance) > maxMemberIDLen {
			return invalid(fmt.Sprintf("InstanceId is longer than %d bytes.", maxMemberIDLen))
		}
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == epochLeave:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
	case e == 0:
		if req.MemberID == "" && req.Version >= 1 {
			// KIP-1082: from v1 the client generates its member id.
			return invalid("MemberId can't be empty.")
		}
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if len(req.SubscribedTopicNames) == 0 && (req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "") {
			return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e == epochStaticLeave:
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	default:
		return invalid("MemberEpoch is invalid.")
	}
	if req.RebalanceTimeoutMillis != -1 {
		if req.RebalanceTimeoutMillis < 0 {
			return invalid("RebalanceTimeoutMs is invalid.")
		}
		a.rebalance = min(time.Duration(req.RebalanceTimeoutMillis)*time.Millisecond, co.cfg.MaxRebalanceTimeout)
	}
	if req.RackID != nil {
		r := *req.RackID
		a.rack = &r
	}
	if req.SubscribedTopicNames != nil {
		if len(req.SubscribedTopicNames) > co.cfg.MaxSubscribedTopics {
			return invalid(fmt.Sprintf("more than %d subscribed topics", co.cfg.MaxSubscribedTopics))
		}
		a.names = make([]string, 0, len(req.SubscribedTopicNames))
		for _, n := range req.SubscribedTopicNames {
			// Copied: the request bytes go back to their pool.
			a.names = append(a.names, string([]byte(n)))
		}
		slices.Sort(a.names)
		a.names = slices.Compact(a.names)
	}
	if req.SubscribedTopicRegex != nil {
		r := string([]byte(*req.SubscribedTopicRegex))
		if len(r) > co.cfg.MaxRegexLen {
			return invalid(fmt.Sprintf("SubscribedTopicRegex is longer than %d bytes", co.cfg.MaxRegexLen))
		}
		if r != "" {
			// Kafka matches the whole topic name (RE2/J Matcher.matches);
			// Go's regexp is RE2, the same syntax bar RE2/J's Java-only
			// corners (docs/CONSUMER_GROUPS.md).
			re, err := regexp.Compile(`^(?:` + r + `)$`)
			if err != nil {
				return nil, kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex " + r + " is not a valid regular expression: " + err.Error()
			}
			a.re = re
		}
		a.regex = &r
	}
	if req.ServerAssignor != nil {
		n := *req.ServerAssignor
		if !slices.Contains(co.cfg.ConsumerAssignors, n) {
			return nil, kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.", n, joinComma(co.cfg.ConsumerAssignors))
		}
		n = string([]byte(n))
		a.assignor = &n
	}
	if req.Topics == nil {
		a.ownedNull = true
	} else {
		n := 0
		for _, t := range req.Topics {
			n += len(t.Partitions)
		}
		if n > maxOwnedPartitions {
			return invalid(fmt.Sprintf("more than %d owned partitions", maxOwnedPartitions))
		}
		a.owned = make(partSet, n)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				a.owned[tp{t.TopicID, p}] = struct{}{}
			}
		}
	}
	return a, 0, ""
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// heartbeat848 runs a decoded heartbeat and fills resp, or returns an
// error code and message. co.mu is held.
func (co *Coordinator) heartbeat848(a *hbArgs, meta *metaSnap, resp *kmsg.ConsumerGroupHeartbeatResponse, wake *[]Ticket) (int16, string) {
	g := co.groups[a.group]
	if a.epoch < 0 {
		return co.leave848(g, a, resp, wake)
	}
	if g == nil {
		if a.epoch != 0 {
			// Kafka keeps groups across restarts and answers
			// GROUP_ID_NOT_FOUND here; the gateway's memberships are soft
			// state, so the member is told to rejoin instead.
			return kerr.UnknownMemberID.Code, fmt.Sprintf("Consumer group %s not found: the member must rejoin.", a.group)
		}
		if !co.newGroupSlot() {
			return kerr.CoordinatorNotAvailable.Code, "too many groups on this gateway"
		}
		g = &group{name: a.group, protocolType: "consumer", members: map[string]*member{}, static: map[string]string{}, pending: map[string]*time.Timer{}}
		co.groups[a.group] = g
	}
	if g.streams != nil {
		if len(g.streams.members) > 0 || a.epoch != 0 {
			return kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", a.group)
		}
		g.streams = nil // an empty streams group becomes a consumer group; the offsets stay
	}
	if g.consumer == nil {
		if len(g.members) > 0 || len(g.pending) > 0 || g.state != stateEmpty {
			// Online upgrade (mixed.go): the classic members become
			// classic members of a consumer group.
			if a.epoch != 0 || !co.upgrade(g, meta, wake) {
				return kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group: it has members of the classic protocol that cannot be migrated.", a.group)
			}
		} else if a.epoch != 0 {
			return kerr.UnknownMemberID.Code, fmt.Sprintf("Consumer group %s not found: the member must rejoin.", a.group)
		}
		if g.consumer == nil {
			// An empty classic group (or one known only by its committed
			// offsets) becomes a consumer group; the offsets stay.
			g.stopTimer()
			g.consumer, g.protocolType, g.protocol = newCGroup(), "consumer", ""
		}
	}
	cg := g.consumer
	cg.settings = a.settings

	m, code, msg := co.memberFor(g, cg, a)
	if code != 0 {
		return code, msg
	}
	before := m.assigned

	// The member's subscription; a change bumps the group epoch.
	bump := m.joinedAt == 0 // a new member
	if bump {
		cg.seq++
		m.joinedAt = cg.seq
	}
	if a.rack != nil {
		m.rack = *a.rack
	}
	if a.rebalance >= 0 {
		m.rebalance = a.rebalance
	}
	if a.assignor != nil && *a.assignor != m.assignor {
		m.assignor, bump = *a.assignor, true
	}
	if a.names != nil && !slices.Equal(a.names, m.topics) {
		m.topics, bump = a.names, true
	}
	if a.regex != nil && *a.regex != m.regex {
		m.regex, m.re, bump = *a.regex, a.re, true
	}
	m.clientID, m.clientHost = a.clientID, a.clientHost
	co.advance(g, cg, m, bump, meta, a.owned, !a.ownedNull)

	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(co.heartbeatInterval(cg) / time.Millisecond)
	full := a.epoch == 0 || (a.rebalance >= 0 && (a.names != nil || a.regex != nil) && !a.ownedNull)
	if full || !before.equal(m.assigned) {
		resp.Assignment = &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: assignmentTopics(m.assigned)}
	}
	return 0, ""
}

// advance moves the group and m on after m's subscription was updated
// (bump: it changed, or m is new): the metadata hash, the group epoch, the
// target assignment, m's reconciliation, its session. owned is what m says
// it holds (known false: unchanged). co.mu is held.
func (co *Coordinator) advance(g *group, cg *cgroup, m *cmember, bump bool, meta *metaSnap, owned partSet, known bool) {
	// What the assignment depends on in the metadata: the subscribed
	// topics, their ids and partition counts. Recomputed only when the
	// topic list or a subscription changed (regexes over many topics are
	// not cheap).
	if bump || meta != cg.meta {
		if h := cg.metaHashOf(meta); h != cg.metaHash {
			cg.metaHash, bump = h, true
		}
		if meta != cg.meta {
			cg.meta = meta
			cg.names = make(map[[16]byte]string, len(meta.byID))
			for id, t := range meta.byID {
				cg.names[id] = t.name
			}
		}
	}
	if bump {
		cg.epoch++
		co.log.Debug("consumer group epoch bumped", "group", g.name, "epoch", cg.epoch)
	}
	if cg.epoch > cg.assignEpoch {
		co.computeTarget(cg, meta)
	}
	co.reconcile(g, cg, m, owned, known)
	co.armSession(g, m)
}

// memberFor finds or creates the member a heartbeat (epoch >= 0) names,
// with Kafka's checks: static membership, GROUP_MAX_SIZE_REACHED, epoch
// fencing. co.mu is held.
func (co *Coordinator) memberFor(g *group, cg *cgroup, a *hbArgs) (*cmember, int16, string) {
	m, found, code, msg := lookupMember(cg.members, cg.static, g.name, a.memberID, a.instance, a.epoch)
	switch {
	case code != 0:
		return nil, code, msg
	case found == lookupCheck:
		code, msg := checkEpoch(m, a)
		return m, code, msg
	case found == lookupRejoin:
		co.resetMember(cg, m)
		return m, 0, ""
	case found == lookupReplace:
		return co.replaceStatic(g, cg, m, a.memberID), 0, ""
	}
	if len(cg.members) >= co.cfg.MaxGroupSize {
		return nil, kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", co.cfg.MaxGroupSize)
	}
	if co.members >= co.cfg.MaxMembers {
		return nil, kerr.CoordinatorNotAvailable.Code, "too many group members on this gateway"
	}
	id := a.memberID
	if id == "" {
		id = newMemberID(a.clientID) // v0: the coordinator names the member
	}
	if _, taken := cg.members[id]; taken {
		return nil, kerr.UnknownMemberID.Code, fmt.Sprintf("Member id %s is in use.", id)
	}
	m = &cmember{memberCore: memberCore{id: id, instance: a.instance, rebalance: a.rebalance}, assigned: partSet{}, revoking: partSet{}}
	if m.rebalance < 0 {
		m.rebalance = co.cfg.ConsumerSessionTimeout
	}
	cg.members[id] = m
	if a.instance != "" {
		cg.static[a.instance] = id
	}
	co.members++
	co.log.Info("consumer group member joined", "group", g.name, "member", id, "instance", a.instance)
	return m, 0, ""
}

// checkEpoch is Kafka's epoch fence: an epoch ahead of the member's, or
// behind it other than by a lost response (the previous epoch with owned
// partitions within the assignment), is FENCED_MEMBER_EPOCH.
func checkEpoch(m *cmember, a *hbArgs) (int16, string) {
	switch {
	case a.epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", a.epoch, m.epoch)
	case a.epoch < m.epoch:
		if a.epoch != m.prevEpoch || a.ownedNull || !a.owned.subsetOf(m.assigned) {
			return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", a.epoch, m.epoch)
		}
	}
	return 0, ""
}

// resetMember makes m a member that holds nothing at epoch 0 (it rejoined);
// co.mu is held.
func (co *Coordinator) resetMember(cg *cgroup, m *cmember) {
	cg.setOwned(m, partSet{}, partSet{})
	m.reset()
	m.classic = nil // it speaks the consumer protocol now
}

// replaceStatic moves a static member's place to its new member id;
// co.mu is held.
func (co *Coordinator) replaceStatic(g *group, cg *cgroup, old *cmember, newID string) *cmember {
	old.stopTimers()
	assigned := old.assigned
	cg.setOwned(old, partSet{}, partSet{})
	delete(cg.members, old.id)
	n := *old
	n.id, n.epoch, n.prevEpoch, n.state = newID, 0, 0, mStable
	n.session, n.revoke = nil, nil
	n.assigned, n.revoking = partSet{}, partSet{}
	cg.members[newID] = &n
	cg.setOwned(&n, assigned, partSet{})
	cg.static[n.instance] = newID
	if t, ok := cg.target[old.id]; ok {
		delete(cg.target, old.id)
		cg.target[newID] = t
	}
	co.log.Info("consumer group static member rejoined", "group", g.name, "instance", n.instance, "member", newID, "replaces", old.id)
	return &n
}

// setOwned replaces what m holds, keeping cg.owner in step; co.mu is held.
func (cg *cgroup) setOwned(m *cmember, assigned, revoking partSet) {
	for p := range m.assigned {
		if cg.owner[p] == m.id {
			delete(cg.owner, p)
		}
	}
	for p := range m.revoking {
		if cg.owner[p] == m.id {
			delete(cg.owner, p)
		}
	}
	m.assigned, m.revoking = assigned, revoking
	for p := range assigned {
		cg.owner[p] = m.id
	}
	for p := range revoking {
		cg.owner[p] = m.id
	}
}

// reconcile moves m towards its target (Kafka's CurrentAssignmentBuilder);
// owned is what the heartbeat listed, known false when it listed nothing
// (unchanged). co.mu is held.
func (co *Coordinator) reconcile(g *group, cg *cgroup, m *cmember, owned partSet, known bool) {
	switch m.state {
	case mStable:
		if m.epoch == cg.assignEpoch {
			return
		}
	case mUnrevoked:
		if ownsAny(owned, known, m.revoking) {
			return
		}
	}
	keep, revoke, revoking, unreleased := reconcileStep(m.assigned, cg.target[m.id], owned, known, func(p tp) bool {
		o, held := cg.owner[p]
		return held && o != m.id
	})
	if revoking {
		was := m.state
		m.state = mUnrevoked
		cg.setOwned(m, keep, revoke)
		if was != mUnrevoked {
			co.armRevokeTimer(g, m)
		}
		return
	}
	cg.setOwned(m, keep, partSet{})
	m.settle(cg.assignEpoch, unreleased)
}

// resolve is the set of existing topics m subscribes to, by name or regex.
func resolve(m *cmember, meta *metaSnap) map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, n := range m.topics {
		if t, ok := meta.byName[n]; ok {
			out[t.id] = true
		}
	}
	if m.re != nil {
		for _, n := range meta.names {
			if m.re.MatchString(n) {
				out[meta.byName[n].id] = true
			}
		}
	}
	return out
}

// metaHashOf hashes the subscribed topics' names, ids and partition
// counts, so a topic created, deleted, recreated or grown under a
// subscription bumps the group epoch. co.mu is held.
func (cg *cgroup) metaHashOf(meta *metaSnap) uint64 {
	sub := map[[16]byte]bool{}
	for _, m := range cg.members {
		for id := range resolve(m, meta) {
			sub[id] = true
		}
	}
	ts := make([]topicMeta, 0, len(sub))
	for id := range sub {
		ts = append(ts, meta.byID[id])
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
	h := fnv.New64a()
	for _, t := range ts {
		h.Write([]byte(t.name))
		h.Write(t.id[:])
		h.Write([]byte{byte(t.partitions >> 24), byte(t.partitions >> 16), byte(t.partitions >> 8), byte(t.partitions), 0})
	}
	return h.Sum64()
}

// computeTarget runs the group's assignor over the members and the
// metadata and moves the assignment epoch to the group epoch. co.mu is
// held.
func (co *Coordinator) computeTarget(cg *cgroup, meta *metaSnap) {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	in := assignInput{}
	topics := map[[16]byte]bool{}
	votes := map[string]int{}
	for _, id := range ids {
		m := cg.members[id]
		ts := resolve(m, meta)
		for t := range ts {
			topics[t] = true
		}
		in.members = append(in.members, assignMember{id: id, topics: ts, current: cg.target[id]})
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	for id := range topics {
		in.topics = append(in.topics, assignTopic{id: id, name: meta.byID[id].name, partitions: meta.byID[id].partitions})
	}
	slices.SortFunc(in.topics, func(a, b assignTopic) int { return cmp.Compare(a.name, b.name) })
	// The assignor most members ask for, else the first configured one.
	cg.assignor = co.cfg.ConsumerAssignors[0]
	best := 0
	for _, n := range co.cfg.ConsumerAssignors {
		if votes[n] > best {
			cg.assignor, best = n, votes[n]
		}
	}
	cg.target = assignors[cg.assignor](in)
	cg.assignEpoch = cg.epoch
}

// assignmentTopics is a partition set in the heartbeat response's shape,
// topics and partitions sorted.
func assignmentTopics(s partSet) []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic {
	out := []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, p := range s.sortedBy(cmpTP) {
		if len(out) == 0 || out[len(out)-1].TopicID != p.topic {
			out = append(out, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: p.topic})
		}
		t := &out[len(out)-1]
		t.Partitions = append(t.Partitions, p.part)
	}
	return out
}

// leave848 runs a heartbeat with epoch -1 (leave) or -2 (a static member
// leaving for now). co.mu is held.
func (co *Coordinator) leave848(g *group, a *hbArgs, resp *kmsg.ConsumerGroupHeartbeatResponse, wake *[]Ticket) (int16, string) {
	if g == nil || g.consumer == nil {
		return kerr.GroupIDNotFound.Code, fmt.Sprintf("Consumer group %s not found.", a.group)
	}
	cg := g.consumer
	m, code, msg := leavingMember(cg.members, cg.static, g.name, a.memberID, a.instance)
	if code != 0 {
		return code, msg
	}
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(a.memberID), a.epoch
	if a.epoch == epochStaticLeave {
		// Its partitions wait for it until its session ends; what it was
		// revoking is free now.
		co.log.Info("consumer group static member left for now", "group", g.name, "member", m.id, "instance", m.instance)
		cg.setOwned(m, m.assigned, partSet{})
		m.leaveForNow()
		return 0, ""
	}
	co.log.Info("consumer group member left", "group", g.name, "member", m.id)
	co.removeMember848(cg, m)
	co.maybeDowngrade(g, wake)
	return 0, ""
}

// removeMember848 drops m, frees its partitions and bumps the group epoch;
// co.mu is held.
func (co *Coordinator) removeMember848(cg *cgroup, m *cmember) {
	m.stopTimers()
	cg.setOwned(m, partSet{}, partSet{})
	delete(cg.members, m.id)
	if cg.static[m.instance] == m.id {
		delete(cg.static, m.instance)
	}
	delete(cg.target, m.id)
	co.members--
	cg.epoch++
	if cg.meta != nil {
		// Its subscription no longer counts; the epoch bump above covers
		// the change, so the next heartbeat does not bump again.
		cg.metaHash = cg.metaHashOf(cg.meta)
	}
}

// ---- timers ----

// sessionTimeout is the session timeout of cg's consumer-protocol
// members: its consumer.session.timeout.ms, else the default.
func (co *Coordinator) sessionTimeout(cg *cgroup) time.Duration {
	if cg != nil && cg.settings.session > 0 {
		return cg.settings.session
	}
	return co.cfg.ConsumerSessionTimeout
}

// heartbeatInterval is the interval cg's members are told to heartbeat at.
func (co *Coordinator) heartbeatInterval(cg *cgroup) time.Duration {
	if cg != nil && cg.settings.interval > 0 {
		return cg.settings.interval
	}
	return co.cfg.ConsumerHeartbeatInterval
}

// armSession restarts m's session timer; co.mu is held.
func (co *Coordinator) armSession(g *group, m *cmember) {
	gname, mid := g.name, m.id
	d := co.sessionTimeout(g.consumer)
	if m.classic != nil {
		d = m.classic.session // its JoinGroup's session timeout
	}
	co.armTimer(&m.session, &m.sessTok, d, func(tok uint64, wake *[]Ticket) {
		if cg, m := co.member848(gname, mid); m != nil && m.sessTok == tok {
			co.log.Info("consumer group member session expired", "group", gname, "member", mid)
			co.removeMember848(cg, m)
			co.maybeDowngrade(co.groups[gname], wake)
		}
	})
}

// armRevokeTimer fences m if it still has not revoked what it was asked
// to when its rebalance timeout ends; co.mu is held.
func (co *Coordinator) armRevokeTimer(g *group, m *cmember) {
	gname, mid, epoch := g.name, m.id, m.epoch
	co.armTimer(&m.revoke, &m.revokTok, m.rebalance, func(tok uint64, wake *[]Ticket) {
		if cg, m := co.member848(gname, mid); m != nil && m.revokTok == tok && m.state == mUnrevoked && m.epoch == epoch {
			co.log.Info("consumer group member fenced: it did not revoke its partitions within its rebalance timeout", "group", gname, "member", mid, "epoch", epoch)
			co.removeMember848(cg, m)
			co.maybeDowngrade(co.groups[gname], wake)
		}
	})
}

// member848 finds a consumer-protocol member; co.mu is held.
func (co *Coordinator) member848(gname, mid string) (*cgroup, *cmember) {
	g := co.groups[gname]
	if g == nil || g.consumer == nil {
		return nil, nil
	}
	return g.consumer, g.consumer.members[mid]
}

// ---- metadata ----

// TopicsChanged drops the cached topic list, so the next heartbeat lists
// the topics again (after this gateway created some). Any goroutine.
func (co *Coordinator) TopicsChanged() {
	co.metaMu.Lock()
	if co.meta != nil {
		// A stale copy rather than nil: mixed groups' classic joins read
		// the latest list as it is.
		s := *co.meta
		s.at = time.Time{}
		co.meta = &s
	}
	co.metaMu.Unlock()
}

// topicSnapshot returns the stream's topics, listed at most every
// MetadataMaxAge. A worker; co.mu must NOT be held (it calls the store).
func (co *Coordinator) topicSnapshot(ctx context.Context) (*metaSnap, error) {
	now := co.clock.Now()
	co.metaMu.Lock()
	s := co.meta
	co.metaMu.Unlock()
	if s != nil && now.Sub(s.at) < co.cfg.MetadataMaxAge {
		return s, nil
	}
	ts, err := co.store.Topics(ctx, co.stream)
	if err != nil && !errors.Is(err, bridge.ErrTopicNotFound) {
		return nil, err
	}
	s = &metaSnap{at: now, byName: make(map[string]topicMeta, len(ts)), byID: make(map[[16]byte]topicMeta, len(ts))}
	for _, t := range ts {
		m := topicMeta{name: t.Name, id: co.topicID(t), partitions: t.Partitions}
		s.byName[t.Name], s.byID[m.id] = m, m
		s.names = append(s.names, t.Name)
	}
	slices.Sort(s.names)
	co.metaMu.Lock()
	co.meta = s
	co.metaMu.Unlock()
	return s, nil
}
