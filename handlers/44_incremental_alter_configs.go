// IncrementalAlterConfigs: v0-1
//
// Behavior:
//   - TOPIC resources: SET, DELETE (back to the default), APPEND and
//     SUBTRACT (list configs only: cleanup.policy and the throttled-replica
//     lists, starting from the current value or the default) applied to
//     the topic's configs in order. The result is checked as AlterConfigs
//     checks it (INVALID_CONFIG naming the config; all or nothing); APPEND
//     or SUBTRACT on a non-list config, a null value for SET/APPEND/
//     SUBTRACT, or one config named twice is INVALID_REQUEST, as Kafka
//     answers. validate_only keeps nothing. A missing topic is
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER resources (broker_configs.go): SET, DELETE of the scope's
//     dynamic configs (this broker's id, or "" for the cluster-wide
//     defaults), checked as AlterConfigs checks them; a DELETE of a config
//     that is not set (a static one included) changes nothing, as on
//     Kafka. kafka-reassign-partitions sets and clears the throttles so.
//   - BROKER_LOGGER resources (broker_loggers.go): SET of the root
//     logger's level, at once, not kept over a restart; Kafka's refusals
//     (an unknown logger or level INVALID_CONFIG; DELETE of root, APPEND,
//     SUBTRACT INVALID_REQUEST). ALTER_CONFIGS on the cluster.
//   - GROUP resources (KIP-848 group configs, group_configs.go): SET and
//     DELETE; the result is checked against Kafka 4.1's bounds (INVALID_CONFIG
//     with Kafka's messages: "consumer.session.timeout.ms must be greater
//     than or equal to group.consumer.min.session.timeout.ms", "Unknown
//     group config name: x"). The coordinator applies a change made here
//     on the group's next heartbeat. ALTER_CONFIGS on the group, else
//     GROUP_AUTHORIZATION_FAILED.
//   - Other resource types: INVALID_REQUEST.
//
// Version notes: v1 is flexible. KIP-339.

package handlers

import (
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 44, MinVersion: 0, MaxVersion: 1, Handle: typed(incrementalAlterConfigs)})
}

func incrementalAlterConfigs(c *Call, req *kmsg.IncrementalAlterConfigsRequest, resp *kmsg.IncrementalAlterConfigsResponse) (kmsg.Response, error) {
	resp.Resources = make([]kmsg.IncrementalAlterConfigsResponseResource, len(req.Resources))
	for i := range req.Resources {
		rr := &req.Resources[i]
		sr := &resp.Resources[i]
		sr.Default()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if rr.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			if code, msg := c.alterLoggers(rr.ResourceName, req.ValidateOnly, rr.Configs); code != 0 {
				sr.ErrorCode, sr.ErrorMessage = code, strp(msg)
			}
			continue
		}
		code, msg := c.alterConfigResource(rr.ResourceType, rr.ResourceName, req.ValidateOnly, configChange{
			topic: func(cur bridge.TopicConfigs) (bridge.TopicConfigs, int16, string) {
				return applyIncremental(cur, rr.Configs, topicConfigDef, "Unknown topic config name: ")
			},
			group: func(cur bridge.GroupConfigs) (bridge.GroupConfigs, int16, string) {
				defs := c.G.groupConfigDefs()
				return applyIncremental(cur, rr.Configs, func(name string) (kmsg.ConfigType, string, bool) {
					d, ok := defs[name]
					return d.typ, d.def, ok
				}, "Unknown group config name: ")
			},
			broker: func(cur bridge.TopicConfigs) (bridge.TopicConfigs, int16, string) {
				names, nulls := make([]string, len(rr.Configs)), []string(nil)
				for j, cfg := range rr.Configs {
					names[j] = cfg.Name
					if cfg.Value == nil && cfg.Op != kmsg.IncrementalAlterConfigOpDelete {
						nulls = append(nulls, cfg.Name)
					}
				}
				if code, msg := checkBrokerRequest(names, nulls); code != 0 {
					return nil, code, msg
				}
				// Every name is taken here; what the broker cannot change
				// at runtime is refused in the result (a DELETE of it is
				// then a no-op, as on Kafka).
				return applyIncremental(cur, rr.Configs, brokerConfigDef, "")
			},
		})
		if code != 0 {
			sr.ErrorCode, sr.ErrorMessage = code, strp(msg)
		}
	}
	return resp, nil
}

// topicConfigDef looks a topic config up for applyIncremental.
func topicConfigDef(name string) (kmsg.ConfigType, string, bool) {
	d := topicConfigs[name]
	if d == nil {
		return 0, "", false
	}
	return d.typ, d.def, true
}

// brokerConfigDef looks a broker config up for applyIncremental: any name
// (the result is checked by checkBrokerConfigs).
func brokerConfigDef(name string) (kmsg.ConfigType, string, bool) {
	if d := brokerDynamic[name]; d != nil {
		return d.typ, d.def, true
	}
	return kmsg.ConfigTypeString, "", true
}

// applyIncremental applies ops to cur (which it may modify) and returns
// the new set, or a refusal. lookup gives a config's type and default
// (false: unknown, refused with unknown + the name).
func applyIncremental(cur bridge.TopicConfigs, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, lookup func(string) (kmsg.ConfigType, string, bool), unknown string) (bridge.TopicConfigs, int16, string) {
	if cur == nil {
		cur = bridge.TopicConfigs{}
	}
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return nil, kerr.InvalidRequest.Code, "Error due to duplicate config keys: " + op.Name
		}
		seen[op.Name] = true
		typ, def, known := lookup(op.Name)
		if !known {
			return nil, kerr.InvalidConfig.Code, unknown + op.Name
		}
		if op.Op != kmsg.IncrementalAlterConfigOpDelete && op.Value == nil {
			return nil, kerr.InvalidRequest.Code, "Null value not supported for : " + op.Name
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			cur[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(cur, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if typ != kmsg.ConfigTypeList {
				return nil, kerr.InvalidConfig.Code, "Config value append is not allowed for config key: " + op.Name
			}
			v, ok := cur[op.Name]
			if !ok {
				v = def
			}
			list := splitList(v)
			for _, item := range splitList(*op.Value) {
				at := slices.Index(list, item)
				switch {
				case op.Op == kmsg.IncrementalAlterConfigOpAppend && at < 0:
					list = append(list, item)
				case op.Op == kmsg.IncrementalAlterConfigOpSubtract && at >= 0:
					list = slices.Delete(list, at, at+1)
				}
			}
			cur[op.Name] = strings.Join(list, ",")
		default:
			return nil, kerr.InvalidRequest.Code, "unknown operation " + strconv.Itoa(int(op.Op)) + " for config " + op.Name
		}
	}
	return cur, 0, ""
}

// splitList splits a list config value on commas, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
