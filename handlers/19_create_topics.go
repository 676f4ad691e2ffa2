// CreateTopics: v2-7
//
// Behavior:
//   - Creates the Iggy topic (and Cfg.Stream if missing) with the asked
//     partition count. validate_only runs every check, existence included,
//     and creates nothing.
//   - Checks per topic, first failure wins: a name given twice in one
//     request is INVALID_REQUEST for every entry of it; a bad name
//     INVALID_TOPIC_EXCEPTION; one of Kafka's internal topic names
//     (__consumer_offsets, __transaction_state, __share_group_state)
//     INVALID_REQUEST, as the gateway has no internal topics; manual assignments together with a partition
//     count or replication factor other than -1 INVALID_REQUEST; partitions
//     -1 means Cfg.DefaultPartitions, while 0, below -1 or above 1000 is
//     INVALID_PARTITIONS; replication factor must be -1 or 1 (one logical
//     broker over Iggy, which replicates on its own) else
//     INVALID_REPLICATION_FACTOR; a manual assignment must name partitions
//     0..n-1 once each, each with replicas exactly [NodeID], else
//     INVALID_REPLICA_ASSIGNMENT; an existing topic is TOPIC_ALREADY_EXISTS
//     whatever configs the request carries (Kafka 4.1.1 answers so;
//     "create if missing" callers such as Kafka Connect rely on it); a name
//     equal to an existing topic's once '.' and '_' are equated (coll.a,
//     coll_a) is INVALID_TOPIC_EXCEPTION "collides with existing topic", as
//     Kafka answers (its metric names would clash); then the configs.
//   - Replication factor -1 (what Kafka Streams and Connect send by
//     default) and no replica assignment are answered as a one-broker
//     cluster: replication factor 1.
//   - Configs (configs.go): every topic config Kafka 4 knows is accepted
//     and kept with the topic, visible in DescribeConfigs; a null value
//     means the default. cleanup.policy may be delete, compact or both
//     (a compacted topic is never compacted nor deleted from, so the
//     latest record of every key stays); retention.ms / retention.bytes
//     are enforced (on Iggy as the topic's message_expiry /
//     max_topic_size, which the server enforces on sealed segments, and
//     segment.bytes as its segment_size; the embedded store's retention
//     sweeper deletes whole batches, and segment.bytes sizes its segment
//     files); message.timestamp.type CreateTime or LogAppendTime (which
//     Produce stamps, topic_policy.go); a compacted topic refuses records
//     without a key at Produce; min.insync.replicas and
//     remote.storage.enable only with the gateway's own value (1, false);
//     other Kafka log-file
//     tuning (segment.ms, ...) is kept with no effect. Unknown names and
//     bad values are
//     INVALID_CONFIG with a message naming the config, and so is a value
//     the backend cannot keep.
//   - v5+ response: partition count, replication factor 1 and the topic's
//     configs as DescribeConfigs lists them. v7: the topic id (see
//     topicID), zero for validate_only.
//   - timeout_ms is not used: creation is synchronous and bounded by c.Ctx.
//     Transient store failures are REQUEST_TIMED_OUT.
//
// Version notes:
//   - v0/v1 are not served (v1 adds validate_only, v2 throttle). v4 allows
//     -1 partitions and replication factor (KIP-464); v5 is flexible and
//     returns the topic's settings (KIP-525); v6 may answer quota errors
//     (KIP-599), never sent; v7 returns topic ids (KIP-516).

package handlers

import (
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 19, MinVersion: 2, MaxVersion: 7, Handle: typed(createTopics)})
}

// maxPartitions caps partitions per created topic, as the Rust gateway does.
const maxPartitions = 1000

func createTopics(c *Call, req *kmsg.CreateTopicsRequest, resp *kmsg.CreateTopicsResponse) (kmsg.Response, error) {

	count := make(map[string]int, len(req.Topics))
	for i := range req.Topics {
		count[req.Topics[i].Topic]++
	}
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}

		var n int32
		var cfg bridge.TopicConfigs
		var code int16
		var msg string
		if count[rt.Topic] <= 1 && !c.mayCreateTopic(rt.Topic) {
			code, msg = kerr.TopicAuthorizationFailed.Code, "not authorized to create this topic (needs CREATE on the cluster or the topic)"
		} else {
			n, cfg, code, msg = c.checkCreate(rt, count[rt.Topic] > 1)
		}
		if code == 0 && !req.ValidateOnly {
			ti, err := c.createTopicWithConfigs(rt.Topic, n, cfg)
			if err != nil {
				code, msg = errCode(err, opAdmin), err.Error()
			} else {
				st.TopicID = c.G.topicNames.idOf(ti)
				n = ti.Partitions
			}
		}
		if code != 0 {
			st.ErrorCode = code
			if msg != "" {
				st.ErrorMessage = strp(msg)
			}
			continue
		}
		st.NumPartitions = n
		st.ReplicationFactor = 1
		for _, d := range describeTopic(cfg, c.cachedBrokerView(), nil, false, false) {
			rc := kmsg.NewCreateTopicsResponseTopicConfig()
			rc.Name, rc.Value, rc.ReadOnly, rc.Source = d.Name, d.Value, d.ReadOnly, int8(d.Source)
			st.Configs = append(st.Configs, rc)
		}
	}
	return resp, nil
}

