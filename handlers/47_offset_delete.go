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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 47, MinVersion: 0, MaxVersion: 0, Handle: typedReq(offsetDelete)})
}

func offsetDelete(c *Call, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	if !c.authzOn() {
		return c.G.coordinator().DeleteOffsets(c.Ctx, req), nil
	}
	// DELETE on the group, then READ on each topic, as Kafka checks.
	if !c.Authorized(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	sub := *req
	sub.Topics = nil
	var refused []kmsg.OffsetDeleteResponseTopic
	for _, rt := range req.Topics {
		if c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic) {
			sub.Topics = append(sub.Topics, rt)
			continue
		}
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
			st.Partitions = append(st.Partitions, sp)
		}
		refused = append(refused, st)
	}
	if len(sub.Topics) == 0 && len(refused) > 0 {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.Topics = refused
		return resp, nil
	}
	resp := c.G.coordinator().DeleteOffsets(c.Ctx, &sub)
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
