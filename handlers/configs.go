package handlers

// Topic and broker configs: what DescribeConfigs (32) reports, what
// AlterConfigs (33), IncrementalAlterConfigs (44) and CreateTopics (19)
// accept. One table, so the four keys cannot disagree.
//
// A topic's explicit configs are kept by the Store with the topic
// (bridge.TopicConfigStore: the embedded catalog; on Iggy, retention as
// the topic's own message_expiry / max_topic_size and the rest in the
// gateway's state stream). Every config not set reports its broker
// synonym's dynamic value (broker_configs.go), else this gateway's
// default with source DEFAULT_CONFIG. Broker configs are in
// broker_configs.go.

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/group"
)

// configKind says what the gateway does with a topic config.
type configKind int8

const (
	// cfgKept: stored and honoured as documented (cleanup.policy,
	// retention.*, message.timestamp.type).
	cfgKept configKind = iota
	// cfgInert: stored and reported, no effect here (Kafka log-file and
	// replication tuning that has no counterpart over Iggy).
	cfgInert
	// cfgFixed: only the gateway's own value is accepted.
	cfgFixed
)

type configDef struct {
	name    string
	kind    configKind
	typ     kmsg.ConfigType
	def     string // the value of a topic that does not set it
	synonym string // the broker config Kafka takes the default from, if any
	doc     string
}

const inertDoc = " Accepted and kept on this gateway; it has no effect (no Kafka log files or replicas behind it)."

const longMax = "9223372036854775807"

