// DeleteShareGroupOffsets: v0-0
//
// Behavior:
//   - Forgets a share group's share partitions of the topics named
//     (kafka-share-groups --delete-offsets): the next ShareFetch starts
//     them over by share.auto.offset.reset. Only while the group has no
//     members (NON_EMPTY_GROUP at the top); a classic or consumer group's
//     id GROUP_ID_NOT_FOUND; a topic that does not exist, or one the group
//     has no state for, UNKNOWN_TOPIC_OR_PARTITION per topic ("There is no
//     offset information to delete."); an id no group has: nothing to do. ACLs: DELETE on the group
//     (GROUP_AUTHORIZATION_FAILED), READ on each topic
//     (TOPIC_AUTHORIZATION_FAILED).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 92, MinVersion: 0, MaxVersion: 0, Gated: shareServed, Handle: typedReq(deleteShareGroupOffsets)})
}

func deleteShareGroupOffsets(c *Call, req *kmsg.DeleteShareGroupOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if !c.Authorized(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if code := c.shareGroupCode(req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	var names []string
	for _, rt := range req.Topics {
		ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic) {
			ot.ErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if ti, err := c.G.Store.Topic(c.Ctx, c.G.Cfg.Stream, rt.Topic); err != nil {
			ot.ErrorCode = errCode(err, opMeta)
		} else {
			ot.TopicID = c.G.topicNames.idOf(ti)
			names = append(names, rt.Topic)
		}
		if ot.ErrorCode != 0 {
			ot.ErrorMessage = kmsg.StringPtr(kerr.ErrorForCode(ot.ErrorCode).Error())
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if c.G.coordinator().Holds(req.GroupID) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr("Group " + req.GroupID + " is not a share group.")
		resp.Topics = nil
		return resp, nil
	}
	code, had := c.G.Share.DeleteOffsets(c.Ctx, req.GroupID, names)
	if code != 0 {
		resp.ErrorCode = code
		resp.ErrorMessage = kmsg.StringPtr(kerr.ErrorForCode(code).Error())
		resp.Topics = nil
		return resp, nil
	}
	if had != nil {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.ErrorCode == 0 && !had[t.Topic] {
				t.ErrorCode = kerr.UnknownTopicOrPartition.Code
				t.ErrorMessage = kmsg.StringPtr("There is no offset information to delete.")
			}
		}
	}
	return resp, nil
}
