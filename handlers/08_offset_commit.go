// OffsetCommit: v2-9
//
// Behavior:
//   - Committed offsets go to the Store (bridge.GroupOffsets), so they
//     survive a gateway restart; membership is not needed to read them.
//     On the Iggy backend they are Iggy consumer offsets of the consumer
//     "kafka.cg.<group>" plus records in the gateway's group log
//     (docs/CONSUMER_GROUPS.md). A store with bridge.OffsetBatchCommitter
//     gets the request's valid partitions in one call.
//   - The membership check comes first, as on Kafka: generation -1 (a simple
//     consumer, an admin tool) commits only while the group has no live
//     members; otherwise the member must exist (UNKNOWN_MEMBER_ID), have the
//     current generation (ILLEGAL_GENERATION), not be fenced
//     (FENCED_INSTANCE_ID), and the group must not be waiting for the
//     leader's assignment (REBALANCE_IN_PROGRESS). Commits during a join
//     barrier are allowed (a member commits while revoking). A member of a
//     generation lost to a gateway restart gets UNKNOWN_MEMBER_ID (or
//     ILLEGAL_GENERATION without a member id) and rejoins.
//   - Per partition: unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION;
//     metadata over 4096 bytes OFFSET_METADATA_TOO_LARGE; an offset the
//     backend cannot keep INVALID_COMMIT_OFFSET_SIZE; store unavailable
//     COORDINATOR_NOT_AVAILABLE, deadline REQUEST_TIMED_OUT.
//   - Retention time (v2-4) is ignored: offsets never expire.
//
// Version notes:
//   - v0-1 are not served (removed in Kafka 4, KIP-896); v6 leader epoch
//     (kept by the embedded store); v7 group.instance.id; v8 flexible; v10
//     (topic ids, KIP-848) is not served.

package handlers

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 8, MinVersion: 2, MaxVersion: 9, Handle: offsetCommit})
}

func offsetCommit(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	g := c.G
	var code int16
	st := g.groupOffsets()
	switch {
	case !validGroupID(req.Group):
		code = kerr.InvalidGroupID.Code
	case st == nil:
		code = kerr.CoordinatorNotAvailable.Code
	default:
		instance := ""
		if req.InstanceID != nil {
			instance = *req.InstanceID
		}
		code = g.coordinator().CommitCheck(req.Group, req.MemberID, instance, req.Generation)
	}
	now := time.Now().UnixMilli()
	committed := false
	// A store that commits a request's partitions together gets them in
	// one call after the loop; slots are their answers.
	batch, _ := st.(bridge.OffsetBatchCommitter)
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
			case !validTopicName(rt.Topic) || rp.Partition < 0:
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
				if batch != nil {
					pending = append(pending, bridge.GroupOffset{Topic: rt.Topic, Partition: rp.Partition, CommittedOffset: o})
					slots = append(slots, op)
					continue
				}
				op.ErrorCode = offsetErrCode(st.CommitOffset(c.Ctx, g.Cfg.Stream, req.Group, rt.Topic, rp.Partition, o))
				committed = committed || op.ErrorCode == 0
			}
		}
	}
	if len(pending) > 0 {
		for k, err := range batch.CommitOffsets(c.Ctx, g.Cfg.Stream, req.Group, pending) {
			slots[k].ErrorCode = offsetErrCode(err)
			committed = committed || err == nil
		}
	}
	if committed {
		g.coordinator().NoteCommitted(req.Group)
	}
	return resp, nil
}
