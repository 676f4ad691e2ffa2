// DescribeConfigs: v1-4
//
// Behavior:
//   - TOPIC resources: every topic config the gateway knows (configs.go),
//     sorted by name. Configs the topic sets (at CreateTopics or with
//     AlterConfigs / IncrementalAlterConfigs) have source
//     DYNAMIC_TOPIC_CONFIG; the others this gateway's default with source
//     DEFAULT_CONFIG, or the broker synonym's dynamic
//     value (message.timestamp.type from log.message.timestamp.type set as
//     a dynamic broker config, with its source). The defaults are the
//     gateway's, not
//     Kafka's, where they differ: retention.ms -1 (records are kept for
//     ever unless the topic sets it). On Iggy, retention.ms and
//     retention.bytes are read from the Iggy topic's message_expiry and
//     max_topic_size, so a native change shows. A missing topic, or a name
//     Kafka could never create, is UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER resources (broker_configs.go): this broker's id (Cfg.NodeID)
//     lists the broker configs tools read (num.partitions,
//     auto.create.topics.enable, message.max.bytes, log.retention.ms, ...)
//     with source STATIC_BROKER_CONFIG (the gateway's flags), a dynamic
//     config set over one with its source (DYNAMIC_BROKER_CONFIG for this
//     broker, DYNAMIC_DEFAULT_BROKER_CONFIG for the cluster), and the
//     dynamic configs set that have no static value (the replication
//     throttles); synonyms in Kafka's order of precedence. "" lists the
//     cluster-wide dynamic defaults set. Read-only as Kafka marks them.
//     Another id, or a name that is no integer, is INVALID_REQUEST with
//     Kafka's message. DESCRIBE_CONFIGS on the cluster.
//   - BROKER_LOGGER resources (broker_loggers.go): this broker's id lists
//     the root logger at the gateway's log level (DEBUG, INFO, ...).
//   - GROUP resources (KIP-848 group configs, group_configs.go): the ten
//     configs Kafka 4.1 lists, the set ones with source GROUP_CONFIG, the
//     rest the gateway's defaults (consumer.session.timeout.ms and
//     consumer.heartbeat.interval.ms from the coordinator's settings); a
//     group need not exist. An empty name is INVALID_REQUEST "Group name
//     must not be empty", as Kafka answers. DESCRIBE_CONFIGS on the group,
//     else GROUP_AUTHORIZATION_FAILED.
//   - Other resource types (CLIENT_METRICS) are INVALID_REQUEST naming
//     the type.
//   - config_names filters (unknown names are skipped, none is all, as
//     Kafka does);
//     include_synonyms (v1+) adds the value's synonyms, the set value then
//     the default under its broker config name (log.retention.ms);
//     include_documentation (v3+) adds each config's documentation, which
//     says what the config does on this gateway (cleanup.policy=compact:
//     nothing is ever deleted from the topic).
//
// Version notes: v0 is not served (Kafka 4 removed it, KIP-896; a v0
// request closes the connection); v1 adds synonyms and source, v2 is v1
// (throttle), v3 adds config type and documentation (KIP-569), v4 is
// flexible.

package handlers

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 32, MinVersion: 1, MaxVersion: 4, Handle: typed(describeConfigs)})
}

func describeConfigs(c *Call, req *kmsg.DescribeConfigsRequest, resp *kmsg.DescribeConfigsResponse) (kmsg.Response, error) {
	g := c.G
	// The dynamic broker configs, read once for the request when a
	// resource needs them.
	var broker brokerView
	var brokerErr error
	brokerRead := false
	readBroker := func() (brokerView, error) {
		if !brokerRead {
			broker, brokerErr = c.readBrokerView()
			brokerRead = true
		}
		return broker, brokerErr
	}
	resp.Resources = make([]kmsg.DescribeConfigsResponseResource, len(req.Resources))
	for i := range req.Resources {
		rr := &req.Resources[i]
		sr := &resp.Resources[i]
		sr.Default()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, rr.ResourceName) {
				sr.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if !validTopicName(rr.ResourceName) {
				sr.ErrorCode, sr.ErrorMessage = kerr.UnknownTopicOrPartition.Code, strp("unknown topic "+rr.ResourceName)
				continue
			}
			set, err := g.Store.TopicConfigs(c.Ctx, g.Cfg.Stream, rr.ResourceName)
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err, opAdmin), strp(err.Error())
				continue
			}
			bv, err := readBroker()
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err, opAdmin), strp(err.Error())
				continue
			}
			sr.Configs = describeTopic(set, bv, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
		case configResourceTypeGroup:
			if !c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeGroup, rr.ResourceName) {
				sr.ErrorCode = kerr.GroupAuthorizationFailed.Code
				continue
			}
			cfgs, code, msg := c.describeGroupConfigs(rr.ResourceName, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			if code != 0 {
				sr.ErrorCode, sr.ErrorMessage = code, strp(msg)
				continue
			}
			sr.Configs = cfgs
		case kmsg.ConfigResourceTypeBroker:
			if !c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
				sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				continue
			}
			if code, msg := g.checkBrokerResource(rr.ResourceName); code != 0 {
				sr.ErrorCode, sr.ErrorMessage = code, strp(msg)
				continue
			}
			bv, err := readBroker()
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err, opAdmin), strp(err.Error())
				continue
			}
			if rr.ResourceName == "" {
				sr.Configs = describeBrokerDefaults(bv, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			} else {
				sr.Configs = g.describeBroker(bv, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		case kmsg.ConfigResourceTypeBrokerLogger:
			if !c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
				sr.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				continue
			}
			cfgs, code, msg := g.describeLoggers(rr.ResourceName, rr.ConfigNames)
			if code != 0 {
				sr.ErrorCode, sr.ErrorMessage = code, strp(msg)
				continue
			}
			sr.Configs = cfgs
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = strp("config resource type " + strconv.Itoa(int(rr.ResourceType)) + " is not served by this gateway")
		}
	}
	return resp, nil
}
