// CreatePartitions: v0-3
//
// Behavior:
//   - Grows a topic to Count partitions: the new ones are added empty at
//     the end (Iggy's CreatePartitions on the Iggy backend; the embedded
//     store's GrowPartitions), the existing ones keep their data and
//     offsets. Which keys land where afterwards is the producer's business,
//     as with Kafka. Metadata answers the new count at once.
//   - Count at or below the current count, or above 1000 (Iggy's cap), is
//     INVALID_PARTITIONS with Kafka's wording; an unknown or impossible
//     topic name UNKNOWN_TOPIC_OR_PARTITION; a topic named twice in the
//     request INVALID_REQUEST for each entry (Kafka: "Duplicate topic in
//     request"), nothing done for it.
//   - Assignment: one broker, so an assignment must hold one entry per new
//     partition, each exactly [NodeID]; anything else is
//     INVALID_REPLICA_ASSIGNMENT. A null assignment is the usual case.
//   - validate_only runs every check and changes nothing.
//   - timeout_ms is not used (the change is synchronous, bounded by
//     c.Ctx); a transient store failure is REQUEST_TIMED_OUT.
//
// Version notes:
//   - v1 and v3 change nothing on the wire; v2 is flexible. Kafka 4.1
//     serves v0-3.

package handlers

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 37, MinVersion: 0, MaxVersion: 3, Handle: typed(createPartitions)})
}

func createPartitions(c *Call, req *kmsg.CreatePartitionsRequest, resp *kmsg.CreatePartitionsResponse) (kmsg.Response, error) {

	count := make(map[string]int, len(req.Topics))
	for i := range req.Topics {
		count[req.Topics[i].Topic]++
	}
	resp.Topics = make([]kmsg.CreatePartitionsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		code, msg := c.growTopic(rt, count[rt.Topic] > 1, req.ValidateOnly)
		st.ErrorCode = code
		if msg != "" {
			st.ErrorMessage = strp(msg)
		}
	}
	return resp, nil
}

// growTopic checks and applies one topic of a CreatePartitions request.
func (c *Call) growTopic(rt *kmsg.CreatePartitionsRequestTopic, dup, validateOnly bool) (int16, string) {
	g := c.G
	switch {
	case dup:
		return kerr.InvalidRequest.Code, "Duplicate topic in request."
	case !c.Authorized(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeTopic, rt.Topic):
		return kerr.TopicAuthorizationFailed.Code, ""
	case !validTopicName(rt.Topic):
		return kerr.UnknownTopicOrPartition.Code, ""
	}
	// Serialized with topic creation and other grows through this
	// gateway, so the count checked is the count changed.
	g.createMu.Lock()
	defer g.createMu.Unlock()
	ti, err := g.Store.Topic(c.Ctx, g.Cfg.Stream, rt.Topic)
	if err != nil {
		return errCode(err, opAdmin), ""
	}
	switch {
	case rt.Count < ti.Partitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", ti.Partitions, rt.Count)
	case rt.Count == ti.Partitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic already has %d partitions.", ti.Partitions)
	case rt.Count > maxPartitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("A topic may have at most %d partitions on this gateway.", maxPartitions)
	}
	if rt.Assignment != nil {
		if len(rt.Assignment) != int(rt.Count-ti.Partitions) {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", rt.Count-ti.Partitions, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != g.Cfg.NodeID {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("this cluster has one broker, %d: every new partition must be assigned [%d]", g.Cfg.NodeID, g.Cfg.NodeID)
			}
		}
	}
	if validateOnly {
		return 0, ""
	}
	got, err := g.Store.GrowPartitions(c.Ctx, g.Cfg.Stream, rt.Topic, rt.Count)
	g.forgetTopicHeaders(rt.Topic)
	switch {
	case errors.Is(err, bridge.ErrTopicNotFound):
		return kerr.UnknownTopicOrPartition.Code, ""
	case err != nil:
		return errCode(err, opAdmin), err.Error()
	case got.Partitions < rt.Count:
		return kerr.UnknownServerError.Code, fmt.Sprintf("topic has %d partitions after growing to %d", got.Partitions, rt.Count)
	}
	g.Log.Info("partitions added", "topic", rt.Topic, "from", ti.Partitions, "to", got.Partitions)
	return 0, ""
}
