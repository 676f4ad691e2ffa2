// OffsetDelete: v0-0
//
// Behavior:
//   - Deletes committed offsets of a group, per partition, from the store.
//   - A group with live members that subscribes to a topic (read from the
//     consumer protocol metadata of its members) keeps that topic's
//     offsets: GROUP_SUBSCRIBED_TO_TOPIC per partition, as Kafka.
//   - A group neither live nor holding offsets is GROUP_ID_NOT_FOUND; an
//     invalid id INVALID_GROUP_ID; an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION; store failures as OffsetCommit.
//
// Version notes:
//   - Only v0 exists (KIP-496).

package handlers

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 47, MinVersion: 0, MaxVersion: 0, Handle: offsetDelete})
}

func offsetDelete(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g := c.G
	if !validGroupID(req.Group) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	st := g.groupOffsets()
	if st == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	v, live := g.coordinator().View(req.Group)
	if !live || len(v.members) == 0 {
		has, err := g.groupHasOffsets(c.Ctx, req.Group)
		if err != nil {
			resp.ErrorCode = offsetErrCode(err)
			return resp, nil
		}
		if !has && !live {
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return resp, nil
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
		case !validTopicName(rt.Topic):
			tcode = kerr.UnknownTopicOrPartition.Code
		default:
			ti, err := g.Store.Topic(c.Ctx, g.Cfg.Stream, rt.Topic)
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
				op.ErrorCode = offsetErrCode(st.DeleteOffset(c.Ctx, g.Cfg.Stream, req.Group, rt.Topic, rp.Partition))
			}
		}
	}
	return resp, nil
}
