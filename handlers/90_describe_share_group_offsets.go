// DescribeShareGroupOffsets: v0-1
//
// Behavior:
//   - Per share group, the share-partition start offset of each partition
//     it consumes (all of them when Topics is null), or -1 for a partition
//     the group has not started; v1 adds the lag: the records from the
//     start offset to the high watermark not yet acknowledged or archived.
//     A topic that does not exist, or a group that is not a share group
//     here, answers start offset -1 without an error, as Kafka does; a group the principal may not DESCRIBE
//     GROUP_AUTHORIZATION_FAILED; topics it may not DESCRIBE are left out
//     of an all-topics answer and TOPIC_AUTHORIZATION_FAILED when named.
//   - LeaderEpoch is 0 (the gateway's partitions have one leader epoch).
//
// Version notes:
//   - v1 adds Lag (KIP-1226).

package handlers

import (
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/share"
)

func init() {
	register(Spec{Key: 90, MinVersion: 0, MaxVersion: 1, Gated: shareServed, Handle: typedReq(describeShareGroupOffsets)})
}

func describeShareGroupOffsets(c *Call, req *kmsg.DescribeShareGroupOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		og := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		og.GroupID = rg.GroupID
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, rg.GroupID) {
			og.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, og)
			continue
		}
		if code := c.shareGroupCode(rg.GroupID); code != 0 {
			og.ErrorCode = code
			resp.Groups = append(resp.Groups, og)
			continue
		}
		offs, err := c.G.Share.Offsets(c.Ctx, rg.GroupID)
		if err != nil {
			og.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, og)
			continue
		}
		want := rg.Topics
		if want == nil {
			// Every topic the group consumes, in name order.
			byTopic := map[string][]int32{}
			for tp := range offs {
				if c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, tp.Topic) {
					byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
				}
			}
			for t, ps := range byTopic {
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				want = append(want, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: t, Partitions: ps})
			}
			sort.Slice(want, func(i, j int) bool { return want[i].Topic < want[j].Topic })
		}
		for _, rt := range want {
			og.Topics = append(og.Topics, c.shareOffsetsTopic(req.Version, rt, offs))
		}
		resp.Groups = append(resp.Groups, og)
	}
	return resp, nil
}

// shareOffsetsTopic answers one topic of DescribeShareGroupOffsets.
func (c *Call) shareOffsetsTopic(version int16, rt kmsg.DescribeShareGroupOffsetsRequestGroupTopic, offs map[share.TP]share.PartitionOffsets) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	ot := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	ot.Topic = rt.Topic
	code := int16(0)
	var parts int32
	switch {
	case !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, rt.Topic):
		code = kerr.TopicAuthorizationFailed.Code
	default:
		ti, err := c.G.Store.Topic(c.Ctx, c.G.Cfg.Stream, rt.Topic)
		if errors.Is(err, bridge.ErrTopicNotFound) {
			break // Kafka: start offset -1, no error
		}
		if err != nil {
			code = errCode(err, opMeta)
			break
		}
		ot.TopicID = c.G.topicNames.idOf(ti)
		parts = ti.Partitions
	}
	for _, p := range rt.Partitions {
		op := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		op.Partition = p
		op.StartOffset, op.Lag = -1, -1
		op.ErrorCode = code
		if code == 0 {
			if o, ok := offs[share.TP{Topic: rt.Topic, Partition: p}]; ok && o.TopicID == ot.TopicID {
				op.StartOffset = o.Start
				op.LeaderEpoch = 0
				// The lag needs the high watermark: read only for the
				// partitions answered with a start offset.
				if version >= 1 && p >= 0 && p < parts {
					if st, err := c.G.Store.Partition(c.Ctx, c.G.Cfg.Stream, rt.Topic, p); err == nil {
						op.Lag = max(int64(st.Next)-o.Start-o.Done, 0)
					}
				}
			}
		}
		ot.Partitions = append(ot.Partitions, op)
	}
	return ot
}
