// ListPartitionReassignments: v0-0
//
// Behavior:
//   - No reassignment is ever in progress (replicas cannot move here;
//     see AlterPartitionReassignments), so the answer is always an empty
//     topic list with error 0 and a null message: what Kafka's controller
//     answers for partitions without a reassignment, which it leaves out,
//     and for unknown topics, which it ignores. So no topic is looked up.
//   - Needs DESCRIBE on the cluster; without it
//     CLUSTER_AUTHORIZATION_FAILED with each named partition echoed (no
//     replicas), as Kafka's error response.
//
// Version notes:
//   - Only v0 exists (KIP-455); it is flexible.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 46, MinVersion: 0, MaxVersion: 0, Inline: true, Handle: typed(listPartitionReassignments)})
}

// listPartitionReassignments touches no store: safe on the event loop.
func listPartitionReassignments(c *Call, req *kmsg.ListPartitionReassignmentsRequest, resp *kmsg.ListPartitionReassignmentsResponse) (kmsg.Response, error) {
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	if c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResource) {
		return resp, nil
	}
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	resp.ErrorMessage = strp(msgClusterAuthorizationFailed)
	for _, rt := range req.Topics {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = p
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
