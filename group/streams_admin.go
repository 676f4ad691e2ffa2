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

// Topology description statuses of StreamsGroupDescribe v1. The gateway,
// as a Kafka 4.4 broker without a topology description plugin, stores
// none.
const (
	descNotRequested int8 = 0
	descNotStored    int8 = 1
)

// streamsCommitCheck is the member check of an OffsetCommit to a streams
// group, as Kafka 4.4's: admin tools (no member, a negative epoch) pass
// while it has no members; members must send their epoch, with
// OffsetCommit v9 or later. co.mu is held.
func streamsCommitCheck(sg *sgroup, memberID string, epoch int32, ver int16) int16 {
	if epoch < 0 && memberID == "" && len(sg.members) == 0 {
		return 0
	}
	m := sg.members[memberID]
	if m != nil && ver < 9 {
		return kerr.UnsupportedVersion.Code
	}
	return streamsEpochCode(m, epoch)
}

// streamsEpochCode checks the epoch a streams member sent with an offset
// commit or fetch: any other than its own is STALE_MEMBER_EPOCH (Kafka
// 4.4 answers 113 for a higher epoch too). co.mu is held.
func streamsEpochCode(m *smember, epoch int32) int16 {
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case epoch != m.epoch:
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
				d.SourceTopics = append([]string{}, s.sources...)
				d.RepartitionSinkTopics = append([]string{}, s.repartitionSink...)
				d.StateChangelogTopics = describeTopics(s.changelogs, sg.conf.internal)
				d.RepartitionSourceTopics = describeTopics(s.repartitionSrc, sg.conf.internal)
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
	rg.TopologyDescriptionStatus = descNotRequested
	if req.IncludeTopologyDescription {
		rg.TopologyDescriptionStatus = descNotStored
	}
}

// describeTopics is ts as StreamsGroupDescribe shows them: with the
// partition counts the configured topology resolved (parts).
func describeTopics(ts []streamsTopic, parts map[string]int32) []kmsg.TopicInfo {
	out := make([]kmsg.TopicInfo, 0, len(ts))
	for _, t := range ts {
		ti := kmsg.NewTopicInfo()
		ti.Topic, ti.NumPartitions, ti.ReplicationFactor = t.name, parts[t.name], t.repl
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
