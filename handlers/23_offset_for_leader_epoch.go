// OffsetForLeaderEpoch: v2-4
//
// Behavior:
//   - KIP-320: a consumer asks a partition's leader where the leader epoch
//     it last consumed in ends, after a leader change or before it uses a
//     committed offset that carries an epoch; an end below its position
//     means the log was truncated under it (the Java consumer then resets
//     or throws LogTruncationException, franz-go reports ErrDataLoss).
//   - The leader epochs are the ones Metadata advertises: 0 on one
//     gateway, the view's epoch in cluster mode (cluster.View.Epoch; it
//     grows on every membership change). Iggy keeps one log per partition
//     that no leader change truncates, and every batch Fetch returns
//     carries partition leader epoch 0, so the epoch history clients can
//     see is: epoch 0 from the log start offset, then the current epoch E
//     starting at the log end offset. It is answered as Kafka's leader
//     answers from its epoch cache (LeaderEpochFileCache.endOffsetFor):
//     E itself: (E, log end offset); 0 <= epoch < E: (0, log end offset),
//     where epoch 0 ends; below -1: (that epoch, log start offset), older
//     than any epoch; -1 or above E: UNDEFINED_EPOCH (-1) and
//     UNDEFINED_EPOCH_OFFSET (-1) with no error. So a consumer's position
//     validates unless it is past the log end. docs/SCOPE.md has the
//     reasoning.
//   - current_leader_epoch (-1: not checked) fences as on Kafka's leader:
//     below E FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH (the
//     client's metadata is newer than this gateway's view); clients
//     refresh metadata and retry both.
//   - Cluster mode: a partition another gateway leads (or any while this
//     gateway's session is not known live) is NOT_LEADER_OR_FOLLOWER,
//     before the epoch check: no gateway holds a follower replica, and
//     Kafka answers so for a partition it does not host.
//   - replica_id (v3+) is ignored, as Kafka 4 ignores it.
//   - Authorization: CLUSTER_ACTION on the cluster covers every topic,
//     else DESCRIBE on each; the partitions of the others are
//     TOPIC_AUTHORIZATION_FAILED, answered after the rest, as Kafka does.
//     A client logged in as an Iggy user also needs Iggy's permission to
//     describe the topic, either way (docs/SECURITY.md).
//   - An unknown topic or partition, or an impossible name, is
//     UNKNOWN_TOPIC_OR_PARTITION; store failures as ListOffsets
//     (REQUEST_TIMED_OUT at the deadline, NOT_LEADER_OR_FOLLOWER while
//     unavailable, KAFKA_STORAGE_ERROR).
//
// Version notes:
//   - v0-1 are not served (Kafka 4 removed them, KIP-896). v2 adds
//     current_leader_epoch (KIP-320); v3 replica_id (KIP-392), and from v3
//     DESCRIBE on the topic suffices, so consumers ask v3+ only; v4 is
//     flexible.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 23, MinVersion: 2, MaxVersion: 4, Handle: typed(offsetForLeaderEpoch)})
}

// undefinedEpoch is Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET: no
// epoch check (current_leader_epoch), or no such epoch in the history.
const undefinedEpoch = -1

func offsetForLeaderEpoch(c *Call, req *kmsg.OffsetForLeaderEpochRequest, resp *kmsg.OffsetForLeaderEpochResponse) (kmsg.Response, error) {
	// Kafka's brokers ask with CLUSTER_ACTION, consumers with DESCRIBE.
	// With authorization off every principal has both: anyTopic then
	// only spares the per-topic ACL lookups.
	anyTopic := c.Authorized(kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, ClusterResource)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, 0, len(req.Topics))
	var denied []kmsg.OffsetForLeaderEpochResponseTopic
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
		var allowed bool
		if anyTopic {
			allowed = c.iggyPermits(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, rt.Topic)
		} else {
			allowed = c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, rt.Topic)
		}
		ti, tcode := bridge.TopicInfo{}, kerr.TopicAuthorizationFailed.Code
		if allowed {
			ti, tcode = c.readTopic(rt.Topic, opOffsets)
		}
		for j := range rt.Partitions {
			st.Partitions[j] = c.epochEnd(rt.Topic, &rt.Partitions[j], partitionCode(ti, tcode, rt.Partitions[j].Partition))
		}
		if allowed {
			resp.Topics = append(resp.Topics, st)
		} else {
			denied = append(denied, st)
		}
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp, nil
}

// epochEnd answers one partition of topic, code being the topic's or the
// partition's error so far: the epoch and its end offset, or an error
// code with both -1.
func (c *Call) epochEnd(topic string, rp *kmsg.OffsetForLeaderEpochRequestTopicPartition, code int16) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition() // epoch and end offset -1
	sp.Partition = rp.Partition
	if code != 0 {
		sp.ErrorCode = code
		return sp
	}
	latest, leads := c.G.Cfg.Cluster.LeaderEpoch(topic, rp.Partition)
	switch {
	case !leads:
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		return sp
	case currentEpochCode(rp.CurrentLeaderEpoch, latest) != 0:
		sp.ErrorCode = currentEpochCode(rp.CurrentLeaderEpoch, latest)
		return sp
	case rp.LeaderEpoch == undefinedEpoch || rp.LeaderEpoch > latest:
		return sp // no error: no such epoch
	}
	g := c.G
	st, err := g.Store.Partition(c.Ctx, g.Cfg.Stream, topic, rp.Partition)
	switch {
	case err != nil:
		sp.ErrorCode = errCode(err, opOffsets)
	case rp.LeaderEpoch == latest:
		sp.LeaderEpoch, sp.EndOffset = latest, int64(st.Next)
	case rp.LeaderEpoch >= 0:
		sp.LeaderEpoch, sp.EndOffset = 0, int64(st.Next)
	default:
		sp.LeaderEpoch, sp.EndOffset = rp.LeaderEpoch, int64(st.Earliest)
	}
	return sp
}
