package group

// Committed offsets: OffsetCommit, OffsetFetch and OffsetDelete. The
// offsets live in the Store (bridge.GroupOffsets), so they survive a
// restart; the coordinator adds the membership check of a commit and the
// subscription check of a delete. Worker goroutines: store calls run
// without co.mu, under the caller's ctx.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
)

// maxOffsetMetadata is Kafka's offset.metadata.max.bytes default; longer
// commit metadata gets OFFSET_METADATA_TOO_LARGE.
const maxOffsetMetadata = 4096

// CommitOffsets answers an OffsetCommit: the membership check first, then
// every valid partition to the store in one call (one write where the
// store batches commits, bridge.Capabilities.BatchedCommits).
func (co *Coordinator) CommitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	code := co.groupCode(req.Group)
	if code == 0 {
		instance := ""
		if req.InstanceID != nil {
			instance = *req.InstanceID
		}
		code = co.commitCheck(req.Group, req.MemberID, instance, req.Generation, req.Version)
	}
	now := time.Now().UnixMilli()
	committed := false
	// The request's commits go to the store in one call after the loop
	// (one write where the store batches them); slots are their answers.
	var pending []bridge.GroupOffset
	var slots []*kmsg.OffsetCommitResponseTopicPartition
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		ot := &resp.Topics[i]
		ot.Default()
		ot.Topic = rt.Topic
		ot.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			op := &ot.Partitions[j]
			op.Default()
			op.Partition = rp.Partition
			switch {
			case code != 0:
				op.ErrorCode = code
			case !codec.ValidTopicName(rt.Topic) || rp.Partition < 0:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > maxOffsetMetadata:
				op.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				o := bridge.CommittedOffset{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, CommitTime: now}
				if req.Version < 6 {
					o.LeaderEpoch = -1
				}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				pending = append(pending, bridge.GroupOffset{Topic: rt.Topic, Partition: rp.Partition, CommittedOffset: o})
				slots = append(slots, op)
			}
		}
	}
	if len(pending) > 0 {
		for k, err := range co.store.CommitOffsets(ctx, co.stream, req.Group, pending) {
			slots[k].ErrorCode = offsetErrCode(err)
			committed = committed || err == nil
		}
	}
	if committed {
		co.noteCommitted(req.Group)
	}
	return resp
}

// commitCheck is the membership check of an OffsetCommit: 0 means the
// commit may go to the store.
func (co *Coordinator) commitCheck(group, memberID, instance string, generation int32, ver int16) int16 {
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[group]
	if g != nil && g.streams != nil {
		return streamsCommitCheck(g.streams, memberID, generation, ver)
	}
	if g != nil && g.consumer != nil {
		// The generation field carries the member epoch (KIP-848).
		return co.commitCheck848(g.consumer, memberID, generation, ver)
	}
	if g == nil || (g.state == stateEmpty && len(g.members) == 0) {
		if generation < 0 {
			return 0 // a simple consumer or an admin tool
		}
		// A group that is not live: the member's generation is gone
		// (a gateway restart, or the member was removed).
		if memberID != "" {
			return kerr.UnknownMemberID.Code
		}
		return kerr.IllegalGeneration.Code
	}
	m, code := g.memberOf(memberID, instance, generation)
	if code != 0 {
		return code
	}
	if g.state == stateCompleting {
		return kerr.RebalanceInProgress.Code
	}
	// Stable, or PreparingRebalance (a member commits while revoking).
	co.touch(g, m)
	return 0
}

// noteCommitted records that group committed offsets, so it is listed
// (Empty) while this gateway runs even on a store that cannot enumerate
// groups.
func (co *Coordinator) noteCommitted(name string) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.groups[name] != nil || !co.newGroupSlot() {
		return
	}
	co.groups[name] = &group{name: name, protocolType: "consumer", members: map[string]*member{}, static: map[string]string{}, pending: map[string]*time.Timer{}}
}

// fetchedTopic is one topic's answer before it is written into the
// version's response shape.
type fetchedTopic struct {
	topic string
	parts []kmsg.OffsetFetchResponseGroupTopicPartition
}

// FetchOffsets answers an OffsetFetch: one group (v1-7) or several (v8+),
// the partitions asked for or, with a null topic list, every committed
// offset of the group.
func (co *Coordinator) FetchOffsets(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		resp.Groups = make([]kmsg.OffsetFetchResponseGroup, len(req.Groups))
		for i := range req.Groups {
			rg := &req.Groups[i]
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = make([]kmsg.OffsetFetchRequestTopic, len(rg.Topics))
				for j, t := range rg.Topics {
					topics[j] = kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions}
				}
			}
			var out []fetchedTopic
			code := int16(0)
			if req.Version >= 9 && validGroupID(rg.Group) {
				code = co.fetchCheck848(rg.Group, rg.MemberID, rg.MemberEpoch)
			}
			if code == 0 {
				out, code = co.fetchGroupOffsets(ctx, rg.Group, topics, rg.Topics == nil)
			}
			og := &resp.Groups[i]
			og.Default()
			og.Group, og.ErrorCode = rg.Group, code
			if code != 0 {
				continue
			}
			og.Topics = make([]kmsg.OffsetFetchResponseGroupTopic, len(out))
			for j, t := range out {
				og.Topics[j] = kmsg.OffsetFetchResponseGroupTopic{Topic: t.topic, Partitions: t.parts}
			}
		}
		return resp
	}
	all := req.Topics == nil && req.Version >= 2
	out, code := co.fetchGroupOffsets(ctx, req.Group, req.Topics, all)
	resp.Topics = make([]kmsg.OffsetFetchResponseTopic, len(out))
	for i, t := range out {
		ot := &resp.Topics[i]
		ot.Default()
		ot.Topic = t.topic
		ot.Partitions = make([]kmsg.OffsetFetchResponseTopicPartition, len(t.parts))
		for j, p := range t.parts {
			op := &ot.Partitions[j]
			op.Default()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
		}
	}
	if req.Version >= 2 {
		resp.ErrorCode = code
	} else if code != 0 {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	return resp
}