// checkCreate validates one topic and returns its partition count and
// configs (the non-null ones), or an error code and message. It asks the
// store whether the topic exists.
func (c *Call) checkCreate(rt *kmsg.CreateTopicsRequestTopic, dup bool) (int32, bridge.TopicConfigs, int16, string) {
	n, code, msg := c.checkCreateTopic(rt, dup)
	if code != 0 {
		return 0, nil, code, msg
	}
	var cfg bridge.TopicConfigs
	for i := range rt.Configs {
		rc := &rt.Configs[i]
		if _, dup := cfg[rc.Name]; dup {
			return 0, nil, kerr.InvalidRequest.Code, "config " + rc.Name + " given twice"
		}
		if rc.Value == nil { // the default
			if topicConfigs[rc.Name] == nil {
				return 0, nil, kerr.InvalidConfig.Code, "Unknown topic config name: " + rc.Name
			}
			continue
		}
		if msg := checkTopicConfig(rc.Name, *rc.Value); msg != "" {
			return 0, nil, kerr.InvalidConfig.Code, msg
		}
		if cfg == nil {
			cfg = bridge.TopicConfigs{}
		}
		cfg[rc.Name] = *rc.Value
		if rc.Name == "cleanup.policy" {
			cfg[rc.Name], _ = normalizePolicy(*rc.Value)
		}
	}
	return n, cfg, 0, ""
}

// checkCreateTopic is checkCreate without the configs, which are checked
// after the topic's existence: Kafka answers TOPIC_ALREADY_EXISTS for an
// existing topic whatever configs the request carries, and "create if
// missing" callers rely on it.
func (c *Call) checkCreateTopic(rt *kmsg.CreateTopicsRequestTopic, dup bool) (int32, int16, string) {
	g := c.G
	switch {
	case dup:
		return 0, kerr.InvalidRequest.Code, "topic named more than once in the request"
	case !validTopicName(rt.Topic):
		return 0, kerr.InvalidTopicException.Code, "topic names are 1 to 249 characters of [A-Za-z0-9._-], not . or .."
	case kafkaInternalTopic(rt.Topic):
		return 0, kerr.InvalidRequest.Code, "Creation of internal topic " + rt.Topic +
			" is prohibited: this gateway has no internal topics (committed offsets live in the store, not in a topic)"
	}
	var n int32
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return 0, kerr.InvalidRequest.Code, "replica assignment and partition count or replication factor both set"
		}
		n = int32(len(rt.ReplicaAssignment))
		if n > maxPartitions {
			return 0, kerr.InvalidPartitions.Code, "at most 1000 partitions per topic"
		}
		seen := make([]bool, n)
		for i := range rt.ReplicaAssignment {
			a := &rt.ReplicaAssignment[i]
			if a.Partition < 0 || a.Partition >= n || seen[a.Partition] {
				return 0, kerr.InvalidReplicaAssignment.Code, "assignments must name partitions 0..n-1 once each"
			}
			seen[a.Partition] = true
			if len(a.Replicas) != 1 || a.Replicas[0] != g.Cfg.NodeID {
				return 0, kerr.InvalidReplicaAssignment.Code, "every partition's replicas must be exactly this broker"
			}
		}
	} else {
		switch {
		case rt.NumPartitions == -1:
			n = g.defaultPartitions()
		case rt.NumPartitions <= 0 || rt.NumPartitions > maxPartitions:
			return 0, kerr.InvalidPartitions.Code, "partitions must be -1 or 1 to 1000"
		default:
			n = rt.NumPartitions
		}
		if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
			// Worded as a one-broker Kafka cluster answers, so users of
			// tools that default to 3 (Kafka Connect's internal topics)
			// recognise it; the fix is the same: -1 or 1.
			return 0, kerr.InvalidReplicationFactor.Code, "Unable to replicate the partition " + strconv.Itoa(int(rt.ReplicationFactor)) +
				" time(s): The target replication factor of " + strconv.Itoa(int(rt.ReplicationFactor)) +
				" cannot be reached because only 1 broker(s) are registered. This gateway is one logical broker (Iggy replicates on its own): use -1 or 1."
		}
	}
	_, err := g.Store.Topic(c.Ctx, g.Cfg.Stream, rt.Topic)
	switch {
	case err == nil:
		return 0, kerr.TopicAlreadyExists.Code, "topic already exists"
	case !errors.Is(err, bridge.ErrTopicNotFound):
		return 0, errCode(err, opAdmin), err.Error()
	}
	// Checked again under the creation lock (createTopic); this one
	// answers validate_only.
	other, err := c.collidingTopic(rt.Topic)
	switch {
	case err != nil:
		return 0, errCode(err, opAdmin), err.Error()
	case other != "":
		return 0, kerr.InvalidTopicException.Code, (&topicCollision{rt.Topic, other}).Error()
	}
	return n, 0, ""
}
