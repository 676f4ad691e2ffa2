package share

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a share group's state as ListGroups and the describes name it.
func (g *Group) State() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// Listed is one share group as ListGroups shows it.
type Listed struct {
	ID, State string
}

// List returns the share groups, sorted by id.
func (co *Coordinator) List() []Listed {
	co.mu.Lock()
	defer co.mu.Unlock()
	out := make([]Listed, 0, len(co.groups))
	for id, g := range co.groups {
		if !co.coordinates(id) {
			continue // in cluster mode: held here for its partitions only
		}
		out = append(out, Listed{id, g.State()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Describe answers ShareGroupDescribe for one group id.
func (co *Coordinator) Describe(id string) kmsg.ShareGroupDescribeResponseGroup {
	out := kmsg.NewShareGroupDescribeResponseGroup()
	out.GroupID = id
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[id]
	if g == nil {
		out.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + id + " not found."
		out.ErrorMessage = &msg
		return out
	}
	out.GroupState = g.State()
	out.GroupEpoch = g.epoch
	out.AssignmentEpoch = g.assignEpoch
	out.Assignor = "simple"
	ids := make([]string, 0, len(g.members))
	for mid := range g.members {
		ids = append(ids, mid)
	}
	sort.Strings(ids)
	for _, mid := range ids {
		m := g.members[mid]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		if m.rack != "" {
			r := m.rack
			dm.RackID = &r
		}
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.host
		dm.SubscribedTopicNames = append([]string(nil), m.topics...)
		topics := make([]string, 0, len(m.assigned))
		for t := range m.assigned {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID = g.meta[t].ID
			tp.Topic = t
			tp.Partitions = append([]int32(nil), m.assigned[t]...)
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// PartitionOffsets is a share partition as DescribeShareGroupOffsets
// shows it: the start offset and how many in-flight records are done
// (acknowledged or archived), for the lag.
type PartitionOffsets struct {
	TopicID [16]byte
	Start   int64
	Done    int64
}

// Offsets returns the share partitions of group (nil when it is not a
// share group here). In cluster mode they are read from the shared store,
// where their leaders keep them.
func (co *Coordinator) Offsets(ctx context.Context, group string) (map[TP]PartitionOffsets, error) {
	offsetsOf := func(p *Partition) PartitionOffsets {
		c := p.Count()
		return PartitionOffsets{TopicID: p.TopicID, Start: p.start, Done: int64(c.Acked + c.Archived)}
	}
	if co.shared() {
		out := map[TP]PartitionOffsets{}
		if err := co.sharedStates(ctx, group, func(tp TP, p *Partition) { out[tp] = offsetsOf(p) }); err != nil {
			return nil, err
		}
		if len(out) == 0 && !co.Exists(group) {
			return nil, nil
		}
		return out, nil
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[group]
	if g == nil {
		return nil, nil
	}
	out := make(map[TP]PartitionOffsets, len(g.parts))
	for tp, p := range g.parts {
		out[tp] = offsetsOf(p)
	}
	return out, nil
}

// storedParts lists the share partitions of group: in cluster mode those
// of the shared store, else those held here. Without co.mu.
func (co *Coordinator) storedParts(ctx context.Context, group string) ([]TP, error) {
	var out []TP
	if co.shared() {
		err := co.sharedStates(ctx, group, func(tp TP, _ *Partition) { out = append(out, tp) })
		return out, err
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if g := co.groups[group]; g != nil {
		for tp := range g.parts {
			out = append(out, tp)
		}
	}
	return out, nil
}

// AlterOffsets sets the start offset of share partitions of an empty (or
// new) group: nothing in flight, the next fetch reads from there. It
// returns a group-level code (NON_EMPTY_GROUP while members are in it).
func (co *Coordinator) AlterOffsets(ctx context.Context, group string, to map[TP]int64, ids map[string][16]byte) int16 {
	co.mu.Lock()
	g := co.groups[group]
	if g != nil && len(g.members) > 0 {
		co.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	if g == nil && len(co.groups) >= co.o.Config.MaxGroups {
		co.mu.Unlock()
		return kerr.GroupMaxSizeReached.Code
	}
	g = co.group(group)
	if co.shared() {
		// The partitions' leaders may be other gateways: the new states
		// go to the shared store, whose watch tells the leaders to read
		// them again.
		for tp := range to {
			delete(g.parts, tp)
		}
		co.mu.Unlock()
		for tp, off := range to {
			v := appendState(nil, newPartition(ids[tp.Topic], off))
			if _, err := co.o.Shared.PutState(ctx, stateKey(group, tp.Topic, tp.Partition), v, AnyRevision); err != nil {
				return storeCode(err)
			}
		}
		return 0
	}
	for tp, off := range to {
		p := g.parts[tp]
		if p == nil || p.TopicID != ids[tp.Topic] {
			p = newPartition(ids[tp.Topic], off)
			p.stats = &co.stats
			g.parts[tp] = p
		}
		p.Reset(off)
	}
	co.mu.Unlock()
	for tp := range to {
		if err := co.persist(ctx, group, tp); err != nil {
			return storeCode(err)
		}
	}
	return 0
}

// DeleteOffsets forgets the share partitions of group's topics (an empty
// group only: NON_EMPTY_GROUP otherwise; a group that is not a share group
// here has nothing to forget). The next fetch starts them over by
// share.auto.offset.reset. had lists the topics that had state.
func (co *Coordinator) DeleteOffsets(ctx context.Context, group string, topics []string) (code int16, had map[string]bool) {
	co.mu.Lock()
	g := co.groups[group]
	switch {
	case g == nil && !co.shared():
		co.mu.Unlock()
		return 0, nil
	case g != nil && len(g.members) > 0:
		co.mu.Unlock()
		return kerr.NonEmptyGroup.Code, nil
	}
	co.mu.Unlock()
	tps, err := co.storedParts(ctx, group)
	if err != nil {
		return storeCode(err), nil
	}
	var gone []TP
	had = map[string]bool{}
	co.mu.Lock()
	for _, tp := range tps {
		for _, t := range topics {
			if tp.Topic == t {
				gone = append(gone, tp)
				had[t] = true
				if g := co.groups[group]; g != nil {
					delete(g.parts, tp)
				}
			}
		}
	}
	co.mu.Unlock()
	return storeCode(co.forget(ctx, group, gone)), had
}

// Delete deletes an empty share group and its state: GROUP_ID_NOT_FOUND
// when it is not a share group here, NON_EMPTY_GROUP while it has members.
func (co *Coordinator) Delete(ctx context.Context, group string) int16 {
	co.mu.Lock()
	g := co.groups[group]
	if g != nil && len(g.members) > 0 {
		co.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	co.mu.Unlock()
	tps, err := co.storedParts(ctx, group)
	if err != nil {
		return storeCode(err)
	}
	co.mu.Lock()
	g = co.groups[group]
	switch {
	case g == nil && len(tps) == 0:
		co.mu.Unlock()
		return kerr.GroupIDNotFound.Code
	case g != nil && len(g.members) > 0:
		co.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	delete(co.groups, group)
	for k, s := range co.sessions {
		if k.group == group {
			co.dropSession(k, s)
		}
	}
	co.mu.Unlock()
	return storeCode(co.forget(ctx, group, tps))
}

// Numbers are the share groups' numbers for metrics.
type Numbers struct {
	Groups, Members, Sessions, Acquired                                         int64
	AcquiredTotal, Accepted, Released, Rejected, Expired, Archived, StateWrites int64
}

// Numbers reads the numbers of the share groups. Any goroutine.
func (co *Coordinator) Numbers() Numbers {
	co.mu.Lock()
	c := Numbers{Groups: int64(len(co.groups)), Sessions: int64(len(co.sessions))}
	for _, g := range co.groups {
		c.Members += int64(len(g.members))
		for _, p := range g.parts {
			c.Acquired += int64(p.locks)
		}
	}
	co.mu.Unlock()
	s := &co.stats
	c.AcquiredTotal, c.Accepted, c.Released = s.Acquired.Load(), s.Accepted.Load(), s.Released.Load()
	c.Rejected, c.Expired, c.Archived, c.StateWrites = s.Rejected.Load(), s.Expired.Load(), s.Archived.Load(), s.StateWrites.Load()
	return c
}

// ForgetTopic drops every group's share partitions of topic and their
// stored state: the topic was deleted. Without co.mu.
func (co *Coordinator) ForgetTopic(ctx context.Context, topic string) {
	type gone struct {
		group string
		tps   []TP
	}
	var all []gone
	if co.shared() {
		// Every group's state of the topic, wherever it is led.
		byGroup := map[string][]TP{}
		err := co.o.Shared.ScanState(ctx, KeyPrefix, func(key string, _ []byte, _ int64) {
			if g, t, n, ok := parseKey(key); ok && t == topic {
				byGroup[g] = append(byGroup[g], TP{t, n})
			}
		})
		if err != nil {
			co.log.Warn("share groups: listing a deleted topic's state failed", "topic", topic, "err", err)
		}
		for g, tps := range byGroup {
			all = append(all, gone{g, tps})
		}
	}
	co.mu.Lock()
	for id, g := range co.groups {
		var tps []TP
		for tp := range g.parts {
			if tp.Topic == topic {
				tps = append(tps, tp)
				delete(g.parts, tp)
			}
		}
		if len(tps) > 0 {
			all = append(all, gone{id, tps})
		}
	}
	co.mu.Unlock()
	for _, x := range all {
		if err := co.forget(ctx, x.group, x.tps); err != nil {
			co.log.Warn("share groups: forgetting a deleted topic's state failed", "group", x.group, "topic", topic, "err", err)
		}
	}
}
