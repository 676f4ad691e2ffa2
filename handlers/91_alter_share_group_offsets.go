// AlterShareGroupOffsets: v0-0
//
// Behavior:
//   - Sets the share-partition start offsets of a share group with no
//     members (kafka-share-groups --reset-offsets): nothing is in flight
//     afterwards and the next ShareFetch reads from the new start. A group
//     with members is NON_EMPTY_GROUP at the top; a topic that does not
//     exist UNKNOWN_TOPIC_OR_PARTITION, a partition past its count
//     UNKNOWN_TOPIC_OR_PARTITION, a negative offset INVALID_REQUEST, each
//     per partition. ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED),
//     READ on each topic (TOPIC_AUTHORIZATION_FAILED). A group that is not
//     a share group yet becomes one.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/share"
)

func init() {
	register(Spec{Key: 91, MinVersion: 0, MaxVersion: 0, Gated: shareServed, Handle: typedReq(alterShareGroupOffsets)})
}

func alterShareGroupOffsets(c *Call, req *kmsg.AlterShareGroupOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if code := c.shareGroupCode(req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if c.G.coordinator().Holds(req.GroupID) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr("Group " + req.GroupID + " is not a share group.")
		return resp, nil
	}
	to := map[share.TP]int64{}
	ids := map[string][16]byte{}
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		code := int16(0)
		var parts int32
		if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		} else if ti, err := c.G.Store.Topic(c.Ctx, c.G.Cfg.Stream, rt.Topic); err != nil {
			code = errCode(err, opMeta)
		} else {
			ot.TopicID = c.G.topicNames.idOf(ti)
			ids[rt.Topic] = ot.TopicID
			parts = ti.Partitions
		}
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			op.Partition = rp.Partition
			switch {
			case code != 0:
				op.ErrorCode = code
			case rp.Partition < 0 || rp.Partition >= parts:
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < 0:
				op.ErrorCode = kerr.InvalidRequest.Code
			default:
				to[share.TP{Topic: rt.Topic, Partition: rp.Partition}] = rp.StartOffset
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if code := c.G.Share.AlterOffsets(c.Ctx, req.GroupID, to, ids); code != 0 {
		resp.ErrorCode = code
		resp.ErrorMessage = kmsg.StringPtr(kerr.ErrorForCode(code).Error())
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].ErrorCode == 0 {
					resp.Topics[i].Partitions[j].ErrorCode = code
				}
			}
		}
	}
	return resp, nil
}
