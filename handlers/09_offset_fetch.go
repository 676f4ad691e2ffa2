// OffsetFetch: v1-9
//
// Behavior:
//   - Reads committed offsets from the Store (bridge.GroupOffsets). A
//     partition with no committed offset, or of an unknown topic, answers
//     offset -1, empty metadata and no error, as Kafka.
//   - A null topic list (v2+) answers every committed offset of the group
//     (on Iggy: one read per partition of every topic in the stream).
//   - v8+ fetch several groups in one request, each with its own error.
//   - Group-level errors (v2+; v1 repeats them per partition): an invalid
//     group id INVALID_GROUP_ID; store unavailable COORDINATOR_NOT_AVAILABLE
//     (clients retry), deadline REQUEST_TIMED_OUT.
//   - require_stable (v7) needs nothing: there are no pending transactional
//     offsets. The v9 member id and epoch (KIP-848) are ignored.
//
// Version notes:
//   - v0 is not served (Kafka 4, KIP-896); v2 top-level error and null
//     topics; v5 leader epoch; v6 flexible; v7 require_stable; v8 groups
//     (KIP-709); v10 (topic ids) is not served.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 9, MinVersion: 1, MaxVersion: 9, Handle: offsetFetch})
}

// fetchedTopic is one topic's answer before it is written into the
// version's response shape.
type fetchedTopic struct {
	topic string
	parts []kmsg.OffsetFetchResponseGroupTopicPartition
}

func offsetFetch(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		resp.Groups = make([]kmsg.OffsetFetchResponseGroup, len(req.Groups))
		for i := range req.Groups {
			rg := &req.Groups[i]
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = make([]kmsg.OffsetFetchRequestTopic, len(rg.Topics))
				for j, t := range rg.Topics {
					topics[j] = kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions}
				}
			}
			out, code := fetchGroupOffsets(c, rg.Group, topics, rg.Topics == nil)
			og := &resp.Groups[i]
			og.Default()
			og.Group, og.ErrorCode = rg.Group, code
			if code != 0 {
				continue
			}
			og.Topics = make([]kmsg.OffsetFetchResponseGroupTopic, len(out))
			for j, t := range out {
				og.Topics[j] = kmsg.OffsetFetchResponseGroupTopic{Topic: t.topic, Partitions: t.parts}
			}
		}
		return resp, nil
	}
	all := req.Topics == nil && req.Version >= 2
	out, code := fetchGroupOffsets(c, req.Group, req.Topics, all)
	resp.Topics = make([]kmsg.OffsetFetchResponseTopic, len(out))
	for i, t := range out {
		ot := &resp.Topics[i]
		ot.Default()
		ot.Topic = t.topic
		ot.Partitions = make([]kmsg.OffsetFetchResponseTopicPartition, len(t.parts))
		for j, p := range t.parts {
			op := &ot.Partitions[j]
			op.Default()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
		}
	}
	if req.Version >= 2 {
		resp.ErrorCode = code
	} else if code != 0 {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	return resp, nil
}

// fetchGroupOffsets answers one group: the requested partitions, or every
// committed offset when all is set, and a group-level error code.
func fetchGroupOffsets(c *Call, group string, topics []kmsg.OffsetFetchRequestTopic, all bool) ([]fetchedTopic, int16) {
	g := c.G
	st := g.groupOffsets()
	code := int16(0)
	switch {
	case !validGroupID(group):
		code = kerr.InvalidGroupID.Code
	case st == nil:
		code = kerr.CoordinatorNotAvailable.Code
	}
	part := func(p int32, o bridge.CommittedOffset, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		r := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		r.Partition, r.Offset, r.LeaderEpoch, r.Metadata = p, -1, -1, strp("")
		if ok {
			r.Offset, r.LeaderEpoch, r.Metadata = o.Offset, o.LeaderEpoch, strp(o.Metadata)
		}
		return r
	}
	if all {
		if code != 0 {
			return nil, code
		}
		offs, err := st.GroupOffsets(c.Ctx, g.Cfg.Stream, group)
		if err != nil {
			return nil, offsetErrCode(err)
		}
		var out []fetchedTopic
		for _, o := range offs {
			if len(out) == 0 || out[len(out)-1].topic != o.Topic {
				out = append(out, fetchedTopic{topic: o.Topic})
			}
			t := &out[len(out)-1]
			t.parts = append(t.parts, part(o.Partition, o.CommittedOffset, true))
		}
		return out, 0
	}
	out := make([]fetchedTopic, len(topics))
	for i, t := range topics {
		out[i] = fetchedTopic{topic: t.Topic, parts: make([]kmsg.OffsetFetchResponseGroupTopicPartition, len(t.Partitions))}
		for j, p := range t.Partitions {
			var o bridge.CommittedOffset
			ok := false
			if code == 0 && validTopicName(t.Topic) {
				var err error
				o, ok, err = st.FetchOffset(c.Ctx, g.Cfg.Stream, group, t.Topic, p)
				if err != nil {
					code = offsetErrCode(err)
				}
			}
			out[i].parts[j] = part(p, o, ok)
		}
	}
	// One failed read fails the group (a partial answer would read as
	// "nothing committed" for the partitions that failed); the partitions
	// come back with -1 for v1, which has no group-level error.
	return out, code
}
