package group

// Streams groups (KIP-1071, StreamsGroupHeartbeat): Kafka Streams apps with
// group.protocol=streams. The coordinator keeps the app's topology (sent by
// the first member), configures it against the stream's topics
// (streams_topology.go: partition counts, missing source topics, internal
// topics the handler then creates), assigns tasks with a sticky assignor
// (streams_assignor.go: active tasks balanced over processes and members,
// standby tasks on other processes) and moves each member towards its
// target as the consumer protocol does (consumer.go): an active task is
// revoked from its old owner (the member's heartbeat no longer lists it)
// before it is given to its new one; standby tasks move at once. Member
// and group epochs, session and rebalance timeouts, static membership and
// leaving are those of the consumer protocol.
//
// Every function here runs with co.mu held except the exported entry
// point, which takes it, and the timer callbacks, which take it first.

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams-protocol defaults (Kafka 4.4's group.streams.* broker configs).
const (
	defaultStreamsSession        = 45 * time.Second
	defaultStreamsInterval       = 5 * time.Second
	streamsAcceptableRecoveryLag = 10000
	streamsTaskOffsetInterval    = 60000 // ms
	maxStreamsTasksListed        = 1 << 17
	maxStreamsTaskOffsets        = 1 << 16
	maxClientTags                = 100
)

// StreamsTopic is an internal topic a streams group needs and the caller
// should create (StreamsHeartbeat's result).
type StreamsTopic struct {
	Name       string
	Partitions int32
	Configs    [][2]string
}

type smember struct {
	memberCore
	process                   string
	topoEpoch                 int32
	endpoint                  *kmsg.Endpoint
	tags                      [][2]string
	offsets, endOffsets       []kmsg.TaskOffset
	active, standby, revoking taskSet
}

// sgroup is a streams group (group.streams).
type sgroup struct {
	epoch, assignEpoch int32
	members            map[string]*smember
	static             map[string]string
	target             map[string]tasksAssigned
	owner              map[taskID]string // active task -> member holding it (assigned or revoking)
	topo               *streamsTopology
	conf               *configured
	confHash           uint64
	confMeta           *metaSnap
	endpointEpoch      int32
	shutdownBy         string    // the member that asked the app to shut down
	delayUntil         time.Time // the initial rebalance delay's end; zero once over
	persisted          []byte    // the snapshot last written to the store (streams_state.go)
	seq                uint64
	settings           groupSettings
}

func newSGroup() *sgroup {
	return &sgroup{members: map[string]*smember{}, static: map[string]string{}, target: map[string]tasksAssigned{}, owner: map[taskID]string{}}
}

// state is the group state as StreamsGroupDescribe and ListGroups name it.
func (sg *sgroup) state() string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case sg.conf == nil || !sg.conf.ready:
		return "NotReady"
	case sg.epoch > sg.assignEpoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignEpoch || m.state != mStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// shbArgs is a decoded, validated StreamsGroupHeartbeat.
type shbArgs struct {
	ver                  int16
	group, memberID      string
	epoch, endpointEpoch int32
	instance             string
	rack, process        *string
	rebalance            time.Duration
	topo                 *streamsTopology
	active               taskSet // nil: unchanged
	endpoint             *kmsg.Endpoint
	tags                 [][2]string
	tagsSet              bool
	offsets, endOffsets  []kmsg.TaskOffset
	shutdown             bool
	clientID, clientHost string
	settings             groupSettings
}

// StreamsHeartbeat answers a StreamsGroupHeartbeat: join, heartbeat,
// reconcile, leave. It returns the internal topics the group still misses,
// for the caller to create (with the caller's permission checks); the
// response then says MISSING_INTERNAL_TOPICS and the next heartbeat finds
// them. It copies what it keeps. A worker: it may list the stream's topics
// (a store call, without co.mu).
func (co *Coordinator) StreamsHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsTopic) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	if code := co.groupCode(req.Group); code != 0 && req.Group != "" {
		return shbError(resp, code, ""), nil
	}
	a, code, msg := decodeStreamsHeartbeat(req, clientID, clientHost)
	if code != 0 {
		return shbError(resp, code, msg), nil
	}
	var meta *metaSnap
	if a.epoch >= 0 {
		var err error
		if meta, err = co.topicSnapshot(ctx); err != nil {
			return shbError(resp, offsetErrCode(err), "listing the topics failed: "+err.Error()), nil
		}
		if a.settings, err = co.groupSettings(ctx, a.group); err != nil {
			return shbError(resp, offsetErrCode(err), "reading the group's configs failed: "+err.Error()), nil
		}
	}
	var create []StreamsTopic
	var changed bool
	co.locked(func(wake *[]Ticket) { code, msg, create, changed = co.streamsHeartbeat(a, meta, resp) })
	// Kept before the member hears of it, so a restart right after does
	// not lose what it was told.
	if changed {
		if err := co.persistStreams(ctx, a.group); err != nil && code == 0 {
			return shbError(resp, offsetErrCode(err), "keeping the group's state failed: "+err.Error()), nil
		}
	}
	if code != 0 {
		return shbError(resp, code, msg), nil
	}
	return resp, create
}

