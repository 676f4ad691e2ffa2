// ListConfigResources: v0-1
//
// Behavior:
//   - v1 (KIP-1142, Kafka 4.1; `kafka-configs --describe --entity-type
//     groups` asks it): the resources of the types asked for (none: every
//     type), as Kafka lists them: TOPIC, every topic of the stream; BROKER,
//     this gateway's node id; GROUP, the groups with configs set (whether
//     or not the group exists, as Kafka; the name the broker configs are
//     kept under is no group); CLIENT_METRICS, none (not served).
//     BROKER_LOGGER is left out.
//     Another type is UNSUPPORTED_VERSION, as Kafka answers.
//   - v0 (ListClientMetricsResources): client metrics resources only,
//     so always empty.
//   - DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
//     A store failure is the store's error code with no resources.
//
// Version notes: v0 was ListClientMetricsResources (KIP-714); v1 renamed
// it and added the type filter and each resource's type. Both flexible.

package handlers

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/group"
)

func init() {
	register(Spec{Key: 74, MinVersion: 0, MaxVersion: 1, Handle: typed(listConfigResources)})
}

func listConfigResources(c *Call, req *kmsg.ListConfigResourcesRequest, resp *kmsg.ListConfigResourcesResponse) (kmsg.Response, error) {
	resp.ConfigResources = []kmsg.ListConfigResourcesResponseConfigResource{}
	if !c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.Version == 0 {
		return resp, nil // client metrics resources: none
	}
	types := req.ResourceTypes
	for _, t := range types {
		switch kmsg.ConfigResourceType(t) {
		case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, configResourceTypeGroup,
			kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeBrokerLogger:
		default:
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	want := func(t kmsg.ConfigResourceType) bool { return len(types) == 0 || slices.Contains(types, int8(t)) }
	add := func(name string, t kmsg.ConfigResourceType) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ConfigResources = errCode(err, opAdmin), []kmsg.ListConfigResourcesResponseConfigResource{}
		return resp, nil
	}
	if want(configResourceTypeGroup) {
		groups, err := c.G.Store.ConfiguredGroups(c.Ctx, c.G.Cfg.Stream)
		if err != nil {
			return fail(err)
		}
		for _, g := range groups {
			if len(g) > group.MaxGroupIDLen {
				continue // not a group: the broker configs (broker_configs.go)
			}
			if c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeGroup, g) {
				add(g, configResourceTypeGroup)
			}
		}
	}
	if want(kmsg.ConfigResourceTypeBroker) {
		add(strconv.Itoa(int(c.G.Cfg.NodeID)), kmsg.ConfigResourceTypeBroker)
	}
	if want(kmsg.ConfigResourceTypeTopic) {
		topics, err := c.G.Store.Topics(c.Ctx, c.G.Cfg.Stream)
		if err != nil {
			return fail(err)
		}
		for _, t := range topics {
			if c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, t.Name) {
				add(t.Name, kmsg.ConfigResourceTypeTopic)
			}
		}
	}
	return resp, nil
}
