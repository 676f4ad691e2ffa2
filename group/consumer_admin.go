package group

// ConsumerGroupDescribe, and the consumer protocol's part in the offset
// and admin keys (OffsetCommit and OffsetFetch member-epoch checks,
// DescribeGroups, ListGroups, DeleteGroups). Worker goroutines; co.mu is
// taken for in-memory work only.

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerDescribe answers a ConsumerGroupDescribe. A group of the classic
// protocol (or known only by its committed offsets) and an unknown one are
// GROUP_ID_NOT_FOUND with Kafka's messages, which is what makes the admin
// client fall back to DescribeGroups for classic groups. Any goroutine (a
// worker); takes co.mu, never blocks.
func (co *Coordinator) ConsumerDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	resp.Groups = make([]kmsg.ConsumerGroupDescribeResponseGroup, len(req.Groups))
	co.mu.Lock()
	defer co.mu.Unlock()
	for i, name := range req.Groups {
		rg := &resp.Groups[i]
		rg.Default()
		rg.Group = name
		rg.AuthorizedOperations = math.MinInt32 // never computed
		g := co.groups[name]
		switch code := co.groupCode(name); {
		case code != 0:
			rg.ErrorCode = code
		case g == nil:
			rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr(fmt.Sprintf("Group %s not found.", name))
		case g.consumer == nil:
			rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr(fmt.Sprintf("Group %s is not a consumer group.", name))
		}
		if rg.ErrorCode != 0 {
			rg.State = stateDead.String()
			continue
		}
		cg := g.consumer
		rg.State, rg.Epoch, rg.AssignmentEpoch = cg.state(), cg.epoch, cg.assignEpoch
		rg.AssignorName = cg.assignor
		if rg.AssignorName == "" {
			rg.AssignorName = co.cfg.ConsumerAssignors[0]
		}
		for _, m := range cg.sortedMembers() {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
			if m.instance != "" {
				rm.InstanceID = kmsg.StringPtr(m.instance)
			}
			if m.rack != "" {
				rm.RackID = kmsg.StringPtr(m.rack)
			}
			rm.SubscribedTopics = append([]string{}, m.topics...)
			if m.regex != "" {
				rm.SubscribedTopicRegex = kmsg.StringPtr(m.regex)
			}
			rm.Assignment = cg.describeAssignment(m.assigned)
			rm.TargetAssignment = cg.describeAssignment(cg.target[m.id])
			rm.MemberType = 1 // consumer protocol (v1, KIP-1099)
			if m.classic != nil {
				rm.MemberType = 0 // a classic member of a mixed group
			}
			rg.Members = append(rg.Members, rm)
		}
	}
	return resp
}

func (cg *cgroup) sortedMembers() []*cmember {
	out := make([]*cmember, 0, len(cg.members))
	for _, m := range cg.members {
		out = append(out, m)
	}
	sortMembers(out)
	return out
}

func sortMembers(ms []*cmember) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].joinedAt < ms[j-1].joinedAt; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// describeAssignment is a partition set in ConsumerGroupDescribe's shape.
func (cg *cgroup) describeAssignment(s partSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range assignmentTopics(s) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t.TopicID, cg.names[t.TopicID], t.Partitions
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// commitCheck848 is the member check of an OffsetCommit to a consumer
// group (Kafka's ConsumerGroup.validateOffsetCommit): epoch -1 commits only
// while the group has no members; otherwise the member must exist
// (UNKNOWN_MEMBER_ID), use OffsetCommit v9+ (UNSUPPORTED_VERSION), and
// send its current epoch (a newer one FENCED_MEMBER_EPOCH, an older one
// STALE_MEMBER_EPOCH). co.mu is held.
func (co *Coordinator) commitCheck848(cg *cgroup, memberID string, epoch int32, ver int16) int16 {
	if epoch < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[memberID]
	if m != nil && m.classic != nil {
		// A classic member of a mixed group: any version, and a stale
		// generation is ILLEGAL_GENERATION (as Kafka).
		if epoch != m.epoch {
			return kerr.IllegalGeneration.Code
		}
		return 0
	}
	if m != nil && ver < 9 {
		return kerr.UnsupportedVersion.Code
	}
	return epochCode(m, epoch)
}

// epochCode checks the epoch a consumer-group member sent against its own:
// UNKNOWN_MEMBER_ID for no member, FENCED_MEMBER_EPOCH for a newer one,
// STALE_MEMBER_EPOCH for an older one. co.mu is held.
func epochCode(m *cmember, epoch int32) int16 {
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

// fetchCheck848 is the member check of an OffsetFetch v9+ naming a member
// of a consumer group (ConsumerGroup.validateOffsetFetch): no member id and
// a negative epoch (admin tools) pass. Takes co.mu.
func (co *Coordinator) fetchCheck848(group string, memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[group]
	if g != nil && g.streams != nil {
		id := ""
		if memberID != nil {
			id = *memberID
		}
		return streamsEpochCode(g.streams.members[id], epoch)
	}
	if g == nil || g.consumer == nil {
		return 0 // classic groups do not check (as Kafka)
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	return epochCode(g.consumer.members[id], epoch)
}