func shbError(resp *kmsg.StreamsGroupHeartbeatResponse, code int16, msg string) *kmsg.StreamsGroupHeartbeatResponse {
	resp.ErrorCode = code
	if msg != "" {
		resp.ErrorMessage = kmsg.StringPtr(msg)
	}
	return shbBare(resp, "", 0)
}

// shbBare empties resp but for the member id and epoch, as Kafka answers
// errors and leaves.
func shbBare(resp *kmsg.StreamsGroupHeartbeatResponse, member string, epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
	resp.MemberID, resp.MemberEpoch = member, epoch
	resp.HeartbeatIntervalMillis, resp.TaskOffsetIntervalMillis = 0, 0
	resp.AcceptableRecoveryLagLegacy, resp.AcceptableRecoveryLag = 0, -1
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks = nil, nil, nil
	resp.TopologyDescriptionRequired, resp.EndpointInformationEpoch, resp.PartitionsByUserEndpoint = false, 0, nil
	return resp
}

// decodeStreamsHeartbeat validates req as Kafka does (INVALID_REQUEST with
// its messages) plus the gateway's caps, and copies what is kept.
func decodeStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) (*shbArgs, int16, string) {
	bad := func(msg string) (*shbArgs, int16, string) { return nil, kerr.InvalidRequest.Code, msg }
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case len(req.Group) > MaxGroupIDLen:
		return nil, kerr.InvalidGroupID.Code, ""
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	case req.MemberEpoch < epochStaticLeave:
		return bad(fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch))
	case req.MemberEpoch == epochStaticLeave && req.InstanceID == nil:
		return bad("InstanceId can't be null.")
	case req.MemberID == "":
		return bad("MemberId can't be empty.")
	case len(req.MemberID) > maxMemberIDLen:
		return bad("MemberId is too long.")
	}
	if req.MemberEpoch == 0 {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return bad("RebalanceTimeoutMs must be provided in first request.")
		case req.Topology == nil:
			return bad("Topology must be non-null when (re-)joining.")
		case req.ActiveTasks == nil || len(req.ActiveTasks) > 0:
			return bad("ActiveTasks must be empty when (re-)joining.")
		case req.StandbyTasks == nil || len(req.StandbyTasks) > 0:
			return bad("StandbyTasks must be empty when (re-)joining.")
		case req.WarmupTasks == nil || len(req.WarmupTasks) > 0:
			return bad("WarmupTasks must be empty when (re-)joining.")
		}
	} else if req.MemberEpoch > 0 {
		switch {
		case req.Topology != nil:
			return bad("Topology can only be provided when (re-)joining.")
		case (req.ActiveTasks == nil) != (req.StandbyTasks == nil) || (req.ActiveTasks == nil) != (req.WarmupTasks == nil):
			return bad("If one task-type is non-null, all must be non-null.")
		}
	}
	a := &shbArgs{ver: req.Version, group: strings.Clone(req.Group), memberID: strings.Clone(req.MemberID),
		epoch: req.MemberEpoch, endpointEpoch: req.EndpointInformationEpoch, rebalance: -1,
		shutdown: req.ShutdownApplication, clientID: clientID, clientHost: clientHost}
	if req.InstanceID != nil {
		a.instance = strings.Clone(*req.InstanceID)
	}
	if req.RackID != nil {
		a.rack = kmsg.StringPtr(strings.Clone(*req.RackID))
	}
	if req.ProcessID != nil {
		a.process = kmsg.StringPtr(strings.Clone(*req.ProcessID))
	}
	if req.RebalanceTimeoutMillis >= 0 {
		a.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if a.epoch < 0 {
		return a, 0, ""
	}
	if req.Topology != nil {
		t, code, msg := topologyFrom(req.Topology)
		if code != 0 {
			return nil, code, msg
		}
		a.topo = t
	}
	if req.ActiveTasks != nil {
		a.active = taskSet{}
		n := 0
		for _, ts := range req.ActiveTasks {
			n += len(ts.Partitions)
			if n > maxStreamsTasksListed {
				return bad("Too many active tasks.")
			}
			for _, p := range ts.Partitions {
				a.active[taskID{strings.Clone(ts.SubtopologyID), p}] = struct{}{}
			}
		}
	}
	if req.UserEndpoint != nil {
		a.endpoint = &kmsg.Endpoint{Host: strings.Clone(req.UserEndpoint.Host), Port: req.UserEndpoint.Port}
	}
	if req.ClientTags != nil {
		if len(req.ClientTags) > maxClientTags {
			return bad("Too many client tags.")
		}
		a.tagsSet = true
		for _, t := range req.ClientTags {
			a.tags = append(a.tags, [2]string{strings.Clone(t.Key), strings.Clone(t.Value)})
		}
	}
	if len(req.TaskOffsets) > maxStreamsTaskOffsets || len(req.TaskEndOffsets) > maxStreamsTaskOffsets {
		return bad("Too many task offsets.")
	}
	a.offsets, a.endOffsets = copyTaskOffsets(req.TaskOffsets), copyTaskOffsets(req.TaskEndOffsets)
	return a, 0, ""
}

