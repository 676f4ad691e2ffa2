// Metadata: v0-13
//
// Behavior:
//   - One broker: Cfg.NodeID at the advertised address of the listener the
//     client connected through (Call.Advertised), no rack.
//     It is the controller and leads every partition with leader epoch 0;
//     replicas and ISR are [NodeID], no offline replicas. Cluster id is
//     Cfg.ClusterID.
//   - Cluster mode (Cfg.Cluster, docs/CLUSTER.md): every live gateway of
//     the view, at its address on the caller's listener (a gateway without
//     that listener is left out); each partition led by its rendezvous
//     leader with the view's revision as leader epoch, replicas = ISR =
//     [leader]; controller = the lowest live id.
//   - All topics (a null list at v1+, an empty list at v0) lists the Iggy
//     topics of Cfg.Stream sorted by name; a failed listing closes the
//     connection (Metadata has no top-level error before v13, and clients
//     retry a dropped connection).
//   - Named topics are answered once each, in request order (duplicates
//     collapsed). A bad name (empty, over 249 bytes, outside [A-Za-z0-9._-],
//     "." or "..") is INVALID_TOPIC_EXCEPTION. An unknown topic is created
//     with Cfg.DefaultPartitions when Cfg.AutoCreateTopics is on and the
//     request allows it (always before v4, AllowAutoTopicCreation from v4),
//     and answered at once with its partitions and no error (Kafka answers
//     LEADER_NOT_AVAILABLE first because its creation is asynchronous; ours
//     is not). Otherwise UNKNOWN_TOPIC_OR_PARTITION. Auto-creation is
//     capped per request (Cfg.AutoCreatePerRequest) and paced gateway-wide
//     (Cfg.AutoCreatePerSec); a topic past either is LEADER_NOT_AVAILABLE,
//     which clients retry. A name that equals an existing topic's once '.'
//     and '_' are equated is not created: INVALID_TOPIC_EXCEPTION.
//   - No internal topics: is_internal is always false, and Kafka's
//     internal names (__consumer_offsets, __transaction_state,
//     __share_group_state) are never auto-created (committed offsets live
//     in the store, not in a topic), so asking for them is
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - v10+ topic ids are derived from stream, name and the store's topic id
//     (see topicID): stable across restarts, new for a recreated topic.
//     v12+ lookups by id list the stream and compare; an unknown id is
//     UNKNOWN_TOPIC_ID.
//   - A transient store failure on a named topic is LEADER_NOT_AVAILABLE
//     for that topic, which every client retries.
//   - Authorization (docs/SECURITY.md): DESCRIBE on a topic is needed to
//     see it; the all-topics answer leaves out the others, a named one is
//     TOPIC_AUTHORIZATION_FAILED (before its name is checked or looked
//     up). Auto-creation also needs CREATE on the cluster or the topic;
//     without it the topic stays UNKNOWN_TOPIC_OR_PARTITION.
//   - Authorized operations (KIP-430) are filled when asked: v8+ per
//     topic, v8-10 for the cluster (all supported operations with
//     authorization off, as Kafka without an authorizer); otherwise the
//     default sentinel INT32_MIN.
//   - Unlike the Rust gateway: auto-creation is supported, the controller
//     and node id come from config, v10-13 are served, and the all-topics
//     answer is never truncated (the loop's response cap applies).
//
// Version notes:
//   - v1 adds rack, controller, is_internal and null = all topics; v2 cluster
//     id; v3 throttle; v4 AllowAutoTopicCreation (KIP-361 client side);
//     v5 offline replicas; v7 leader epoch (KIP-320); v8 authorized
//     operations (KIP-430); v9 flexible; v10 topic ids (KIP-516); v11 drops
//     cluster authorized operations; v12 allows lookup by topic id;
//     v13 (KIP-1102) adds a top-level error code, always 0 here.

package handlers

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 3, MinVersion: 0, MaxVersion: 13, Handle: typed(metadata)})
}

