package handlers

// Glue between StreamsGroupHeartbeat and topic creation: the internal
// topics a streams group's topology needs are created through the same
// checks as CreateTopics.

import (
	"context"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/group"
)

// StartStreamsGroups loads the streams groups an earlier run kept (not in
// cluster mode). Before the gateway serves.
func (g *Gateway) StartStreamsGroups(ctx context.Context) error {
	return g.coordinator().LoadStreams(ctx)
}

// statusMissingInternalTopics is StreamsGroupHeartbeat's status code for
// internal topics not there yet.
const statusMissingInternalTopics int8 = 3

// createStreamsTopics creates the internal topics a streams group misses,
// as a CreateTopics of them would (the caller's CREATE permission, the
// topic checks, the configs the topology gives); what fails is appended to
// the MISSING_INTERNAL_TOPICS status of resp. A worker: it calls the store.
func (c *Call) createStreamsTopics(resp *kmsg.StreamsGroupHeartbeatResponse, topics []group.StreamsTopic) {
	var failed []string
	// The next heartbeat lists the topics afresh and finds these.
	defer c.G.coordinator().TopicsChanged()
	for _, t := range topics {
		if !c.mayCreateTopic(t.Name) {
			failed = append(failed, "Unauthorized to CREATE on topics "+t.Name+".")
			continue
		}
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Name, t.Partitions, -1
		for _, kv := range t.Configs {
			rc := kmsg.NewCreateTopicsRequestTopicConfig()
			rc.Name, rc.Value = kv[0], kmsg.StringPtr(kv[1])
			rt.Configs = append(rt.Configs, rc)
		}
		n, cfg, code, msg := c.checkCreate(&rt, false)
		if code == kerr.TopicAlreadyExists.Code {
			continue // created since the coordinator listed the topics
		}
		if code != 0 {
			failed = append(failed, t.Name+": "+msg)
			continue
		}
		switch _, err := c.createTopicWithConfigs(t.Name, n, cfg); {
		case errors.Is(err, bridge.ErrTopicExists):
			// Another member's heartbeat created it meanwhile.
		case err != nil:
			failed = append(failed, t.Name+": "+err.Error())
		default:
			c.G.Log.Info("streams group internal topic created", "topic", t.Name, "partitions", n)
		}
	}
	if len(failed) == 0 {
		return
	}
	for i := range resp.Status {
		if resp.Status[i].StatusCode == statusMissingInternalTopics {
			resp.Status[i].StatusDetail += " Creating them failed: " + strings.Join(failed, " ")
		}
	}
}
