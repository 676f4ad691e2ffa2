// OffsetFetch: v1-10
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
//   - require_stable (v7, KIP-447): a partition whose group has offsets
//     held by an open transaction (TxnOffsetCommit, --transactions
//     enabled) answers UNSTABLE_OFFSET_COMMIT with offset -1 until the
//     transaction ends; the client retries. Without require_stable the
//     offset committed before is answered. The v9 member id and epoch (KIP-848) are
//     checked for a consumer-protocol group: unknown member
//     UNKNOWN_MEMBER_ID, older epoch STALE_MEMBER_EPOCH, newer
//     FENCED_MEMBER_EPOCH; no member id with epoch -1 always passes.
//
// Version notes:
//   - v0 is not served (Kafka 4, KIP-896); v2 top-level error and null
//     topics; v5 leader epoch; v6 flexible; v7 require_stable; v8 groups
//     (KIP-709); v10 names topics by id (KIP-848): an id asked for is
//     resolved to its topic's name (topic_ids.go), one that names no
//     topic is UNKNOWN_TOPIC_ID for each of its partitions; all topics
//     (null) answer the committed topics that exist, each with its id (a
//     deleted topic's offsets have no id to go by and are left out).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 9, MinVersion: 1, MaxVersion: 10, Handle: typedReq(offsetFetch)})
}

func offsetFetch(c *Call, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	if req.Version < 10 {
		return c.markUnstable(req, offsetFetchNamed(c, req)), nil
	}
	for i := range req.Groups {
		for j := range req.Groups[i].Topics {
			rt := &req.Groups[i].Topics[j]
			rt.Topic = c.nameByID(rt.TopicID)
		}
	}
	resp := c.markUnstable(req, offsetFetchNamed(c, req))
	for i := range resp.Groups {
		resp.Groups[i].Topics = c.withTopicIDs(resp.Groups[i].Topics)
	}
	return resp, nil
}

// markUnstable answers UNSTABLE_OFFSET_COMMIT, with offset -1, for each
// partition of resp whose group has offsets held by an open transaction
// (TxnOffsetCommit), when the request requires stable offsets (v7+,
// KIP-447), as Kafka does; the client retries until the transaction ends.
func (c *Call) markUnstable(req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) *kmsg.OffsetFetchResponse {
	tx := c.G.Txn
	if tx == nil || !req.RequireStable {
		return resp
	}
	// unstable marks one partition's answer; v1-7 and v8+ answer in
	// different types with the same fields.
	pendingOf := map[string]func(txn.Partition) bool{}
	unstable := func(group, topic string, partition int32, code *int16, offset *int64) {
		pending := pendingOf[group]
		if pending == nil {
			pending = tx.PendingOffsets(c.Ctx, group)
			pendingOf[group] = pending
		}
		if *code == 0 && pending(txn.Partition{Topic: topic, Partition: partition}) {
			*code, *offset = kerr.UnstableOffsetCommit.Code, -1
		}
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			p := &t.Partitions[j]
			unstable(req.Group, t.Topic, p.Partition, &p.ErrorCode, &p.Offset)
		}
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		for j := range g.Topics {
			t := &g.Topics[j]
			for k := range t.Partitions {
				p := &t.Partitions[k]
				unstable(g.Group, t.Topic, p.Partition, &p.ErrorCode, &p.Offset)
			}
		}
	}
	return resp
}

// withTopicIDs gives each topic of a v10 answer its id and drops the
// committed topics that no longer exist; a placeholder of nameByID keeps
// the id it was made of, its partitions UNKNOWN_TOPIC_ID.
func (c *Call) withTopicIDs(topics []kmsg.OffsetFetchResponseGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
	out := topics[:0]
	for _, t := range topics {
		if unnamed(t.Topic) {
			copy(t.TopicID[:], t.Topic[1:])
			for j := range t.Partitions {
				p := &t.Partitions[j]
				p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.UnknownTopicID.Code
			}
			out = append(out, t)
			continue
		}
		ti, err := c.topic(t.Topic, false)
		if err != nil {
			continue
		}
		t.TopicID = c.G.topicNames.idOf(ti)
		out = append(out, t)
	}
	return out
}

// offsetFetchNamed answers req, whose topics are named.
func offsetFetchNamed(c *Call, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	if !c.authzOn() {
		return c.G.coordinator().FetchOffsets(c.Ctx, req)
	}
	// DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; DESCRIBE on
	// each topic, else its partitions answer TOPIC_AUTHORIZATION_FAILED
	// (named topics) or it is left out (all topics), as Kafka does.
	if req.Version < 8 {
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Topics = []kmsg.OffsetFetchResponseTopic{}
			for _, rt := range req.Topics {
				st := kmsg.NewOffsetFetchResponseTopic()
				st.Topic = rt.Topic
				for _, p := range rt.Partitions {
					sp := kmsg.NewOffsetFetchResponseTopicPartition()
					sp.Partition, sp.Offset, sp.ErrorCode = p, -1, kerr.GroupAuthorizationFailed.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp
		}
		resp := c.G.coordinator().FetchOffsets(c.Ctx, req)
		resp.Topics = describableTopics(c, resp.Topics, req.Topics == nil,
			func(t *kmsg.OffsetFetchResponseTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchResponseTopic) {
				for j := range t.Partitions {
					t.Partitions[j].Offset, t.Partitions[j].Metadata = -1, nil
					t.Partitions[j].ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
			})
		return resp
	}
	refusedGroup := map[string]bool{}
	for _, g := range req.Groups {
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
			refusedGroup[g.Group] = true
		}
	}
	resp := c.G.coordinator().FetchOffsets(c.Ctx, req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if refusedGroup[g.Group] {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			g.Topics = []kmsg.OffsetFetchResponseGroupTopic{}
			continue
		}
		all := true
		for _, rg := range req.Groups {
			if rg.Group == g.Group {
				all = rg.Topics == nil
				break
			}
		}
		g.Topics = describableTopics(c, g.Topics, all,
			func(t *kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchResponseGroupTopic) {
				for j := range t.Partitions {
					t.Partitions[j].Offset, t.Partitions[j].Metadata = -1, nil
					t.Partitions[j].ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
			})
	}
	return resp
}

// describableTopics keeps the topics of an OffsetFetch answer that the
// principal may DESCRIBE; of the others, it drops them when all topics were
// asked for and otherwise keeps them with refuse applied (their partitions
// TOPIC_AUTHORIZATION_FAILED). The answer's topic types differ by version,
// their fields do not: name reads one's name. A worker.
func describableTopics[T any](c *Call, topics []T, all bool, name func(*T) string, refuse func(*T)) []T {
	out := topics[:0]
	for i := range topics {
		t := &topics[i]
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name(t)) {
			if all {
				continue
			}
			refuse(t)
		}
		out = append(out, *t)
	}
	return out
}