// topicConfigs is every topic config the gateway knows, by name.
var topicConfigs = func() map[string]*configDef {
	defs := []configDef{
		{"cleanup.policy", cfgKept, kmsg.ConfigTypeList, "delete", "log.cleanup.policy",
			"delete, compact, or both. delete: records go once older than retention.ms or past retention.bytes. " +
				"compact: a record without a key is refused (INVALID_RECORD), as Kafka refuses it; this gateway never compacts " +
				"and never deletes from a compacted topic, so the latest record of every key (tombstones included) is always there; " +
				"retention does not apply to it."},
		{"retention.ms", cfgKept, kmsg.ConfigTypeLong, "-1", "log.retention.ms",
			"How long records are kept, -1 for ever (this gateway's default), by the newest record timestamp of each stored batch " +
				"on the embedded store (checked every --retention-check-interval-ms). On Iggy it is the topic's message_expiry, " +
				"enforced by the Iggy server on whole sealed segments by append time (see segment.bytes)."},
		{"retention.bytes", cfgKept, kmsg.ConfigTypeLong, "-1", "log.retention.bytes",
			"Bytes kept per partition, -1 for no limit. On Iggy it is the topic's max_topic_size (retention.bytes × partitions, " +
				"at least the segment size, 1 GiB by default), enforced by the Iggy server on whole sealed segments; the embedded store " +
				"removes the oldest batches (checked every --retention-check-interval-ms)."},
		{"message.timestamp.type", cfgKept, kmsg.ConfigTypeString, timestampCreate, "log.message.timestamp.type",
			"CreateTime: records keep the producer's timestamp. LogAppendTime: every batch gets the time the gateway appended it, " +
				"which the Produce answer carries, consumers read for every record, and ListOffsets searches by; a change applies " +
				"to the batches produced after it."},
		{"min.insync.replicas", cfgFixed, kmsg.ConfigTypeInt, "1", "min.insync.replicas",
			"Only 1: one logical broker; Iggy keeps durability (--fsync)."},
		{"remote.storage.enable", cfgFixed, kmsg.ConfigTypeBoolean, "false", "",
			"Only false: no tiered storage."},
		{"compression.type", cfgInert, kmsg.ConfigTypeString, "producer", "compression.type",
			"Records are stored uncompressed as Iggy messages; Fetch sends each batch compressed as the producer sent it " +
				"(the producer behaviour, whatever this says; --fetch-compression none: uncompressed)." + inertDoc},
		{"max.message.bytes", cfgInert, kmsg.ConfigTypeInt, "1048588", "message.max.bytes",
			"The gateway's limits are --max-frame-size per request and --max-message-size per record." + inertDoc},
		{"segment.bytes", cfgKept, kmsg.ConfigTypeInt, "1073741824", "log.segment.bytes",
			"On Iggy the topic's segment_size, set at creation only (a multiple of 512 from 1 MiB to 1 GiB): Iggy deletes " +
				"whole sealed segments, so records past retention stay until their segment is full and the server's cleaner runs. " +
				"On the embedded store the size of a partition's segment files (any positive value; applies from the next roll): " +
				"retention and DeleteRecords move the log start per batch and free disk space a whole segment at a time."},
		{"segment.ms", cfgInert, kmsg.ConfigTypeLong, "604800000", "log.roll.ms", "Kafka log segment roll time." + inertDoc},
		{"segment.jitter.ms", cfgInert, kmsg.ConfigTypeLong, "0", "log.roll.jitter.ms", "Kafka log segment roll jitter." + inertDoc},
		{"segment.index.bytes", cfgInert, kmsg.ConfigTypeInt, "10485760", "log.index.size.max.bytes", "Kafka offset index size." + inertDoc},
		{"index.interval.bytes", cfgInert, kmsg.ConfigTypeInt, "4096", "log.index.interval.bytes", "Kafka offset index interval." + inertDoc},
		{"flush.messages", cfgInert, kmsg.ConfigTypeLong, longMax, "log.flush.interval.messages", "Flushing is --fsync's." + inertDoc},
		{"flush.ms", cfgInert, kmsg.ConfigTypeLong, longMax, "log.flush.interval.ms", "Flushing is --fsync's." + inertDoc},
		{"preallocate", cfgInert, kmsg.ConfigTypeBoolean, "false", "log.preallocate", "Kafka segment preallocation." + inertDoc},
		{"file.delete.delay.ms", cfgInert, kmsg.ConfigTypeLong, "60000", "log.segment.delete.delay.ms", "Kafka segment deletion delay." + inertDoc},
		{"unclean.leader.election.enable", cfgInert, kmsg.ConfigTypeBoolean, "false", "unclean.leader.election.enable", "One broker: no leader election." + inertDoc},
		{"message.downconversion.enable", cfgInert, kmsg.ConfigTypeBoolean, "true", "log.message.downconversion.enable", "Removed in Kafka 4." + inertDoc},
		{"message.timestamp.difference.max.ms", cfgInert, kmsg.ConfigTypeLong, longMax, "log.message.timestamp.difference.max.ms", "Removed in Kafka 4." + inertDoc},
		{"message.timestamp.before.max.ms", cfgInert, kmsg.ConfigTypeLong, longMax, "log.message.timestamp.before.max.ms", "Timestamps are not checked." + inertDoc},
		{"message.timestamp.after.max.ms", cfgInert, kmsg.ConfigTypeLong, "3600000", "log.message.timestamp.after.max.ms", "Timestamps are not checked." + inertDoc},
		{"min.compaction.lag.ms", cfgInert, kmsg.ConfigTypeLong, "0", "log.cleaner.min.compaction.lag.ms", "Nothing is compacted." + inertDoc},
		{"max.compaction.lag.ms", cfgInert, kmsg.ConfigTypeLong, longMax, "log.cleaner.max.compaction.lag.ms", "Nothing is compacted." + inertDoc},
		{"delete.retention.ms", cfgInert, kmsg.ConfigTypeLong, "86400000", "log.cleaner.delete.retention.ms", "Tombstones are never removed." + inertDoc},
		{"min.cleanable.dirty.ratio", cfgInert, kmsg.ConfigTypeDouble, "0.5", "log.cleaner.min.cleanable.ratio", "Nothing is compacted." + inertDoc},
		{"local.retention.ms", cfgInert, kmsg.ConfigTypeLong, "-2", "log.local.retention.ms", "No tiered storage." + inertDoc},
		{"local.retention.bytes", cfgInert, kmsg.ConfigTypeLong, "-2", "log.local.retention.bytes", "No tiered storage." + inertDoc},
		{"leader.replication.throttled.replicas", cfgInert, kmsg.ConfigTypeList, "", "", "No replication." + inertDoc},
		{"follower.replication.throttled.replicas", cfgInert, kmsg.ConfigTypeList, "", "", "No replication." + inertDoc},
	}
	m := make(map[string]*configDef, len(defs))
	for i := range defs {
		m[defs[i].name] = &defs[i]
	}
	return m
}()