func copyTaskOffsets(in []kmsg.TaskOffset) []kmsg.TaskOffset {
	if in == nil {
		return nil
	}
	out := make([]kmsg.TaskOffset, len(in))
	for i, o := range in {
		out[i] = kmsg.TaskOffset{SubtopologyID: strings.Clone(o.SubtopologyID), Partition: o.Partition, Offset: o.Offset}
	}
	return out
}

// streamsHeartbeat runs a decoded heartbeat and fills resp, or returns an
// error code and message; changed says the group's kept state
// (streams_state.go) may have changed. co.mu is held.
func (co *Coordinator) streamsHeartbeat(a *shbArgs, meta *metaSnap, resp *kmsg.StreamsGroupHeartbeatResponse) (code int16, msg string, create []StreamsTopic, changed bool) {
	if a.epoch < 0 {
		code, msg := co.leaveStreams(co.groups[a.group], a, resp)
		return code, msg, nil, code == 0
	}
	g, code, msg := co.streamsGroupFor(a)
	if code != 0 {
		return code, msg, nil, false
	}
	sg := g.streams
	before := sg.mark(sg.members[a.memberID])
	bump := sg.settings.standbys != a.settings.standbys && len(sg.members) > 0
	sg.settings = a.settings
	if a.topo != nil && sg.topo != nil && (a.topo.epoch != sg.topo.epoch || !a.topo.equal(sg.topo)) && sg.liveOthers(a.memberID) {
		return kerr.InvalidRequest.Code, "Topology updates are not supported yet.", nil, false
	}

	m, code, msg := co.streamsMemberFor(g, sg, a)
	if code != 0 {
		return code, msg, nil, true // a fence check fails before any change; kept anyway
	}
	beforeActive, beforeStandby := m.active, m.standby
	if m.joinedAt == 0 {
		sg.seq++
		m.joinedAt, bump = sg.seq, true
	}
	if a.topo != nil {
		m.topoEpoch = a.topo.epoch
		if sg.topo == nil || !a.topo.equal(sg.topo) || a.topo.epoch != sg.topo.epoch {
			sg.topo, sg.confMeta, bump = a.topo, nil, true
		}
	}
	if co.updateStreamsMember(g, sg, m, a) {
		bump = true
	}
	if sg.confMeta != meta && sg.topo != nil {
		sg.conf, sg.confMeta = sg.topo.configure(meta.partitionsByName()), meta
		if h := sg.conf.hash(); h != sg.confHash {
			sg.confHash, bump = h, true
		}
	}
	if code, msg := sg.checkOwned(a.active); code != 0 {
		return code, msg, nil, true // the member and topology were updated
	}
	if sg.delayed() && !co.clock.Now().Before(sg.delayUntil) {
		sg.delayUntil, bump = time.Time{}, true
	}
	if bump {
		sg.epoch++
		co.log.Debug("streams group epoch bumped", "group", g.name, "epoch", sg.epoch)
	}
	if sg.epoch > sg.assignEpoch {
		co.computeStreamsTarget(sg)
	}
	co.reconcileStreams(g, sg, m, a.active)
	co.armStreamsSession(g, m)
	co.answerStreams(sg, m, a, !beforeActive.equal(m.active) || !beforeStandby.equal(m.standby), resp)
	if sg.conf != nil {
		for _, t := range sg.conf.create {
			create = append(create, StreamsTopic{Name: t.name, Partitions: t.partitions, Configs: t.configs})
		}
	}
	return 0, "", create, !before.same(sg.mark(m))
}