func metadata(c *Call, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) (kmsg.Response, error) {
	cfg := &c.G.Cfg

	c.metaView = cfg.Cluster.View() // nil: one node
	resp.ControllerID = c.brokers(c.metaView, func(id int32, host string, port int32) {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = id, host, port
		resp.Brokers = append(resp.Brokers, b)
	})
	resp.ClusterID = strp(cfg.ClusterID)

	all := req.Topics == nil || req.Version == 0 && len(req.Topics) == 0
	if all {
		ts, err := c.sortedTopics()
		if err != nil {
			return nil, fmt.Errorf("metadata: list topics: %w", err)
		}
		resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(ts))
		for _, ti := range ts {
			// Topics the principal may not describe are left out.
			if c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, ti.Name) {
				resp.Topics = append(resp.Topics, c.metadataTopic(ti.Name, ti))
			}
		}
		c.metadataOps(req, resp)
		return resp, nil
	}

	create := req.Version < 4 || req.AllowAutoTopicCreation
	var seen map[string]struct{}
	if len(req.Topics) > 1 {
		seen = make(map[string]struct{}, len(req.Topics))
	}
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		if rt.Topic == nil {
			// By id (v10+; Kafka serves it from v12, kmsg reads it from v10).
			resp.Topics = append(resp.Topics, c.metadataByID(rt.TopicID))
			continue
		}
		name := *rt.Topic
		if seen != nil {
			if _, dup := seen[name]; dup {
				continue
			}
			seen[name] = struct{}{}
		}
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name) {
			resp.Topics = append(resp.Topics, metadataErr(name, [16]byte{}, kerr.TopicAuthorizationFailed.Code))
			continue
		}
		if !validTopicName(name) {
			resp.Topics = append(resp.Topics, metadataErr(name, [16]byte{}, kerr.InvalidTopicException.Code))
			continue
		}
		ti, err := c.topic(name, create)
		if err != nil {
			resp.Topics = append(resp.Topics, metadataErr(name, [16]byte{}, errCode(err, opMeta)))
			continue
		}
		resp.Topics = append(resp.Topics, c.metadataTopic(name, ti))
	}
	c.metadataOps(req, resp)
	return resp, nil
}

// metadataOps fills the KIP-430 authorized operations the request asked
// for (v8+ topics, v8-10 the cluster); otherwise the Kafka default
// sentinel (INT32_MIN) stays.
func (c *Call) metadataOps(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.Version < 8 {
		return
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			t := &resp.Topics[i]
			if t.ErrorCode == 0 && t.Topic != nil {
				t.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeTopic, *t.Topic, topicOps)
			}
		}
	}
	if req.IncludeClusterAuthorizedOperations && req.Version <= 10 {
		resp.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeCluster, ClusterResource, clusterOps)
	}
}

// metadataByID answers a topic asked by id.
func (c *Call) metadataByID(id [16]byte) kmsg.MetadataResponseTopic {
	if id == ([16]byte{}) {
		return metadataErr("", id, kerr.InvalidRequest.Code)
	}
	ti, ok, err := c.topicByID(id)
	switch {
	case err != nil:
		return metadataErr("", id, errCode(err, opMeta))
	case !ok:
		return metadataErr("", id, kerr.UnknownTopicID.Code)
	case !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, ti.Name):
		return metadataErr("", id, kerr.TopicAuthorizationFailed.Code)
	}
	return c.metadataTopic(ti.Name, ti)
}

func metadataErr(name string, id [16]byte, code int16) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.ErrorCode = code
	if name != "" {
		t.Topic = strp(name)
	}
	t.TopicID = id
	t.Partitions = []kmsg.MetadataResponseTopicPartition{}
	return t
}

// metadataTopic describes ti: every partition led as c.leadership says.
func (c *Call) metadataTopic(name string, ti bridge.TopicInfo) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = strp(name)
	t.TopicID = c.G.topicNames.idOf(ti)
	t.Partitions = make([]kmsg.MetadataResponseTopicPartition, ti.Partitions)
	l := c.leadership()
	for p := range t.Partitions {
		mp := &t.Partitions[p]
		mp.Default()
		mp.Partition = int32(p)
		mp.Leader, mp.Replicas = l.of(name, int32(p))
		mp.LeaderEpoch = l.epoch
		mp.ISR = mp.Replicas
		mp.OfflineReplicas = []int32{}
	}
	return t
}