// topicConfigNames is topicConfigs' names, sorted, the order DescribeConfigs
// lists them in.
var topicConfigNames = slices.Sorted(maps.Keys(topicConfigs))

// checkTopicConfig returns why value is refused for config name, or "".
// The message names the config, for the client's error.
func checkTopicConfig(name, value string) string {
	d := topicConfigs[name]
	if d == nil {
		return "Unknown topic config name: " + name
	}
	if d.kind == cfgFixed && value != d.def {
		return "config " + name + " can only be " + d.def + " on this gateway"
	}
	bad := func(what string) string {
		return "config " + name + ": invalid value " + strconv.Quote(value) + ": " + what
	}
	switch d.typ {
	case kmsg.ConfigTypeLong, kmsg.ConfigTypeInt:
		bits := 64
		if d.typ == kmsg.ConfigTypeInt {
			bits = 32
		}
		n, err := strconv.ParseInt(value, 10, bits)
		if err != nil {
			return bad("not a number")
		}
		if (name == "retention.ms" || name == "retention.bytes") && n < -1 {
			return bad("must be -1 or more")
		}
	case kmsg.ConfigTypeBoolean:
		if value != "true" && value != "false" {
			return bad("true or false")
		}
	case kmsg.ConfigTypeDouble:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return bad("not a number")
		}
	}
	switch name {
	case "cleanup.policy":
		if _, ok := normalizePolicy(value); !ok {
			return bad("delete, compact or compact,delete")
		}
	case "message.timestamp.type":
		if value != timestampCreate && value != timestampLogAppend {
			return bad(timestampCreate + " or " + timestampLogAppend)
		}
	}
	return ""
}

// normalizePolicy checks a cleanup.policy list: delete and/or compact,
// each once.
func normalizePolicy(v string) (string, bool) {
	seen := map[string]bool{}
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if (p != "delete" && p != "compact") || seen[p] {
			return "", false
		}
		seen[p] = true
		out = append(out, p)
	}
	return strings.Join(out, ","), true
}

// describeTopic lists a topic's configs: the set ones with source
// DYNAMIC_TOPIC_CONFIG, the rest the value of their broker synonym (a
// dynamic broker config set for this broker or as the cluster default,
// broker_configs.go) or this gateway's default. names filters (none:
// all; unknown names are skipped, as Kafka does).
func describeTopic(set bridge.TopicConfigs, broker brokerView, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	if len(names) == 0 {
		names = topicConfigNames
	}
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(names))
	for _, name := range names {
		d := topicConfigs[name]
		if d == nil {
			continue
		}
		defName := name
		if d.synonym != "" {
			defName = d.synonym
		}
		syns := broker.synonyms(defName, strp(d.def), kmsg.ConfigSourceDefaultConfig, true)
		if v, isSet := set[name]; isSet {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = name, strp(v), kmsg.ConfigSourceDynamicTopicConfig
			syns = append([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{s}, syns...)
		}
		var doc *string
		if docs {
			doc = strp(d.doc)
		}
		out = append(out, brokerEntry(name, d.typ, false, syns, synonyms, doc))
	}
	return out
}

// brokerConfig is one broker config as the gateway's flags set it.
type brokerConfig struct {
	name  string
	typ   kmsg.ConfigType
	value string
	doc   string
}