// streamsGroupFor finds or makes the streams group a heartbeat (epoch >= 0)
// names, or refuses it. co.mu is held.
func (co *Coordinator) streamsGroupFor(a *shbArgs) (*group, int16, string) {
	g := co.groups[a.group]
	if g == nil {
		if a.epoch != 0 {
			// A group this gateway does not know (cluster mode, where
			// streams groups are soft state, after a coordinator move):
			// the member rejoins (Kafka would still know it).
			return nil, kerr.UnknownMemberID.Code, fmt.Sprintf("Streams group %s not found: the member must rejoin.", a.group)
		}
		if !co.newGroupSlot() {
			return nil, kerr.CoordinatorNotAvailable.Code, "too many groups on this gateway"
		}
		g = &group{name: a.group, protocolType: "streams", members: map[string]*member{}, static: map[string]string{}, pending: map[string]*time.Timer{}}
		co.groups[a.group] = g
	}
	if g.streams == nil {
		if g.consumer != nil || len(g.members) > 0 || len(g.pending) > 0 || g.state != stateEmpty {
			return nil, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a streams group.", a.group)
		}
		if a.epoch != 0 {
			return nil, kerr.UnknownMemberID.Code, fmt.Sprintf("Streams group %s not found: the member must rejoin.", a.group)
		}
		// An empty classic group (or offsets alone) becomes a streams
		// group; the offsets stay.
		g.stopTimer()
		g.streams, g.protocolType, g.protocol = newSGroup(), "streams", ""
		if d := co.streamsInitialDelay(a.settings); d > 0 {
			g.streams.delayUntil = co.clock.Now().Add(d)
		}
	}
	return g, 0, ""
}

// answerStreams fills a successful heartbeat's answer for m; changed says
// its tasks changed (they are sent then, and on a join). co.mu is held.
func (co *Coordinator) answerStreams(sg *sgroup, m *smember, a *shbArgs, changed bool, resp *kmsg.StreamsGroupHeartbeatResponse) {
	resp.MemberID = m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(co.streamsInterval(sg) / time.Millisecond)
	resp.AcceptableRecoveryLagLegacy = 0 // Kafka 4.4 leaves the v0 field unset
	resp.AcceptableRecoveryLag = streamsAcceptableRecoveryLag
	resp.TaskOffsetIntervalMillis = streamsTaskOffsetInterval
	resp.Status = co.streamsStatus(sg, m)
	if a.epoch == 0 || changed {
		resp.ActiveTasks = tasksByTopology(m.active)
		resp.StandbyTasks = tasksByTopology(m.standby)
		resp.WarmupTasks = []kmsg.TaskIDs{}
		if a.epoch != 0 {
			sg.endpointEpoch++ // where tasks live changed
		}
	}
	resp.EndpointInformationEpoch = sg.endpointEpoch
	if a.endpointEpoch != sg.endpointEpoch {
		resp.PartitionsByUserEndpoint = sg.partitionsByEndpoint()
	}
}

