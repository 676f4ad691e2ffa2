// DeleteTopics: v1-6
//
// Behavior:
//   - Deletes the Iggy topic and its messages, never the stream.
//   - Unknown name (or a name that cannot be a topic) is
//     UNKNOWN_TOPIC_OR_PARTITION; a topic named twice in one request is
//     INVALID_REQUEST for each entry, and nothing is deleted for it.
//   - v6 entries may name a topic by id instead: the stream is listed and
//     the derived ids compared (see topicID); an unknown id is
//     UNKNOWN_TOPIC_ID. The response carries both name and id.
//   - A deleted topic's aborted transactions and share-partition states
//     are dropped, so a topic made again under its name starts clean.
//   - Partitions of a deleted topic are signalled so parked Fetches answer
//     (with UNKNOWN_TOPIC_OR_PARTITION) instead of waiting out their time.
//   - timeout_ms is not used (deletion is synchronous, bounded by c.Ctx);
//     transient store failures are REQUEST_TIMED_OUT.
//
// Version notes:
//   - v0 is not served; v1 adds throttle; v4 is flexible; v5 adds error
//     messages (KIP-599); v6 deletes by topic id (KIP-516).

package handlers

import (
	"context"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 20, MinVersion: 1, MaxVersion: 6, Handle: typed(deleteTopics)})
}

func deleteTopics(c *Call, req *kmsg.DeleteTopicsRequest, resp *kmsg.DeleteTopicsResponse) (kmsg.Response, error) {
	g := c.G

	// Normalise both request shapes to (name, id) pairs.
	type entry struct {
		name *string
		id   [16]byte
	}
	var entries []entry
	if req.Version >= 6 {
		entries = make([]entry, len(req.Topics))
		for i := range req.Topics {
			entries[i] = entry{req.Topics[i].Topic, req.Topics[i].TopicID}
		}
	} else {
		entries = make([]entry, len(req.TopicNames))
		for i := range req.TopicNames {
			entries[i] = entry{name: &req.TopicNames[i]}
		}
	}

	resp.Topics = make([]kmsg.DeleteTopicsResponseTopic, len(entries))
	resolved := make([]bridge.TopicInfo, len(entries))
	codes := make([]int16, len(entries))
	count := make(map[string]int, len(entries))
	for i, e := range entries {
		st := &resp.Topics[i]
		st.Default()
		st.Topic, st.TopicID = e.name, e.id
		switch {
		case e.name != nil:
			if !c.Authorized(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, *e.name) {
				codes[i] = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if !validTopicName(*e.name) {
				codes[i] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			ti, err := g.Store.Topic(c.Ctx, g.Cfg.Stream, *e.name)
			if err != nil {
				codes[i] = errCode(err, opAdmin)
				continue
			}
			resolved[i] = ti
		case e.id == [16]byte{}:
			codes[i] = kerr.InvalidRequest.Code
			continue
		default:
			ti, ok, err := c.topicByID(e.id)
			switch {
			case err != nil:
				codes[i] = errCode(err, opAdmin)
				continue
			case !ok:
				codes[i] = kerr.UnknownTopicID.Code
				continue
			}
			if !c.Authorized(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeTopic, ti.Name) {
				// By id, Kafka does not confirm the name to a principal
				// that may not delete it.
				codes[i] = kerr.TopicAuthorizationFailed.Code
				continue
			}
			resolved[i] = ti
			st.Topic = strp(ti.Name)
		}
		st.TopicID = topicID(resolved[i])
		count[resolved[i].Name]++
	}

	for i := range entries {
		st := &resp.Topics[i]
		ti := resolved[i]
		if codes[i] == 0 && count[ti.Name] > 1 {
			codes[i] = kerr.InvalidRequest.Code
			if req.Version >= 5 {
				st.ErrorMessage = strp("topic named more than once in the request")
			}
		}
		if codes[i] == 0 {
			// Forgotten whatever the outcome: a delete that failed may
			// still have happened.
			g.tail.ForgetTopic(ti.Name)
			g.forgetPolicy(ti.Name)
			err := g.Store.DeleteTopic(c.Ctx, g.Cfg.Stream, ti.Name)
			g.forgetTopicHeaders(ti.Name) // after: a Produce meanwhile may have read the topic again
			if err != nil {
				codes[i] = errCode(err, opAdmin)
				if req.Version >= 5 {
					st.ErrorMessage = strp(err.Error())
				}
			} else {
				g.forgetTopicState(c.Ctx, ti.Name)
				if g.Watch != nil {
					for p := int32(0); p < ti.Partitions; p++ {
						g.Watch.Signal(PartitionKey{Topic: ti.Name, Partition: p})
					}
				}
			}
		}
		st.ErrorCode = codes[i]
	}
	return resp, nil
}

// forgetTopicState drops what the transaction and share coordinators keep
// of a deleted topic (aborted transactions, share-partition states), so a
// topic made again under its name starts clean. A worker.
func (g *Gateway) forgetTopicState(ctx context.Context, topic string) {
	if g.Txn != nil {
		g.Txn.ForgetTopic(ctx, topic)
	}
	if g.Share != nil {
		g.Share.ForgetTopic(ctx, topic)
	}
}