// brokerConfigs are the broker configs tools read, as this gateway's flags
// set them or the design fixes them. Read-only unless brokerDynamic names
// them (broker_configs.go).
func (g *Gateway) brokerConfigs() []brokerConfig {
	node := strconv.Itoa(int(g.Cfg.NodeID))
	maxFrame := "1048588"
	if g.Cfg.MaxFrameSize > 0 {
		maxFrame = strconv.Itoa(int(g.Cfg.MaxFrameSize))
	}
	cs := []brokerConfig{
		{"node.id", kmsg.ConfigTypeInt, node, "This gateway's broker id (--node-id)."},
		{"broker.id", kmsg.ConfigTypeInt, node, "This gateway's broker id (--node-id)."},
		{"process.roles", kmsg.ConfigTypeList, "broker", "One logical broker; Iggy is the storage."},
		{"num.partitions", kmsg.ConfigTypeInt, strconv.Itoa(int(g.defaultPartitions())), "Partitions of auto-created topics and of CreateTopics with -1 (--default-partitions)."},
		{"default.replication.factor", kmsg.ConfigTypeShort, "1", "One logical broker; Iggy replicates on its own."},
		{"auto.create.topics.enable", kmsg.ConfigTypeBoolean, strconv.FormatBool(g.Cfg.AutoCreateTopics), "Metadata and Produce create unknown topics (--auto-create-topics)."},
		{"delete.topic.enable", kmsg.ConfigTypeBoolean, "true", "DeleteTopics deletes the Iggy topic."},
		{"message.max.bytes", kmsg.ConfigTypeInt, maxFrame, "The largest request, so the largest record batch (--max-frame-size); each record is also at most --max-message-size."},
		{"min.insync.replicas", kmsg.ConfigTypeInt, "1", "One logical broker."},
		{"offsets.topic.replication.factor", kmsg.ConfigTypeShort, "1", "Committed offsets are Iggy consumer offsets."},
		{"transaction.state.log.replication.factor", kmsg.ConfigTypeShort, "1", "Transactions are not served."},
		{"transaction.state.log.min.isr", kmsg.ConfigTypeInt, "1", "Transactions are not served."},
		{"log.retention.ms", kmsg.ConfigTypeLong, "-1", "Topics keep records for ever unless they set retention.ms."},
		{"log.retention.bytes", kmsg.ConfigTypeLong, "-1", "Topics have no size limit unless they set retention.bytes."},
		{"log.cleanup.policy", kmsg.ConfigTypeList, "delete", "The default cleanup.policy."},
		{"log.message.timestamp.type", kmsg.ConfigTypeString, timestampCreate, "The default message.timestamp.type: records keep the producer's timestamp."},
		{"log.segment.bytes", kmsg.ConfigTypeInt, "1073741824", "Kafka log segments do not exist here; reported for tools."},
		{"compression.type", kmsg.ConfigTypeString, "producer", "Records are stored uncompressed as Iggy messages; Fetch compresses each batch again with the producer's codec (--fetch-compression)."},
		{"unclean.leader.election.enable", kmsg.ConfigTypeBoolean, "false", "One broker: no leader election."},
	}
	return append(cs, g.groupBrokerConfigs()...)
}