// updateStreamsMember applies what a heartbeat says of m besides its
// topology and tasks; true when the assignment depends on the change (the
// process: tasks balance over processes). co.mu is held.
func (co *Coordinator) updateStreamsMember(g *group, sg *sgroup, m *smember, a *shbArgs) bool {
	changed := false
	if a.process != nil && *a.process != m.process {
		m.process, changed = *a.process, true
	}
	if a.rack != nil {
		m.rack = *a.rack
	}
	if a.rebalance >= 0 {
		m.rebalance = a.rebalance
	}
	if a.endpoint != nil && (m.endpoint == nil || m.endpoint.Host != a.endpoint.Host || m.endpoint.Port != a.endpoint.Port) {
		m.endpoint = a.endpoint
		sg.endpointEpoch++
	}
	if a.tagsSet {
		m.tags = a.tags
	}
	if a.offsets != nil {
		m.offsets = a.offsets
	}
	if a.endOffsets != nil {
		m.endOffsets = a.endOffsets
	}
	if a.shutdown && sg.shutdownBy == "" {
		co.log.Info("streams group asked to shut down", "group", g.name, "member", m.id)
		sg.shutdownBy = m.id
	}
	m.clientID, m.clientHost = a.clientID, a.clientHost
	return changed
}

// liveOthers: the group has a member other than id that is not a static
// member gone for now. co.mu is held.
func (sg *sgroup) liveOthers(id string) bool {
	for mid := range sg.members {
		if mid != id {
			return true
		}
	}
	return false
}

// checkOwned refuses active tasks the configured topology does not have
// (Kafka's INVALID_REQUEST). co.mu is held.
func (sg *sgroup) checkOwned(owned taskSet) (int16, string) {
	if owned == nil || sg.conf == nil || !sg.conf.ready {
		return 0, ""
	}
	for t := range owned {
		n := sg.conf.tasks[t.sub]
		if t.part < 0 || t.part >= n {
			return kerr.InvalidRequest.Code, fmt.Sprintf("Task %d for subtopology %s is invalid. Number of tasks for this subtopology: %d", t.part, t.sub, n)
		}
	}
	return 0, ""
}

func (sg *sgroup) delayed() bool { return !sg.delayUntil.IsZero() }

// streamsStatus is what the group tells m about itself. co.mu is held.
func (co *Coordinator) streamsStatus(sg *sgroup, m *smember) []kmsg.StreamsGroupHeartbeatResponseStatus {
	out := []kmsg.StreamsGroupHeartbeatResponseStatus{}
	add := func(code int8, detail string) {
		s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
		s.StatusCode, s.StatusDetail = code, detail
		out = append(out, s)
	}
	if sg.shutdownBy != "" {
		add(statusShutdownApplication, fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", sg.shutdownBy))
	}
	if sg.delayed() {
		add(statusAssignmentDelayed, "Assignment delayed due to the configured initial rebalance delay.")
	}
	if sg.topo != nil && m.topoEpoch < sg.topo.epoch {
		add(statusStaleTopology, fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topoEpoch, sg.topo.epoch))
	}
	if sg.conf != nil {
		for _, s := range sg.conf.status {
			add(s.code, s.detail)
		}
	}
	return out
}

// tasksByTopology is a task set in the response's shape, sorted.
func tasksByTopology(s taskSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range s.sortedBy(cmpTask) {
		if len(out) == 0 || out[len(out)-1].SubtopologyID != t.sub {
			out = append(out, kmsg.TaskIDs{SubtopologyID: t.sub})
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, t.part)
	}
	return out
}

