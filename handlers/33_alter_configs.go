// AlterConfigs: v0-2
//
// Behavior:
//   - TOPIC resources: the topic's configs become exactly the ones given
//     (Kafka's non-incremental semantics: a config left out returns to its
//     default; a null value is left out). Every value is checked first
//     (configs.go: unknown names, bad values and values other than the
//     gateway's own for the fixed configs are INVALID_CONFIG with a message
//     naming the config) and nothing changes unless all pass. A backend
//     that cannot keep a value refuses it the same way (Iggy: a
//     retention.bytes × partitions under the segment size, or a changed
//     segment.bytes, which Iggy cannot change). validate_only
//     checks and keeps nothing. A missing topic is
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER resources (broker_configs.go): this broker's id or "" (the
//     cluster-wide defaults); the scope's dynamic configs become the ones
//     given. Only the dynamic broker configs may be set (the replication
//     throttles, log.message.timestamp.type); any other name is
//     INVALID_REQUEST "Cannot update these configs dynamically: [x]",
//     a bad value INVALID_REQUEST "Invalid value v for configuration x:
//     ...", a null value, a config named twice, another broker id
//     INVALID_REQUEST, all in Kafka's words. ALTER_CONFIGS on the cluster.
//   - GROUP resources (group_configs.go): the group's configs become the
//     ones given, checked as IncrementalAlterConfigs checks them.
//   - Other resource types (BROKER_LOGGER included, as on Kafka):
//     INVALID_REQUEST.
//
// Version notes: v1 is v0 (throttle), v2 is flexible.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 33, MinVersion: 0, MaxVersion: 2, Handle: typed(alterConfigs)})
}

func alterConfigs(c *Call, req *kmsg.AlterConfigsRequest, resp *kmsg.AlterConfigsResponse) (kmsg.Response, error) {
	resp.Resources = make([]kmsg.AlterConfigsResponseResource, len(req.Resources))
	for i := range req.Resources {
		rr := &req.Resources[i]
		sr := &resp.Resources[i]
		sr.Default()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		code, msg := c.alterConfigResource(rr.ResourceType, rr.ResourceName, req.ValidateOnly, configChange{
			topic: func(bridge.TopicConfigs) (bridge.TopicConfigs, int16, string) {
				return replacementSet(rr.Configs, func(name string) bool { return topicConfigs[name] != nil }, "Unknown topic config name: ")
			},
			group: func(bridge.GroupConfigs) (bridge.GroupConfigs, int16, string) {
				defs := c.G.groupConfigDefs()
				return replacementSet(rr.Configs, func(name string) bool { _, ok := defs[name]; return ok }, "Unknown group config name: ")
			},
			broker: func(bridge.TopicConfigs) (bridge.TopicConfigs, int16, string) {
				names, nulls := make([]string, len(rr.Configs)), []string(nil)
				for j, cfg := range rr.Configs {
					names[j] = cfg.Name
					if cfg.Value == nil {
						nulls = append(nulls, cfg.Name)
					}
				}
				if code, msg := checkBrokerRequest(names, nulls); code != 0 {
					return nil, code, msg
				}
				return replacementSet(rr.Configs, nil, "")
			},
		})
		if code != 0 {
			sr.ErrorCode, sr.ErrorMessage = code, strp(msg)
		}
	}
	return resp, nil
}

// replacementSet is the config set an AlterConfigs resource asks for:
// every config given with a value (a null value leaves it out, so at its
// default). A config named twice is INVALID_REQUEST; a null value for a
// config known() does not know is INVALID_CONFIG (unknown + name). The
// values are checked by the caller.
func replacementSet(configs []kmsg.AlterConfigsRequestResourceConfig, known func(string) bool, unknown string) (bridge.TopicConfigs, int16, string) {
	next := bridge.TopicConfigs{}
	for _, cfg := range configs {
		if _, dup := next[cfg.Name]; dup {
			return nil, kerr.InvalidRequest.Code, "config " + cfg.Name + " given twice"
		}
		if cfg.Value != nil {
			next[cfg.Name] = *cfg.Value
		} else if !known(cfg.Name) {
			return nil, kerr.InvalidConfig.Code, unknown + cfg.Name
		}
	}
	return next, 0, ""
}
