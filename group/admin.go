package group

// The admin operations over groups: DescribeGroups, ListGroups,
// DeleteGroups. They read the coordinator's memory under co.mu and the
// store without it (worker goroutines; store calls under the caller's ctx).

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe answers a DescribeGroups: live groups from memory, groups known
// only by their committed offsets as Empty, anything else Dead.
func (co *Coordinator) Describe(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Groups = make([]kmsg.DescribeGroupsResponseGroup, len(req.Groups))
	for i, name := range req.Groups {
		rg := &resp.Groups[i]
		rg.Default()
		rg.Group = name
		rg.State = stateDead.String()
		if code := co.groupCode(name); code != 0 {
			rg.ErrorCode = code
			continue
		}
		if v, ok := co.view(name); ok && (v.consumer || v.streams) {
			// Kafka 4 describes only classic groups here; the admin
			// client uses ConsumerGroupDescribe for the others.
			if req.Version >= 6 {
				rg.ErrorCode = kerr.GroupIDNotFound.Code
				rg.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a classic group.")
			}
			continue
		} else if ok {
			rg.State, rg.ProtocolType, rg.Protocol = v.state.String(), v.protocolType, v.protocol
			for _, m := range v.members {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.ClientID, rm.ClientHost = m.id, m.clientID, m.clientHost
				if m.instance != "" {
					rm.InstanceID = kmsg.StringPtr(m.instance)
				}
				rm.ProtocolMetadata = m.metadata
				rm.MemberAssignment = m.assignment
				if rm.ProtocolMetadata == nil {
					rm.ProtocolMetadata = []byte{}
				}
				if rm.MemberAssignment == nil {
					rm.MemberAssignment = []byte{}
				}
				rg.Members = append(rg.Members, rm)
			}
			continue
		}
		has, err := co.hasOffsets(ctx, name)
		switch {
		case err != nil:
			rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case has:
			rg.State, rg.ProtocolType = stateEmpty.String(), "consumer"
		case req.Version >= 6:
			rg.ErrorCode = kerr.GroupIDNotFound.Code
		}
		if rg.ErrorCode != 0 && req.Version >= 6 {
			rg.ErrorMessage = kmsg.StringPtr(kerr.ErrorForCode(rg.ErrorCode).Error())
		}
	}
	return resp
}

// List answers a ListGroups: the groups in memory and those the store
// lists as holding committed offsets, filtered by state (v4) and type (v5).
func (co *Coordinator) List(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	want := func(state, gtype string) bool {
		return (len(req.StatesFilter) == 0 || slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, state) })) &&
			(len(req.TypesFilter) == 0 || slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, gtype) }))
	}
	seen := map[string]bool{}
	add := func(name, state, ptype, gtype string) {
		seen[name] = true
		// Each coordinator lists its own groups; admin clients ask every
		// broker and merge, as with Kafka.
		if !want(state, gtype) || co.placed(name) == kerr.NotCoordinator.Code {
			return
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = name, ptype, state, gtype
		resp.Groups = append(resp.Groups, rg)
	}
	for _, g := range co.names() {
		add(g.name, g.state, g.protocolType, g.gtype)
	}
	names, ok, err := co.store.OffsetGroups(ctx, co.stream)
	if err != nil {
		resp.Groups = nil
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	if ok {
		for _, n := range names {
			if !seen[n] {
				add(n, stateEmpty.String(), "consumer", "classic")
			}
		}
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// Delete answers a DeleteGroups: a group with no live members leaves
// memory and its committed offsets leave the store.
func (co *Coordinator) Delete(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, len(req.Groups))
	for i, name := range req.Groups {
		rg := &resp.Groups[i]
		rg.Default()
		rg.Group = name
		if code := co.groupCode(name); code != 0 {
			rg.ErrorCode = code
			continue
		}
		v, live := co.view(name)
		if live && len(v.members) > 0 {
			rg.ErrorCode = kerr.NonEmptyGroup.Code
			continue
		}
		has, err := co.hasOffsets(ctx, name)
		if err != nil {
			rg.ErrorCode = offsetErrCode(err)
			continue
		}
		code, known := co.forget(name)
		if code != 0 {
			rg.ErrorCode = code
			continue
		}
		if v.streams {
			if err := co.persistStreams(ctx, name); err != nil { // the group is gone: its kept state too
				rg.ErrorCode = offsetErrCode(err)
				continue
			}
		}
		if !known && !has {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			continue
		}
		rg.ErrorCode = offsetErrCode(co.store.DeleteGroupOffsets(ctx, co.stream, name))
	}
	return resp
}

// names lists the groups in memory with their state and protocol type.
func (co *Coordinator) names() []groupName {
	co.mu.Lock()
	defer co.mu.Unlock()
	out := make([]groupName, 0, len(co.groups))
	for _, g := range co.groups {
		if g.consumer != nil {
			out = append(out, groupName{g.name, g.consumer.state(), "consumer", "consumer"})
			continue
		}
		if g.streams != nil {
			out = append(out, groupName{g.name, g.streams.state(), "streams", "streams"})
			continue
		}
		out = append(out, groupName{g.name, g.state.String(), g.protocolType, "classic"})
	}
	return out
}

type groupName struct {
	name         string
	state        string // as ListGroups reports it
	protocolType string
	gtype        string // "classic", "consumer" or "streams" (ListGroups v5)
}

// forget removes a group from memory if it has no members: 0, or
// NON_EMPTY_GROUP. known says it was in memory.
func (co *Coordinator) forget(name string) (code int16, known bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[name]
	if g == nil {
		return 0, false
	}
	if !g.idle() {
		return kerr.NonEmptyGroup.Code, true
	}
	g.stopTimer()
	g.state = stateDead
	delete(co.groups, name)
	return 0, true
}

// Holds reports whether id is a classic or consumer group this
// coordinator keeps in memory (share groups, package share, share the id
// space and refuse such an id). Any goroutine.
func (co *Coordinator) Holds(id string) bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	_, ok := co.groups[id]
	return ok
}