// groupBrokerConfigs are the coordinator's settings under Kafka's broker
// config names (group.Config; the consumer-protocol ones are the defaults
// and bounds of the group configs, group_configs.go).
func (g *Gateway) groupBrokerConfigs() []brokerConfig {
	gc := group.Config{}
	if g.Groups != nil {
		gc = g.Groups.Config()
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return []brokerConfig{
		{"group.initial.rebalance.delay.ms", kmsg.ConfigTypeInt, ms(gc.InitialRebalanceDelay), "How long the first rebalance of an empty classic group waits for more members."},
		{"group.min.session.timeout.ms", kmsg.ConfigTypeInt, ms(gc.MinSessionTimeout), "The shortest session timeout a classic group member may ask for."},
		{"group.max.session.timeout.ms", kmsg.ConfigTypeInt, ms(gc.MaxSessionTimeout), "The longest session timeout a classic group member may ask for."},
		{"group.max.size", kmsg.ConfigTypeInt, strconv.Itoa(gc.MaxGroupSize), "The most members one group may have."},
		{"group.consumer.session.timeout.ms", kmsg.ConfigTypeInt, ms(gc.ConsumerSessionTimeout), "The default consumer.session.timeout.ms of consumer groups (KIP-848)."},
		{"group.consumer.min.session.timeout.ms", kmsg.ConfigTypeInt, ms(gc.ConsumerMinSessionTimeout), "The lowest consumer.session.timeout.ms a group may set."},
		{"group.consumer.max.session.timeout.ms", kmsg.ConfigTypeInt, ms(gc.ConsumerMaxSessionTimeout), "The highest consumer.session.timeout.ms a group may set."},
		{"group.consumer.heartbeat.interval.ms", kmsg.ConfigTypeInt, ms(gc.ConsumerHeartbeatInterval), "The default consumer.heartbeat.interval.ms of consumer groups (KIP-848)."},
		{"group.consumer.min.heartbeat.interval.ms", kmsg.ConfigTypeInt, ms(gc.ConsumerMinHeartbeatInterval), "The lowest consumer.heartbeat.interval.ms a group may set."},
		{"group.consumer.max.heartbeat.interval.ms", kmsg.ConfigTypeInt, ms(gc.ConsumerMaxHeartbeatInterval), "The highest consumer.heartbeat.interval.ms a group may set."},
		{"group.consumer.assignors", kmsg.ConfigTypeList, strings.Join(gc.ConsumerAssignors, ","), "The server-side assignors consumer groups may name; the first is the default."},
		{"group.consumer.max.size", kmsg.ConfigTypeInt, strconv.Itoa(gc.MaxGroupSize), "The most members one consumer group may have."},
		{"group.consumer.migration.policy", kmsg.ConfigTypeString, "bidirectional", "Classic groups are upgraded to consumer groups online and back."},
	}
}

// configChange makes a resource's new config set from its current one:
// topic for a TOPIC resource, group for a GROUP one, broker for a BROKER
// one (each gets a copy of the current set, nil when none, and returns
// the new one or a refusal).
type configChange struct {
	topic  func(bridge.TopicConfigs) (bridge.TopicConfigs, int16, string)
	group  func(bridge.GroupConfigs) (bridge.GroupConfigs, int16, string)
	broker func(bridge.TopicConfigs) (bridge.TopicConfigs, int16, string)
}

// alterConfigResource is one resource of AlterConfigs or
// IncrementalAlterConfigs: ALTER_CONFIGS on the resource, then the change
// for a topic, a group or the broker's dynamic configs
// (broker_configs.go). The code and message to answer, 0 when applied (or
// valid, with validateOnly).
func (c *Call) alterConfigResource(typ kmsg.ConfigResourceType, name string, validateOnly bool, change configChange) (int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !c.Authorized(kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeTopic, name) {
			return kerr.TopicAuthorizationFailed.Code, "not authorized to alter the configs of this topic"
		}
		return c.alterTopicConfigs(name, validateOnly, change.topic)
	case configResourceTypeGroup:
		if !c.Authorized(kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeGroup, name) {
			return kerr.GroupAuthorizationFailed.Code, "not authorized to alter the configs of this group"
		}
		return c.alterGroupConfigs(name, validateOnly, change.group)
	case kmsg.ConfigResourceTypeBroker:
		if !c.Authorized(kmsg.ACLOperationAlterConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
			return kerr.ClusterAuthorizationFailed.Code, "not authorized to alter broker configs"
		}
		return c.alterBrokerConfigs(name, validateOnly, change.broker)
	}
	return kerr.InvalidRequest.Code, "config resource type " + strconv.Itoa(int(typ)) + " is not served by this gateway"
}

// alterTopicConfigs applies change to the topic's stored configs after
// checking every resulting value: all or nothing. validateOnly stores
// nothing. change gets a copy of the current set (it may edit it; nil
// when there is none) and returns
// the new one or a refusal (code, message).
func (c *Call) alterTopicConfigs(topic string, validateOnly bool, change func(bridge.TopicConfigs) (bridge.TopicConfigs, int16, string)) (int16, string) {
	if !validTopicName(topic) {
		return kerr.UnknownTopicOrPartition.Code, "unknown topic " + topic
	}
	cs := c.G.Store
	cur, err := cs.TopicConfigs(c.Ctx, c.G.Cfg.Stream, topic)
	if err != nil {
		return errCode(err, opAdmin), err.Error()
	}
	next, code, msg := change(maps.Clone(cur))
	if code != 0 {
		return code, msg
	}
	for _, name := range slices.Sorted(maps.Keys(next)) {
		if msg := checkTopicConfig(name, next[name]); msg != "" {
			return kerr.InvalidConfig.Code, msg
		}
		if name == "cleanup.policy" {
			next[name], _ = normalizePolicy(next[name])
		}
	}
	if validateOnly || maps.Equal(cur, next) {
		return 0, ""
	}
	// Dropped whatever the outcome: a change that failed may still have
	// been made (in part, on Iggy).
	defer c.G.forgetPolicy(topic)
	if err := cs.SetTopicConfigs(c.Ctx, c.G.Cfg.Stream, topic, next); err != nil {
		var ce *bridge.ConfigError
		if errors.As(err, &ce) {
			return kerr.InvalidConfig.Code, ce.Error()
		}
		return errCode(err, opAdmin), err.Error()
	}
	return 0, ""
}
