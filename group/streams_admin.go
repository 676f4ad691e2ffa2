package group

// StreamsGroupDescribe, StreamsGroupTopologyDescriptionUpdate and the
// offset checks of streams-group members. Each takes co.mu for in-memory
// work only.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxTopologyDescriptionBytes bounds the description a group keeps (the
// client sends it once per topology epoch).
const maxTopologyDescriptionBytes = 1 << 20

// Topology description statuses of StreamsGroupDescribe v1.
const (
	descNotRequested int8 = 0
	descNotStored    int8 = 1
	descAvailable    int8 = 3
)

// streamsCommitCheck is the member check of an OffsetCommit to a streams
// group: admin tools (no member, a negative epoch) pass while it has no
// members; members must send their epoch. co.mu is held.
func streamsCommitCheck(sg *sgroup, memberID string, epoch int32) int16 {
	if epoch < 0 && memberID == "" && len(sg.members) == 0 {
		return 0
	}
	return streamsEpochCode(sg.members[memberID], epoch)
}

// streamsEpochCode is epochCode for a streams member. co.mu is held.
func streamsEpochCode(m *smember, epoch int32) int16 {
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch.Code
	case epoch < m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// StreamsDescribe answers a StreamsGroupDescribe from memory: a group not
// in memory, or not a streams group, is GROUP_ID_NOT_FOUND. authorized
// tells which groups the caller may describe (a refused one is
// GROUP_AUTHORIZATION_FAILED). A worker.
func (co *Coordinator) StreamsDescribe(_ context.Context, req *kmsg.StreamsGroupDescribeRequest, authorized func(string) bool) *kmsg.StreamsGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	resp.Groups = make([]kmsg.StreamsGroupDescribeResponseGroup, len(req.Groups))
	for i, name := range req.Groups {
		rg := &resp.Groups[i]
		rg.Default()
		rg.Group = name
		if !authorized(name) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			continue
		}
		if code := co.groupCode(name); code != 0 {
			rg.ErrorCode = code
			continue
		}
		co.mu.Lock()
		g := co.groups[name]
		if g == nil || g.streams == nil {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := fmt.Sprintf("Group %s not found.", name)
			if g != nil {
				msg = fmt.Sprintf("Group %s is not a streams group.", name)
			}
			rg.ErrorMessage = kmsg.StringPtr(msg)
		} else {
			g.streams.describe(rg, req)
		}
		co.mu.Unlock()
	}
	return resp
}

// describe fills rg from sg. co.mu is held.
func (sg *sgroup) describe(rg *kmsg.StreamsGroupDescribeResponseGroup, req *kmsg.StreamsGroupDescribeRequest) {
	rg.State, rg.Epoch, rg.AssignmentEpoch = sg.state(), sg.epoch, sg.assignEpoch
	rg.AssignorName = kmsg.StringPtr("sticky")
	topo := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: -1}
	if sg.topo != nil {
		topo.Epoch = sg.topo.epoch
		if sg.conf != nil && sg.conf.ready {
			topo.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
			for i := range sg.topo.subs {
				s := &sg.topo.subs[i]
				d := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
				d.SubtopologyID = s.id
				d.SourceTopics = append([]string{}, sg.conf.sources[s.id]...)
				d.RepartitionSinkTopics = append([]string{}, s.repartitionSink...)
				d.StateChangelogTopics = describeTopics(s.changelogs)
				d.RepartitionSourceTopics = describeTopics(s.repartitionSrc)
				topo.Subtopologies = append(topo.Subtopologies, d)
			}
		}
	}
	rg.Topology = topo
	rg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		rm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
		rm.TopologyEpoch, rm.ProcessID = m.topoEpoch, m.process
		if m.instance != "" {
			rm.InstanceID = kmsg.StringPtr(m.instance)
		}
		if m.rack != "" {
			rm.RackID = kmsg.StringPtr(m.rack)
		}
		if m.endpoint != nil {
			rm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpoint.Host, Port: m.endpoint.Port}
		}
		rm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, t := range m.tags {
			rm.ClientTags = append(rm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: t[0], Value: t[1]})
		}
		rm.TaskOffsets = append([]kmsg.TaskOffset{}, m.offsets...)
		rm.TaskEndOffsets = append([]kmsg.TaskOffset{}, m.endOffsets...)
		rm.Assignment = streamsAssignment(m.active, m.standby)
		t := sg.target[id]
		rm.TargetAssignment = streamsAssignment(t.active, t.standby)
		rg.Members = append(rg.Members, rm)
	}
	if req.Version >= 1 {
		switch {
		case !req.IncludeTopologyDescription:
			rg.TopologyDescriptionStatus = descNotRequested
		case sg.desc != nil && sg.topo != nil && sg.descEpoch == sg.topo.epoch:
			rg.TopologyDescriptionStatus = descAvailable
			rg.TopologyDescription = &kmsg.StreamsGroupDescribeResponseGroupTopologyDescription{
				Subtopologies: sg.desc.Subtopologies, GlobalStores: sg.desc.GlobalStores,
			}
		default:
			rg.TopologyDescriptionStatus = descNotStored
		}
	}
}

func describeTopics(ts []streamsTopic) []kmsg.TopicInfo {
	out := make([]kmsg.TopicInfo, 0, len(ts))
	for _, t := range ts {
		ti := kmsg.NewTopicInfo()
		ti.Topic, ti.NumPartitions, ti.ReplicationFactor = t.name, t.partitions, t.repl
		for _, c := range t.configs {
			ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: c[0], Value: c[1]})
		}
		if ti.Configs == nil {
			ti.Configs = []kmsg.TopicInfoConfig{}
		}
		out = append(out, ti)
	}
	return out
}

func streamsAssignment(active, standby taskSet) kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = tasksByTopology(active), tasksByTopology(standby), []kmsg.TaskIDs{}
	return a
}

// StreamsTopologyDescription keeps the description a member of group sends
// for its topology epoch (StreamsGroupTopologyDescriptionUpdate). It copies
// what it keeps. A worker.
func (co *Coordinator) StreamsTopologyDescription(req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	fail := func(code int16, msg string) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	if code := co.groupCode(req.Group); code != 0 {
		return fail(code, "")
	}
	// A deep copy with no reference into the request's buffer: encode the
	// description and decode it again (bounded by the request's size).
	wrap := kmsg.NewStreamsGroupTopologyDescriptionUpdateRequest()
	wrap.TopologyDescription = req.TopologyDescription
	raw := wrap.AppendTo(nil)
	if len(raw) > maxTopologyDescriptionBytes {
		return fail(kerr.InvalidRequest.Code, "The topology description is too large.")
	}
	var cp kmsg.StreamsGroupTopologyDescriptionUpdateRequest
	cp.Version = wrap.Version
	if err := cp.ReadFrom(raw); err != nil {
		return fail(kerr.InvalidRequest.Code, "The topology description does not decode: "+err.Error())
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[req.Group]
	if g == nil || g.streams == nil {
		return fail(kerr.GroupIDNotFound.Code, fmt.Sprintf("Streams group %s not found.", req.Group))
	}
	sg := g.streams
	if sg.members[req.MemberID] == nil {
		return fail(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group))
	}
	if sg.topo == nil || req.TopologyEpoch != sg.topo.epoch {
		return fail(kerr.InvalidRequest.Code, fmt.Sprintf("Topology epoch %d is not the group's current topology epoch.", req.TopologyEpoch))
	}
	sg.desc, sg.descEpoch = &cp.TopologyDescription, req.TopologyEpoch
	return resp
}
