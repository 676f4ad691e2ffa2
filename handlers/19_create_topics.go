// CreateTopics: v2-7
//
// Behavior:
//   - Creates the Iggy topic (and Cfg.Stream if missing) with the asked
//     partition count. validate_only runs every check, existence included,
//     and creates nothing.
//   - Checks per topic, first failure wins: a name given twice in one
//     request is INVALID_REQUEST for every entry of it; a bad name
//     INVALID_TOPIC_EXCEPTION; manual assignments together with a partition
//     count or replication factor other than -1 INVALID_REQUEST; partitions
//     -1 means Cfg.DefaultPartitions, while 0, below -1 or above 1000 is
//     INVALID_PARTITIONS; replication factor must be -1 or 1 (one logical
//     broker over Iggy, which replicates on its own) else
//     INVALID_REPLICATION_FACTOR; a manual assignment must name partitions
//     0..n-1 once each, each with replicas exactly [NodeID], else
//     INVALID_REPLICA_ASSIGNMENT; configs are checked (below); an existing
//     topic is TOPIC_ALREADY_EXISTS; a name equal to an existing topic's
//     once '.' and '_' are equated (coll.a, coll_a) is
//     INVALID_TOPIC_EXCEPTION "collides with existing topic", as Kafka
//     answers (its metric names would clash).
//   - Configs (the Rust gateway refuses any config with INVALID_CONFIG): a
//     null value (use the default) is accepted for every key we know. Keys
//     that tune Kafka's own log files or enforce limits we do not enforce
//     are accepted and ignored whatever the value (see ignoredConfigs);
//     keys whose meaning we cannot honour are accepted only with the value
//     our storage already has (cleanup.policy=delete,
//     message.timestamp.type=CreateTime, min.insync.replicas=1,
//     retention.ms=-1, retention.bytes=-1, remote.storage.enable=false);
//     anything else, including unknown keys and cleanup.policy=compact, is
//     INVALID_CONFIG with a message naming the key. So kafka-topics.sh and
//     the Java admin defaults work, and nothing the caller relies on is
//     silently dropped.
//   - v5+ response: partition count, replication factor 1 and an empty
//     config list (configs are not described). v7: the topic id (see
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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 19, MinVersion: 2, MaxVersion: 7, Handle: createTopics})
}

// maxPartitions caps partitions per created topic, as the Rust gateway does.
const maxPartitions = 1000

// ignoredConfigs are topic configs accepted with any value and ignored: they
// tune Kafka's segment files, flushing, compaction or validation limits,
// none of which exists in or changes the meaning of an Iggy topic.
var ignoredConfigs = map[string]bool{
	"segment.bytes": true, "segment.ms": true, "segment.jitter.ms": true,
	"segment.index.bytes": true, "index.interval.bytes": true,
	"flush.messages": true, "flush.ms": true, "preallocate": true,
	"file.delete.delay.ms": true, "unclean.leader.election.enable": true,
	"message.downconversion.enable": true, "compression.type": true,
	"max.message.bytes": true, "message.timestamp.difference.max.ms": true,
	"message.timestamp.before.max.ms": true, "message.timestamp.after.max.ms": true,
	"min.compaction.lag.ms": true, "max.compaction.lag.ms": true,
	"delete.retention.ms": true, "min.cleanable.dirty.ratio": true,
	"local.retention.ms": true, "local.retention.bytes": true,
	"leader.replication.throttled.replicas":   true,
	"follower.replication.throttled.replicas": true,
}

// fixedConfigs are configs accepted only with the value an Iggy topic
// behind this gateway already has.
var fixedConfigs = map[string]string{
	"cleanup.policy":         "delete",
	"message.timestamp.type": "CreateTime",
	"min.insync.replicas":    "1",
	"retention.ms":           "-1",
	"retention.bytes":        "-1",
	"remote.storage.enable":  "false",
}

func createTopics(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

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

		n, code, msg := c.checkCreate(rt, count[rt.Topic] > 1)
		if code == 0 && !req.ValidateOnly {
			ti, err := c.createTopic(rt.Topic, n)
			if err != nil {
				code, msg = errCode(err, opAdmin), err.Error()
			} else {
				st.TopicID = topicID(ti)
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
	}
	return resp, nil
}

// checkCreate validates one topic and returns its partition count, or an
// error code and message. It asks the store whether the topic exists.
func (c *Call) checkCreate(rt *kmsg.CreateTopicsRequestTopic, dup bool) (int32, int16, string) {
	g := c.G
	switch {
	case dup:
		return 0, kerr.InvalidRequest.Code, "topic named more than once in the request"
	case !validTopicName(rt.Topic):
		return 0, kerr.InvalidTopicException.Code, "topic names are 1 to 249 characters of [A-Za-z0-9._-], not . or .."
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
			return 0, kerr.InvalidReplicationFactor.Code, "replication factor must be -1 or 1; Iggy replicates on its own"
		}
	}
	for i := range rt.Configs {
		if msg := checkConfig(&rt.Configs[i]); msg != "" {
			return 0, kerr.InvalidConfig.Code, msg
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

// checkConfig returns why cfg is refused, or "".
func checkConfig(cfg *kmsg.CreateTopicsRequestTopicConfig) string {
	if ignoredConfigs[cfg.Name] {
		return ""
	}
	want, fixed := fixedConfigs[cfg.Name]
	switch {
	case !fixed:
		return "config " + cfg.Name + " is not supported"
	case cfg.Value == nil || *cfg.Value == want:
		return ""
	}
	return "config " + cfg.Name + " can only be " + want + " on this gateway"
}
