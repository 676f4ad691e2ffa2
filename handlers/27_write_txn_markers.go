// WriteTxnMarkers: v1-2
//
// Behavior:
//   - Served only with --transactions enabled (Spec.Gated).
//   - Sent by `kafka-transactions abort` (Admin.abortTransaction) to the
//     leader of a partition with a hanging transaction, and by Kafka's
//     coordinators to partition leaders; needs CLUSTER_ACTION on the
//     cluster (CLUSTER_AUTHORIZATION_FAILED on every partition).
//   - Each marker is written to each of its partitions, as the coordinator
//     writes its own (durable, the aborted list and the last stable offset
//     follow); per partition UNKNOWN_TOPIC_OR_PARTITION for a topic or
//     partition that does not exist, the store's code when the write fails.
//     A marker whose coordinator epoch is older than that of the
//     producer's last marker on the partition is refused per partition with
//     TRANSACTION_COORDINATOR_FENCED, as Kafka's partition leader refuses
//     a zombie coordinator's; the marker is written with the request's
//     coordinator epoch.
//
// Version notes:
//   - v0 is not served (Kafka 4 serves v1+); v1 is flexible; v2 adds the
//     marker's transaction version (KIP-890), which changes nothing here.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 27, MinVersion: 1, MaxVersion: 2, Gated: txnServed, Handle: typed(writeTxnMarkers)})
}

func writeTxnMarkers(c *Call, req *kmsg.WriteTxnMarkersRequest, resp *kmsg.WriteTxnMarkersResponse) (kmsg.Response, error) {
	allowed := c.Authorized(kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, ClusterResource)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				switch {
				case !allowed:
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				case !validTopicName(t.Topic) || p < 0:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					rp.ErrorCode = c.writeOneMarker(txn.Partition{Topic: t.Topic, Partition: p}, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

// writeOneMarker writes one marker after checking its partition exists.
func (c *Call) writeOneMarker(p txn.Partition, pid int64, epoch int16, coordEpoch int32, commit bool) int16 {
	ti, err := c.topic(p.Topic, false)
	if err == nil && p.Partition >= ti.Partitions {
		return kerr.UnknownTopicOrPartition.Code
	}
	if err == nil {
		err = c.G.Txn.WriteMarker(c.Ctx, p, pid, epoch, coordEpoch, commit)
	}
	return errCode(err, opWrite)
}
