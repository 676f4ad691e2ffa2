// AlterPartitionReassignments: v0-1
//
// Behavior:
//   - Replicas cannot move: Iggy holds every partition's data and a
//     gateway only leads a partition, so a partition's replicas are
//     [its leader] as Metadata gives them (this gateway; in cluster mode
//     the rendezvous leader over the live gateways, docs/CLUSTER.md), and
//     no reassignment is ever in progress.
//   - Per partition, checked in Kafka's controller's order: an unknown
//     topic is UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named
//     T.", an unknown partition "Unable to find partition T:P."; null
//     replicas (cancel) NO_REASSIGNMENT_IN_PROGRESS "No partition
//     reassignment is in progress."; an empty list, a broker Metadata does
//     not list (another id than this gateway's; in cluster mode a gateway
//     that is not live) or a broker named twice INVALID_REPLICA_ASSIGNMENT
//     with Kafka's message; then, with AllowReplicationFactorChange false,
//     a list of other than one replica INVALID_REPLICATION_FACTOR "The
//     replication factor is changed from 1 to N". A list equal to the
//     partition's replicas is a no-op success, as Kafka answers a target
//     equal to the current assignment. Any other list is
//     INVALID_REPLICA_ASSIGNMENT. Every refusal of a replica list also
//     says why replicas cannot move here (after Kafka's text, if any).
//   - Any gateway answers for every partition, as any Kafka broker
//     forwards the request to the controller.
//   - Needs ALTER on the cluster; without it CLUSTER_AUTHORIZATION_FAILED
//     at the top level and on every partition, as Kafka's error response.
//   - timeout_ms is not used: nothing is waited for.
//
// Version notes:
//   - v0 is flexible (KIP-455). v1 (KIP-860) adds
//     AllowReplicationFactorChange (default true; v0 always allows), echoed
//     in the response as Kafka does. Kafka 4.1 serves v0-1.

package handlers

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/cluster"
)

func init() {
	register(Spec{Key: 45, MinVersion: 0, MaxVersion: 1, Handle: typed(alterPartitionReassignments)})
}

func alterPartitionReassignments(c *Call, req *kmsg.AlterPartitionAssignmentsRequest, resp *kmsg.AlterPartitionAssignmentsResponse) (kmsg.Response, error) {
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	authorized := c.Authorized(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResource)
	if !authorized {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = strp(msgClusterAuthorizationFailed)
	}
	v := c.G.Cfg.Cluster.View()
	seen := make(map[string]topicFound, len(req.Topics))
	resp.Topics = make([]kmsg.AlterPartitionAssignmentsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.AlterPartitionAssignmentsResponseTopicPartition, len(rt.Partitions))
		var f topicFound
		if authorized && len(rt.Partitions) > 0 {
			f = c.topicOnce(seen, rt.Topic)
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			var msg string
			switch {
			case !authorized:
				sp.ErrorCode, msg = kerr.ClusterAuthorizationFailed.Code, msgClusterAuthorizationFailed
			case f.code == kerr.UnknownTopicOrPartition.Code:
				sp.ErrorCode, msg = f.code, fmt.Sprintf("Unable to find a topic named %s.", rt.Topic)
			case f.code != 0:
				sp.ErrorCode = f.code
			case rp.Partition < 0 || rp.Partition >= f.partitions:
				sp.ErrorCode, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find partition %s:%d.", rt.Topic, rp.Partition)
			default:
				sp.ErrorCode, msg = c.reassign(v, rt.Topic, rp, allowRF)
			}
			if msg != "" {
				sp.ErrorMessage = strp(msg)
			}
		}
	}
	return resp, nil
}

// reassign answers a reassignment of one existing partition: success only
// for the replicas it has, [leader].
func (c *Call) reassign(v *cluster.View, topic string, rp *kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRF bool) (int16, string) {
	leader := c.partitionLeader(v, topic, rp.Partition)
	target := rp.Replicas
	if target == nil {
		return kerr.NoReassignmentInProgress.Code, "No partition reassignment is in progress."
	}
	if len(target) == 1 && target[0] == leader {
		return 0, ""
	}
	code, why := kerr.InvalidReplicaAssignment.Code, ""
	sorted := slices.Sorted(slices.Values(target))
	for i, id := range sorted {
		if !c.isBroker(v, id) {
			why = fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered. ", id)
			break
		}
		if i > 0 && sorted[i-1] == id {
			why = fmt.Sprintf("The manual partition assignment includes the broker %d more than once. ", id)
			break
		}
	}
	switch {
	case len(target) == 0:
		why = "The manual partition assignment includes an empty replica list. "
	case why == "" && !allowRF && len(target) != 1:
		code, why = kerr.InvalidReplicationFactor.Code, fmt.Sprintf("The replication factor is changed from 1 to %d. ", len(target))
	}
	where := "the only broker"
	if v != nil {
		where = "placed by rendezvous hashing over the live gateways; a partition moves only when gateways join or leave"
	}
	return code, fmt.Sprintf("%sReplicas cannot move here: Iggy holds the data and a gateway only leads a partition, so %s-%d has one replica, its leader %d (%s).",
		why, topic, rp.Partition, leader, where)
}
