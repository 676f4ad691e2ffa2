package share

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// HeartbeatInput is a ShareGroupHeartbeat with what the handler knows of
// the caller and of the subscribed topics.
type HeartbeatInput struct {
	Req            *kmsg.ShareGroupHeartbeatRequest
	ClientID, Host string
	// Topics resolves topic names to their ids and partition counts (the
	// ones missing are not assigned). Called without co.mu.
	Topics func(ctx context.Context, names []string) (map[string]TopicMeta, error)
	// Foreign reports whether the group id belongs to a classic or
	// consumer group.
	Foreign func(group string) bool
}

// Heartbeat answers ShareGroupHeartbeat: join (epoch 0), stay (the member's
// epoch) or leave (-1), with the member's assignment when it changed.
func (co *Coordinator) Heartbeat(ctx context.Context, in HeartbeatInput) *kmsg.ShareGroupHeartbeatResponse {
	req := in.Req
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	switch {
	case !validGroupID(req.GroupID):
		return fail(kerr.InvalidRequest.Code, "GroupId can't be empty.")
	case req.MemberID == "":
		return fail(kerr.InvalidRequest.Code, "")
	case req.MemberEpoch < -1:
		return fail(kerr.InvalidRequest.Code, "MemberEpoch is invalid.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request.")
	case in.Foreign != nil && in.Foreign(req.GroupID):
		return fail(kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a share group.", req.GroupID))
	}
	set := co.Settings(ctx, req.GroupID)
	resp.MemberID = &req.MemberID
	notMember := func() *kmsg.ShareGroupHeartbeatResponse {
		resp.MemberID = nil
		return fail(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.GroupID))
	}

	if req.MemberEpoch == -1 {
		co.mu.Lock()
		g := co.groups[req.GroupID]
		if g == nil || g.members[req.MemberID] == nil {
			co.mu.Unlock()
			return notMember()
		}
		woke := co.removeMember(g, req.MemberID, set.DeliveryLimit)
		co.mu.Unlock()
		co.afterRelease(ctx, woke)
		resp.MemberEpoch = -1
		return resp
	}
	resp.HeartbeatIntervalMillis = set.HeartbeatMs

	// The subscribed topics' metadata, read before the lock.
	co.mu.Lock()
	var names []string
	if g := co.groups[req.GroupID]; g != nil {
		names = g.subscribed()
	}
	co.mu.Unlock()
	names = mergeSorted(names, req.SubscribedTopicNames)
	var meta map[string]TopicMeta
	if in.Topics != nil && len(names) > 0 {
		var err error
		if meta, err = in.Topics(ctx, names); err != nil {
			return fail(kerr.CoordinatorNotAvailable.Code, "")
		}
	}

	now := co.now()
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.closed {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	g := co.groups[req.GroupID]
	if g == nil && len(co.groups) >= co.o.Config.MaxGroups {
		return fail(kerr.GroupMaxSizeReached.Code, "The share groups of this gateway reached their limit.")
	}
	m := (*member)(nil)
	if g != nil {
		m = g.members[req.MemberID]
	}
	changed := false
	if req.MemberEpoch == 0 {
		if m == nil {
			if g != nil && len(g.members) >= co.o.Config.MaxMembers {
				return fail(kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", co.o.Config.MaxMembers))
			}
			g = co.group(req.GroupID)
			m = &member{id: req.MemberID}
			g.members[m.id] = m
		}
		m.sent = -1
		changed = true
	} else {
		if m == nil {
			return notMember()
		}
		// Kafka fences only an epoch from the future: a lower one (a
		// lost answer) is answered with the current epoch.
		if req.MemberEpoch > m.epoch {
			return fail(kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch))
		}
		if req.MemberEpoch < m.epoch {
			m.sent = -1 // it missed an answer: send the assignment again
		}
	}
	m.deadline = now + set.SessionMs
	m.clientID, m.host = in.ClientID, in.Host
	if req.RackID != nil {
		m.rack = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		t := append([]string(nil), req.SubscribedTopicNames...)
		sort.Strings(t)
		t = dedupSorted(t)
		if !equalStrings(t, m.topics) {
			m.topics = t
			changed = true
		}
	}
	if !sameMeta(g.meta, meta, g.subscribed()) {
		g.meta = pick(meta, g.subscribed())
		changed = true
	}
	if changed {
		g.epoch++
		co.assign(g)
		if m.epoch == 0 {
			m.epoch = g.epoch
		}
	}
	resp.MemberEpoch = m.epoch
	if m.sent != m.epoch {
		m.sent = m.epoch
		a := &kmsg.ShareGroupHeartbeatResponseAssignment{}
		topics := make([]string, 0, len(m.assigned))
		for t := range m.assigned {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{
				TopicID: g.meta[t].ID, Partitions: append([]int32(nil), m.assigned[t]...)})
		}
		resp.Assignment = a
	}
	return resp
}

// afterRelease makes released records durable and wakes the fetches
// parked on their partitions. Without co.mu.
func (co *Coordinator) afterRelease(ctx context.Context, woke []hit) {
	for _, h := range woke {
		_ = co.persist(ctx, h.group, h.tp)
		if co.o.Available != nil {
			co.o.Available(h.tp.Topic, h.tp.Partition)
		}
	}
}

// subscribed is the union of the members' topics, sorted. co.mu is held.
func (g *Group) subscribed() []string {
	var all []string
	for _, m := range g.members {
		all = mergeSorted(all, m.topics)
	}
	return all
}

// mergeSorted is the sorted union of a (sorted) and b.
func mergeSorted(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	sort.Strings(out)
	return dedupSorted(out)
}

func dedupSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// pick keeps the entries of meta named in names.
func pick(meta map[string]TopicMeta, names []string) map[string]TopicMeta {
	out := make(map[string]TopicMeta, len(names))
	for _, n := range names {
		if tm, ok := meta[n]; ok {
			out[n] = tm
		}
	}
	return out
}

// sameMeta reports whether the assignment's metadata old still says what
// meta says of names.
func sameMeta(old, meta map[string]TopicMeta, names []string) bool {
	now := pick(meta, names)
	if len(now) != len(old) {
		return false
	}
	for n, tm := range now {
		if o, ok := old[n]; !ok || o != tm {
			return false
		}
	}
	return true
}
