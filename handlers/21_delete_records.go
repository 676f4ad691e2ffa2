// DeleteRecords: v0-2
//
// Behavior:
//   - Moves each partition's log start offset to the offset given (-1:
//     the high watermark) and answers it as low_watermark. From then on
//     Fetch below it is OFFSET_OUT_OF_RANGE (consumers reset by
//     auto.offset.reset), ListOffsets earliest answers it, and Fetch's
//     LogStartOffset is it. A start at or below the current one changes
//     nothing and answers the current one, as Kafka does.
//   - Embedded store: the start is persisted per partition, and every
//     stored batch wholly below it is deleted in the same synced commit (a
//     batch straddling it stays, its lower offsets hidden). Iggy: the start
//     is kept in the gateway's state stream (bridge/iggy LogStartTopic) and
//     honoured by every gateway on that Iggy within a second; the messages
//     stay in Iggy until its own retention removes them (Iggy deletes only
//     whole sealed segments, and cannot tell where they end), so native
//     Iggy consumers still read them (docs/IGGY.md).
//   - An offset above the high watermark, or below -1, is
//     OFFSET_OUT_OF_RANGE; an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION; a partition named twice INVALID_REQUEST
//     (Kafka refuses the whole request; here each duplicate entry).
//   - timeout_ms is not used (one synced write, bounded by c.Ctx); a
//     transient store failure is REQUEST_TIMED_OUT.
//
// Version notes:
//   - v1 changes nothing on the wire; v2 is flexible. Kafka 4.1 serves
//     v0-2.

package handlers

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 21, MinVersion: 0, MaxVersion: 2, Handle: typed(deleteRecords)})
}

func deleteRecords(c *Call, req *kmsg.DeleteRecordsRequest, resp *kmsg.DeleteRecordsResponse) (kmsg.Response, error) {

	seen := make(map[PartitionKey]int)
	for i := range req.Topics {
		for _, p := range req.Topics[i].Partitions {
			seen[PartitionKey{req.Topics[i].Topic, p.Partition}]++
		}
	}
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		allowed := c.Authorized(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, rt.Topic)
		for j, rp := range rt.Partitions {
			sp := &st.Partitions[j]
			sp.Default()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			switch {
			case !allowed:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case seen[PartitionKey{rt.Topic, rp.Partition}] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case !validTopicName(rt.Topic):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !c.G.Cfg.Cluster.BeginWrite(rt.Topic, rp.Partition):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				sp.LowWatermark, sp.ErrorCode = c.deletePartitionRecords(rt.Topic, rp.Partition, rp.Offset)
				c.G.Cfg.Cluster.EndWrite()
			}
		}
	}
	return resp, nil
}

// deletePartitionRecords moves one partition's log start; offset -1 is the
// high watermark.
func (c *Call) deletePartitionRecords(topic string, partition int32, offset int64) (int64, int16) {
	g := c.G
	if offset < -1 {
		return -1, kerr.OffsetOutOfRange.Code
	}
	if offset == -1 {
		st, err := g.Store.Partition(c.Ctx, g.Cfg.Stream, topic, partition)
		if err != nil {
			return -1, errCode(err, opAdmin)
		}
		offset = int64(st.Next)
	}
	st, err := g.Store.DeleteRecords(c.Ctx, g.Cfg.Stream, topic, partition, uint64(offset))
	// Whatever the outcome (a failed call may have stored the start): a
	// Fetch must not answer from the log start it had before.
	g.fetchStates.forget(topic)
	switch {
	case errors.Is(err, bridge.ErrOffsetOutOfRange):
		return -1, kerr.OffsetOutOfRange.Code
	case err != nil:
		return -1, errCode(err, opAdmin)
	}
	if g.Watch != nil {
		// Parked fetches below the new start answer OFFSET_OUT_OF_RANGE
		// now rather than at their deadline.
		g.Watch.Signal(PartitionKey{Topic: topic, Partition: partition})
	}
	return int64(st.Earliest), 0
}
