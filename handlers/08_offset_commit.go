// OffsetCommit: v2-10
//
// Behavior:
//   - Committed offsets go to the Store (bridge.GroupOffsets), so they
//     survive a gateway restart; membership is not needed to read them.
//     On the Iggy backend they are Iggy consumer offsets of the consumer
//     "kafka.cg.<group>" plus records in the gateway's group log
//     (docs/CONSUMER_GROUPS.md). The request's valid partitions go to the
//     store in one call (one write where the store batches commits,
//     bridge.Capabilities.BatchedCommits).
//   - The membership check comes first, as on Kafka: generation -1 (a simple
//     consumer, an admin tool) commits only while the group has no live
//     members; otherwise the member must exist (UNKNOWN_MEMBER_ID), have the
//     current generation (ILLEGAL_GENERATION), not be fenced
//     (FENCED_INSTANCE_ID), and the group must not be waiting for the
//     leader's assignment (REBALANCE_IN_PROGRESS). Commits during a join
//     barrier are allowed (a member commits while revoking). A member of a
//     generation lost to a gateway restart gets UNKNOWN_MEMBER_ID (or
//     ILLEGAL_GENERATION without a member id) and rejoins.
//   - A group of the consumer protocol (KIP-848) checks the member epoch
//     in the generation field instead (Kafka's validateOffsetCommit): an
//     unknown member UNKNOWN_MEMBER_ID, an older epoch STALE_MEMBER_EPOCH,
//     a newer FENCED_MEMBER_EPOCH, below v9 UNSUPPORTED_VERSION; epoch -1
//     only while it has no members.
//   - Per partition: unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION;
//     metadata over 4096 bytes OFFSET_METADATA_TOO_LARGE; an offset the
//     backend cannot keep INVALID_COMMIT_OFFSET_SIZE; store unavailable
//     COORDINATOR_NOT_AVAILABLE, deadline REQUEST_TIMED_OUT.
//   - Retention time (v2-4) is ignored: offsets never expire.
//
// Version notes:
//   - v0-1 are not served (removed in Kafka 4, KIP-896); v6 leader epoch
//     (kept by the embedded store); v7 group.instance.id; v8 flexible; v10
//     names topics by id (KIP-848): each id is resolved to its topic's
//     name (topic_ids.go) and committed under it; an id no topic has is
//     UNKNOWN_TOPIC_ID for each of its partitions, and nothing of it is
//     kept.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 8, MinVersion: 2, MaxVersion: 10, Handle: typedReq(offsetCommit)})
}

func offsetCommit(c *Call, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	if req.Version < 10 {
		return offsetCommitNamed(c, req), nil
	}
	ids := make(map[string][16]byte, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		rt.Topic = c.nameByID(rt.TopicID)
		ids[rt.Topic] = rt.TopicID
	}
	resp := offsetCommitNamed(c, req)
	for i := range resp.Topics {
		st := &resp.Topics[i]
		st.TopicID = ids[st.Topic]
		if unnamed(st.Topic) {
			for j := range st.Partitions {
				st.Partitions[j].ErrorCode = kerr.UnknownTopicID.Code
			}
		}
	}
	return resp, nil
}

// offsetCommitNamed commits req, whose topics are named.
func offsetCommitNamed(c *Call, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	if !c.authzOn() {
		return c.G.coordinator().CommitOffsets(c.Ctx, req)
	}
	// READ on the group, then READ on each topic: the refused topics are
	// answered here and the rest go to the coordinator.
	groupOK := c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group)
	var refused []kmsg.OffsetCommitResponseTopic
	kept := req.Topics[:0:0]
	for _, rt := range req.Topics {
		code := int16(0)
		switch {
		case !groupOK:
			code = kerr.GroupAuthorizationFailed.Code
		case !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		}
		if code == 0 {
			kept = append(kept, rt)
			continue
		}
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		refused = append(refused, st)
	}
	if len(refused) == 0 {
		return c.G.coordinator().CommitOffsets(c.Ctx, req)
	}
	if len(kept) == 0 {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = refused
		return resp
	}
	sub := *req
	sub.Topics = kept
	resp := c.G.coordinator().CommitOffsets(c.Ctx, &sub)
	resp.Topics = append(resp.Topics, refused...)
	return resp
}