// fetchGroupOffsets answers one group: the requested partitions, or every
// committed offset when all is set, and a group-level error code.
func (co *Coordinator) fetchGroupOffsets(ctx context.Context, name string, topics []kmsg.OffsetFetchRequestTopic, all bool) ([]fetchedTopic, int16) {
	st := co.store
	code := co.groupCode(name)
	part := func(p int32, o bridge.CommittedOffset, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		r := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		r.Partition, r.Offset, r.LeaderEpoch, r.Metadata = p, -1, -1, kmsg.StringPtr("")
		if ok {
			r.Offset, r.LeaderEpoch, r.Metadata = o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
		}
		return r
	}
	if all {
		if code != 0 {
			return nil, code
		}
		offs, err := st.GroupOffsets(ctx, co.stream, name)
		if err != nil {
			return nil, offsetErrCode(err)
		}
		var out []fetchedTopic
		for _, o := range offs {
			if len(out) == 0 || out[len(out)-1].topic != o.Topic {
				out = append(out, fetchedTopic{topic: o.Topic})
			}
			t := &out[len(out)-1]
			t.parts = append(t.parts, part(o.Partition, o.CommittedOffset, true))
		}
		return out, 0
	}
	out := make([]fetchedTopic, len(topics))
	for i, t := range topics {
		out[i] = fetchedTopic{topic: t.Topic, parts: make([]kmsg.OffsetFetchResponseGroupTopicPartition, len(t.Partitions))}
		for j, p := range t.Partitions {
			var o bridge.CommittedOffset
			ok := false
			if code == 0 && codec.ValidTopicName(t.Topic) {
				var err error
				o, ok, err = st.FetchOffset(ctx, co.stream, name, t.Topic, p)
				if err != nil {
					code = offsetErrCode(err)
				}
			}
			out[i].parts[j] = part(p, o, ok)
		}
	}
	// One failed read fails the group (a partial answer would read as
	// "nothing committed" for the partitions that failed); the partitions
	// come back with -1 for v1, which has no group-level error.
	return out, code
}

// DeleteOffsets answers an OffsetDelete: per partition, except the topics
// a live group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC, as Kafka).
func (co *Coordinator) DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if code := co.groupCode(req.Group); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	st := co.store
	v, live := co.view(req.Group)
	if !live || len(v.members) == 0 {
		has, err := co.hasOffsets(ctx, req.Group)
		if err != nil {
			resp.ErrorCode = offsetErrCode(err)
			return resp
		}
		if !has && !live {
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return resp
		}
	}
	var subscribed []string
	for _, m := range v.members {
		subscribed = append(subscribed, m.topics...)
	}
	resp.Topics = make([]kmsg.OffsetDeleteResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		ot := &resp.Topics[i]
		ot.Default()
		ot.Topic = rt.Topic
		ot.Partitions = make([]kmsg.OffsetDeleteResponseTopicPartition, len(rt.Partitions))
		var tcode int16
		var parts int32
		switch {
		case slices.Contains(subscribed, rt.Topic):
			tcode = kerr.GroupSubscribedToTopic.Code
		case !codec.ValidTopicName(rt.Topic):
			tcode = kerr.UnknownTopicOrPartition.Code
		default:
			ti, err := co.store.Topic(ctx, co.stream, rt.Topic)
			tcode, parts = offsetErrCode(err), ti.Partitions
		}
		for j, rp := range rt.Partitions {
			op := &ot.Partitions[j]
			op.Default()
			op.Partition = rp.Partition
			switch {
			case tcode != 0:
				op.ErrorCode = tcode
			case rp.Partition < 0 || rp.Partition >= parts:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				op.ErrorCode = offsetErrCode(st.DeleteOffset(ctx, co.stream, req.Group, rt.Topic, rp.Partition))
			}
		}
	}
	return resp
}

// offsetErrCode maps a GroupOffsets error to a Kafka code for OffsetCommit,
// OffsetFetch, OffsetDelete and DeleteGroups. Transient failures are
// COORDINATOR_NOT_AVAILABLE, which every client retries after finding the
// coordinator again; a deadline is REQUEST_TIMED_OUT.
func offsetErrCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, bridge.ErrTopicNotFound), errors.Is(err, bridge.ErrPartitionNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, bridge.ErrOffsetNotStorable):
		return kerr.InvalidCommitOffsetSize.Code
	case errors.Is(err, bridge.ErrNotPermitted):
		// Iggy refused the gateway's user the topic's consumer offset.
		return kerr.TopicAuthorizationFailed.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, bridge.ErrUnavailable), errors.Is(err, bridge.ErrClosed):
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.UnknownServerError.Code
}

// hasOffsets reports whether the store holds committed offsets of the
// group (a group with no live members still exists for the admin keys
// when it has some).
func (co *Coordinator) hasOffsets(ctx context.Context, name string) (bool, error) {
	if !validGroupID(name) {
		return false, nil
	}
	offs, err := co.store.GroupOffsets(ctx, co.stream, name)
	return len(offs) > 0, err
}
