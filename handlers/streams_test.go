package handlers

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// streamsJoin is a Kafka Streams word count's first heartbeat: lines ->
// app-words-repartition -> counts (with a changelog).
func streamsJoin(group, member, input string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, group, member, 30000
	req.ProcessID = kmsg.StringPtr("process-" + member)
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{input}, []string{group + "-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rp := kmsg.NewTopicInfo()
	rp.Topic = group + "-words-repartition"
	rp.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}, {Key: "retention.ms", Value: "-1"}}
	cl := kmsg.NewTopicInfo()
	cl.Topic = group + "-counts-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.RepartitionSourceTopics, s1.StateChangelogTopics = []kmsg.TopicInfo{rp}, []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	req.Topology = &t
	return req
}

// The first heartbeat creates the internal topics, sized from the source
// and with the topology's configs; the next one assigns every task.
// StreamsGroupDescribe shows the resolved partition counts.
func TestStreamsGroupHeartbeatCreatesInternalTopics(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "lines", 3)
	// No initial rebalance delay: the second heartbeat gets the tasks.
	if err := g.Store.SetGroupConfigs(context.Background(), g.Cfg.Stream, "wc", bridge.GroupConfigs{"streams.initial.rebalance.delay.ms": "0"}); err != nil {
		t.Fatal(err)
	}
	resp := do(t, g, streamsJoin("wc", "m1", "lines")).(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode != 0 || len(resp.Status) != 1 || resp.Status[0].StatusCode != statusMissingInternalTopics ||
		resp.Status[0].StatusDetail != "Internal topics are missing: wc-words-repartition, wc-counts-changelog" {
		t.Fatalf("join: code %d, status %+v", resp.ErrorCode, resp.Status)
	}
	for name, policy := range map[string]string{"wc-words-repartition": "delete", "wc-counts-changelog": "compact"} {
		ti, err := g.Store.Topic(context.Background(), g.Cfg.Stream, name)
		if err != nil || ti.Partitions != 3 {
			t.Fatalf("%s: %+v %v, want 3 partitions", name, ti, err)
		}
		cfg, err := g.Store.TopicConfigs(context.Background(), g.Cfg.Stream, name)
		if err != nil || cfg["cleanup.policy"] != policy {
			t.Fatalf("%s configs: %v %v, want cleanup.policy=%s", name, cfg, err, policy)
		}
	}
	next := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	next.Version, next.Group, next.MemberID, next.MemberEpoch = 1, "wc", "m1", resp.MemberEpoch
	resp = do(t, g, next).(*kmsg.StreamsGroupHeartbeatResponse)
	tasks := 0
	for _, ts := range resp.ActiveTasks {
		tasks += len(ts.Partitions)
	}
	if resp.ErrorCode != 0 || len(resp.Status) != 0 || tasks != 6 || resp.TopologyDescriptionRequired {
		t.Fatalf("second heartbeat: code %d, status %+v, %d tasks, description required %v", resp.ErrorCode, resp.Status, tasks, resp.TopologyDescriptionRequired)
	}
	desc := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	desc.Group, desc.MemberID, desc.TopologyEpoch = "wc", "m1", 0
	desc.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{{SubtopologyID: "0"}}
	// As a Kafka 4.4 broker without a topology description plugin.
	if r := do(t, g, desc).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("topology description: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Version, dreq.Groups, dreq.IncludeTopologyDescription = 1, []string{"wc"}, true
	d := do(t, g, dreq).(*kmsg.StreamsGroupDescribeResponse).Groups[0]
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 || d.TopologyDescriptionStatus != 1 || d.TopologyDescription != nil ||
		len(d.Topology.Subtopologies) != 2 || d.Topology.Subtopologies[1].StateChangelogTopics[0].NumPartitions != 3 {
		t.Fatalf("describe: %+v", d)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version, lg.TypesFilter = 5, []string{"streams"}
	if l := do(t, g, lg).(*kmsg.ListGroupsResponse); len(l.Groups) != 1 || l.Groups[0].Group != "wc" || l.Groups[0].GroupType != "streams" {
		t.Fatalf("list streams groups: %+v", l.Groups)
	}
}

// --streams-groups disabled leaves the keys and the feature out.
func TestStreamsGroupsDisabled(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		g := newGateway(t, func(c *Config) { c.StreamsGroupsDisabled = off })
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 4
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "1.2.3"
		resp := do(t, g, req).(*kmsg.ApiVersionsResponse)
		keys := 0
		for _, k := range resp.ApiKeys {
			if k.ApiKey == 88 || k.ApiKey == 89 || k.ApiKey == 93 {
				keys++
			}
		}
		feature := false
		for _, f := range resp.FinalizedFeatures {
			feature = feature || f.Name == "streams.version"
		}
		if want := !off; (keys == 3) != want || feature != want || (keys != 0 && off) {
			t.Errorf("disabled=%v: %d streams keys, streams.version %v", off, keys, feature)
		}
	}
}

// An internal topic the topology gives a config the gateway refuses is not
// created; the status says why, and the group gets no tasks.
func TestStreamsGroupInternalTopicBadConfig(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "lines", 2)
	req := streamsJoin("bad", "m1", "lines")
	req.Topology.Subtopologies[1].StateChangelogTopics[0].Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "bogus"}}
	resp := do(t, g, req).(*kmsg.StreamsGroupHeartbeatResponse)
	var detail string
	for _, s := range resp.Status {
		if s.StatusCode == statusMissingInternalTopics {
			detail = s.StatusDetail
		}
	}
	if resp.ErrorCode != 0 || !strings.Contains(detail, "Creating them failed: bad-counts-changelog:") || len(resp.ActiveTasks) != 0 {
		t.Fatalf("code %d, status %+v, tasks %v", resp.ErrorCode, resp.Status, resp.ActiveTasks)
	}
	if topicExists(g, "bad-counts-changelog") || !topicExists(g, "bad-words-repartition") {
		t.Fatalf("changelog created %v, repartition topic created %v", topicExists(g, "bad-counts-changelog"), topicExists(g, "bad-words-repartition"))
	}
}
