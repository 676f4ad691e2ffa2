// DescribeQuorum: v0-2
//
// Behavior:
//   - There is no KRaft quorum and no metadata log: topics live in Iggy
//     and, in cluster mode, membership in etcd. The answer describes what
//     is true in Kafka's terms, so kafka-metadata-quorum describe --status
//     and --replication work with --bootstrap-server (the Java admin
//     client sends DescribeQuorum to any broker, which Kafka forwards to
//     its active controller; here any gateway answers):
//   - The metadata partition __cluster_metadata-0 is led by the
//     controller Metadata names (this gateway; in cluster mode the lowest
//     live id), the one voter. Leader epoch, high watermark and the
//     leader's log end offset: 0 for one gateway (nothing is ever
//     appended); in cluster mode the revision of the membership the
//     answer is built from (the etcd revision, which only grows and moves
//     on every membership change; the epoch saturates at 2^31-1), so the
//     leader is never behind itself. The leader's last fetch and caught-up
//     timestamps are now, as Kafka reports its leader.
//   - Observers: none for one gateway; in cluster mode the other live
//     gateways, which follow the membership but vote on nothing. Their
//     log end offset is the revision once every gateway acknowledged the
//     membership (docs/CLUSTER.md, "settled"), else -1 (unknown); their
//     timestamps -1 (unknown).
//   - v2: directory ids are all zero (no metadata log directory; KIP-853's
//     "no directory id"), and Nodes lists the voter at its address on the
//     caller's listener (a controller without that listener has none).
//   - A request for anything but exactly __cluster_metadata partition 0
//     answers each partition asked UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
//     Raft client; with no live gateway (an empty view) the partition is
//     NOT_LEADER_OR_FOLLOWER, as a quorum without a leader.
//   - Needs DESCRIBE on the cluster; without it a top-level
//     CLUSTER_AUTHORIZATION_FAILED and no topics, as Kafka's error
//     response.
//
// Version notes:
//   - v0 is flexible (KIP-595); v1 adds the replicas' last fetch and
//     caught-up timestamps (KIP-836); v2 adds error messages, replica
//     directory ids and the voters' nodes with listeners (KIP-853). Kafka
//     4.1 serves v0-2.

package handlers

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 55, MinVersion: 0, MaxVersion: 2, Inline: true, Handle: typed(describeQuorum)})
}

// metadataTopicName is the KRaft metadata log's topic; partition 0 is the
// only one.
const metadataTopicName = "__cluster_metadata"

// msgNotLeaderOrFollower is Kafka's message of NOT_LEADER_OR_FOLLOWER.
const msgNotLeaderOrFollower = "For requests intended only for the leader, this error indicates that the broker is not the current leader. " +
	"For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition."

// describeQuorum touches no store: safe on the event loop.
func describeQuorum(c *Call, req *kmsg.DescribeQuorumRequest, resp *kmsg.DescribeQuorumResponse) (kmsg.Response, error) {
	resp.Topics = []kmsg.DescribeQuorumResponseTopic{}
	if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResource) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = strp(msgClusterAuthorizationFailed)
		return resp, nil
	}
	if len(req.Topics) != 1 || req.Topics[0].Topic != metadataTopicName ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		for _, rt := range req.Topics {
			st := kmsg.NewDescribeQuorumResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				st.Partitions = append(st.Partitions, quorumPartition(rp.Partition, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Description))
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}

	v := c.G.Cfg.Cluster.View()
	leader, epoch, end := c.G.Cfg.NodeID, int32(0), int64(0)
	if v != nil {
		leader, epoch, end = v.Controller(), v.Epoch(), v.Rev
	}
	st := kmsg.NewDescribeQuorumResponseTopic()
	st.Topic = metadataTopicName
	if leader < 0 {
		st.Partitions = append(st.Partitions, quorumPartition(0, kerr.NotLeaderForPartition.Code, msgNotLeaderOrFollower))
		resp.Topics = append(resp.Topics, st)
		return resp, nil
	}
	p := quorumPartition(0, 0, "")
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = leader, epoch, end
	now := time.Now().UnixMilli()
	p.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{quorumReplica(leader, end, now)}
	p.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	if v != nil {
		// Every gateway has applied a membership all acknowledged.
		applied := int64(-1)
		if c.G.Cfg.Cluster.Settled() {
			applied = end
		}
		for _, id := range v.IDs() {
			if id != leader {
				p.Observers = append(p.Observers, quorumReplica(id, applied, -1))
			}
		}
	}
	st.Partitions = append(st.Partitions, p)
	resp.Topics = append(resp.Topics, st)

	n := kmsg.NewDescribeQuorumResponseNode()
	n.NodeID = leader
	host, port := c.advertised()
	ok := true
	if v != nil {
		host, port, ok = c.endpointOf(v, leader)
	}
	if ok {
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = c.Listener, host, uint16(port)
		n.Listeners = append(n.Listeners, l)
	}
	resp.Nodes = append(resp.Nodes, n)
	return resp, nil
}

// quorumPartition is a partition of the answer with an error code and
// message ("": null), and no replicas; leader, epoch and high watermark
// are 0 until set, as in Kafka's error answers.
func quorumPartition(partition int32, code int16, msg string) kmsg.DescribeQuorumResponseTopicPartition {
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.Partition, p.ErrorCode = partition, code
	if msg != "" {
		p.ErrorMessage = strp(msg)
	}
	p.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	p.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	return p
}

// quorumReplica is one replica's state; at -1 a timestamp is unknown.
func quorumReplica(id int32, logEnd, at int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	r.ReplicaID, r.LogEndOffset = id, logEnd
	r.LastFetchTimestamp, r.LastCaughtUpTimestamp = at, at
	return r
}