// partitionsByEndpoint is the interactive-query map: per member endpoint,
// the source partitions of its active and standby tasks. co.mu is held.
func (sg *sgroup) partitionsByEndpoint() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if sg.conf == nil {
		return out
	}
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint = *m.endpoint
		for _, tp := range sg.sourcePartitions(m.active) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: tp.topic, Partitions: tp.parts})
		}
		for _, tp := range sg.sourcePartitions(m.standby) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: tp.topic, Partitions: tp.parts})
		}
		out = append(out, e)
	}
	return out
}

type topicParts struct {
	topic string
	parts []int32
}

// sourcePartitions maps tasks to the partitions of their subtopologies'
// source topics, sorted by topic. co.mu is held.
func (sg *sgroup) sourcePartitions(ts taskSet) []topicParts {
	by := map[string][]int32{}
	for t := range ts {
		for _, name := range sg.conf.sources[t.sub] {
			by[name] = append(by[name], t.part)
		}
	}
	out := make([]topicParts, 0, len(by))
	for _, name := range sortedKeys(by) {
		ps := by[name]
		slices.Sort(ps)
		out = append(out, topicParts{name, ps})
	}
	return out
}

// hash covers what the assignment depends on: readiness and task counts.
func (c *configured) hash() uint64 {
	h := fnv.New64a()
	if c.ready {
		h.Write([]byte{1})
	}
	for _, sub := range sortedKeys(c.tasks) {
		n := c.tasks[sub]
		h.Write([]byte(sub))
		h.Write([]byte{0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
	return h.Sum64()
}

// partitionsByName is the snapshot as name -> partition count.
func (s *metaSnap) partitionsByName() map[string]int32 {
	out := make(map[string]int32, len(s.byName))
	for n, t := range s.byName {
		out[n] = t.partitions
	}
	return out
}

// streamsMemberFor finds or creates the member a heartbeat (epoch >= 0)
// names: static membership, group size, epoch fencing. co.mu is held.
func (co *Coordinator) streamsMemberFor(g *group, sg *sgroup, a *shbArgs) (*smember, int16, string) {
	m, found, code, msg := lookupMember(sg.members, sg.static, g.name, a.memberID, a.instance, a.epoch)
	switch {
	case code != 0:
		return nil, code, msg
	case found == lookupCheck:
		code, msg := checkStreamsEpoch(m, a)
		return m, code, msg
	case found == lookupRejoin:
		co.resetStreamsMember(sg, m)
		return m, 0, ""
	case found == lookupReplace:
		return co.replaceStaticStreams(g, sg, m, a.memberID), 0, ""
	}
	if len(sg.members) >= co.cfg.MaxGroupSize {
		return nil, kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The streams group has reached its maximum capacity of %d members.", co.cfg.MaxGroupSize)
	}
	if co.members >= co.cfg.MaxMembers {
		return nil, kerr.CoordinatorNotAvailable.Code, "too many group members on this gateway"
	}
	m = &smember{memberCore: memberCore{id: a.memberID, instance: a.instance, rebalance: a.rebalance}, active: taskSet{}, standby: taskSet{}, revoking: taskSet{}}
	if m.rebalance < 0 {
		m.rebalance = co.streamsSession(sg)
	}
	sg.members[m.id] = m
	if a.instance != "" {
		sg.static[a.instance] = m.id
	}
	co.members++
	co.log.Info("streams group member joined", "group", g.name, "member", m.id, "instance", a.instance)
	return m, 0, ""
}

// checkStreamsEpoch is the epoch fence of checkEpoch for a streams member.
func checkStreamsEpoch(m *smember, a *shbArgs) (int16, string) {
	switch {
	case a.epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", a.epoch, m.epoch)
	case a.epoch < m.epoch:
		if a.epoch != m.prevEpoch || a.active == nil || !a.active.subsetOf(m.active) {
			return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", a.epoch, m.epoch)
		}
	}
	return 0, ""
}

// resetStreamsMember makes m hold nothing at epoch 0; co.mu is held.
func (co *Coordinator) resetStreamsMember(sg *sgroup, m *smember) {
	sg.setOwned(m, taskSet{}, taskSet{})
	m.standby = taskSet{}
	m.reset()
}

// replaceStaticStreams gives a static member's place to its new member
// id, with what it held; co.mu is held.
func (co *Coordinator) replaceStaticStreams(g *group, sg *sgroup, old *smember, newID string) *smember {
	old.stopTimers()
	active, standby := old.active, old.standby
	sg.setOwned(old, taskSet{}, taskSet{})
	delete(sg.members, old.id)
	n := *old
	n.id, n.epoch, n.prevEpoch, n.state = newID, 0, 0, mStable
	n.session, n.revoke = nil, nil
	n.active, n.revoking, n.standby = taskSet{}, taskSet{}, standby
	sg.members[newID] = &n
	sg.setOwned(&n, active, taskSet{})
	sg.static[n.instance] = newID
	if t, ok := sg.target[old.id]; ok {
		delete(sg.target, old.id)
		sg.target[newID] = t
	}
	co.log.Info("streams group static member rejoined", "group", g.name, "instance", n.instance, "member", newID, "replaces", old.id)
	return &n
}

// setOwned replaces the active tasks m holds, keeping sg.owner in step;
// co.mu is held.
func (sg *sgroup) setOwned(m *smember, active, revoking taskSet) {
	for _, s := range []taskSet{m.active, m.revoking} {
		for t := range s {
			if sg.owner[t] == m.id {
				delete(sg.owner, t)
			}
		}
	}
	m.active, m.revoking = active, revoking
	for _, s := range []taskSet{active, revoking} {
		for t := range s {
			sg.owner[t] = m.id
		}
	}
}

// computeStreamsTarget runs the task assignor and moves the assignment
// epoch to the group epoch. co.mu is held.
func (co *Coordinator) computeStreamsTarget(sg *sgroup) {
	tasks, stateful := map[string]int32{}, map[string]bool{}
	if sg.conf != nil && sg.conf.ready && !sg.delayed() {
		tasks = sg.conf.tasks
		for i := range sg.topo.subs {
			stateful[sg.topo.subs[i].id] = len(sg.topo.subs[i].changelogs) > 0
		}
	}
	ms := make([]taskMember, 0, len(sg.members))
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		ms = append(ms, taskMember{id: id, process: m.process, prev: sg.target[id]})
	}
	sg.target = assignTasks(ms, tasks, stateful, sg.settings.standbys)
	sg.assignEpoch = sg.epoch
}

// reconcileStreams moves m towards its target: active tasks it must give
// up are revoked first (it stays at its epoch until its heartbeat no longer
// lists them); active tasks another member still holds are withheld;
// standby tasks follow the target at once. owned is the heartbeat's active
// tasks (nil: unchanged). co.mu is held.
func (co *Coordinator) reconcileStreams(g *group, sg *sgroup, m *smember, owned taskSet) {
	target := sg.target[m.id]
	switch m.state {
	case mStable:
		if m.epoch == sg.assignEpoch {
			return
		}
	case mUnrevoked:
		if ownsAny(owned, owned != nil, m.revoking) {
			return
		}
	}
	keep, revoke, revoking, unreleased := reconcileStep(m.active, target.active, owned, owned != nil, func(t taskID) bool {
		o, held := sg.owner[t]
		return held && o != m.id
	})
	m.standby = taskSet{}
	for t := range target.standby {
		if !m.active.has(t) {
			m.standby[t] = struct{}{}
		}
	}
	if revoking {
		was := m.state
		m.state = mUnrevoked
		sg.setOwned(m, keep, revoke)
		if was != mUnrevoked {
			co.armStreamsRevokeTimer(g, m)
		}
		return
	}
	sg.setOwned(m, keep, taskSet{})
	m.settle(sg.assignEpoch, unreleased)
}

// leaveStreams runs a heartbeat with epoch -1 (leave) or -2 (a static
// member leaving for now). co.mu is held.
func (co *Coordinator) leaveStreams(g *group, a *shbArgs, resp *kmsg.StreamsGroupHeartbeatResponse) (int16, string) {
	if g == nil || g.streams == nil {
		// Not GROUP_ID_NOT_FOUND, which the Java client takes as fatal:
		// a group unknown here may be one a restart of this gateway (or a
		// coordinator move) forgot, and its members must be able to leave
		// and rejoin it.
		return kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", a.memberID, a.group)
	}
	sg := g.streams
	m, code, msg := leavingMember(sg.members, sg.static, g.name, a.memberID, a.instance)
	if code != 0 {
		return code, msg
	}
	shbBare(resp, a.memberID, a.epoch)
	if a.epoch == epochStaticLeave {
		co.log.Info("streams group static member left for now", "group", g.name, "member", m.id, "instance", m.instance)
		sg.setOwned(m, m.active, taskSet{})
		m.leaveForNow()
		return 0, ""
	}
	co.log.Info("streams group member left", "group", g.name, "member", m.id)
	co.removeStreamsMember(sg, m)
	return 0, ""
}

// removeStreamsMember drops m, frees its tasks and bumps the group epoch;
// co.mu is held.
func (co *Coordinator) removeStreamsMember(sg *sgroup, m *smember) {
	m.stopTimers()
	sg.setOwned(m, taskSet{}, taskSet{})
	delete(sg.members, m.id)
	if sg.static[m.instance] == m.id {
		delete(sg.static, m.instance)
	}
	delete(sg.target, m.id)
	co.members--
	sg.epoch++
	sg.endpointEpoch++
	if len(sg.members) == 0 {
		sg.shutdownBy = "" // a new start of the app runs again
	}
}

// ---- timers ----

func (co *Coordinator) streamsSession(sg *sgroup) time.Duration {
	if sg != nil && sg.settings.streamsSession > 0 {
		return sg.settings.streamsSession
	}
	return defaultStreamsSession
}

// streamsInitialDelay is the initial rebalance delay of a new streams group
// with settings s.
func (co *Coordinator) streamsInitialDelay(s groupSettings) time.Duration {
	if s.streamsDelay != nil {
		return *s.streamsDelay
	}
	return co.cfg.StreamsInitialRebalanceDelay
}

func (co *Coordinator) streamsInterval(sg *sgroup) time.Duration {
	if sg != nil && sg.settings.streamsInterval > 0 {
		return sg.settings.streamsInterval
	}
	return defaultStreamsInterval
}

// armStreamsSession restarts m's session timer; co.mu is held.
func (co *Coordinator) armStreamsSession(g *group, m *smember) {
	gname, mid := g.name, m.id
	co.armTimer(&m.session, &m.sessTok, co.streamsSession(g.streams), func(tok uint64, _ *[]Ticket) {
		if sg, m := co.streamsMember(gname, mid); m != nil && m.sessTok == tok {
			co.log.Info("streams group member session expired", "group", gname, "member", mid)
			co.removeStreamsMember(sg, m)
			co.persistStreamsLater(gname)
		}
	})
}

// armStreamsRevokeTimer removes m if it has not revoked what it was asked
// to within its rebalance timeout; co.mu is held.
func (co *Coordinator) armStreamsRevokeTimer(g *group, m *smember) {
	gname, mid, epoch := g.name, m.id, m.epoch
	co.armTimer(&m.revoke, &m.revokTok, m.rebalance, func(tok uint64, _ *[]Ticket) {
		if sg, m := co.streamsMember(gname, mid); m != nil && m.revokTok == tok && m.state == mUnrevoked && m.epoch == epoch {
			co.log.Info("streams group member fenced: it did not revoke its tasks within its rebalance timeout", "group", gname, "member", mid, "epoch", epoch)
			co.removeStreamsMember(sg, m)
			co.persistStreamsLater(gname)
		}
	})
}

// streamsMember finds a streams member; co.mu is held.
func (co *Coordinator) streamsMember(gname, mid string) (*sgroup, *smember) {
	g := co.groups[gname]
	if g == nil || g.streams == nil {
		return nil, nil
	}
	return g.streams, g.streams.members[mid]
}
