package handlers

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeReq(v int16, typ kmsg.ConfigResourceType, name string, names ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = v
	req.IncludeSynonyms, req.IncludeDocumentation = v >= 1, v >= 3
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	if len(names) > 0 {
		r.ConfigNames = names
	}
	req.Resources = append(req.Resources, r)
	return req
}

func describeTopicConfigs(t *testing.T, g *Gateway, v int16, topic string) (int16, map[string]kmsg.DescribeConfigsResponseResourceConfig) {
	t.Helper()
	resp := do(t, g, describeReq(v, kmsg.ConfigResourceTypeTopic, topic)).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 {
		t.Fatalf("%d resources", len(resp.Resources))
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return resp.Resources[0].ErrorCode, out
}

func incAlter(t *testing.T, g *Gateway, validate bool, topic string, ops ...any) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	return incAlterResource(t, g, kmsg.ConfigResourceTypeTopic, topic, validate, ops...)
}

func value(c kmsg.DescribeConfigsResponseResourceConfig) string {
	if c.Value == nil {
		return "<null>"
	}
	return *c.Value
}

// A topic created with configs describes them as DYNAMIC_TOPIC_CONFIG and
// every other known config as this gateway's default.
func TestDescribeConfigsTopic(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	resp := do(t, g, createReq(7, withConfig(ct("dc", 2, -1), "cleanup.policy", "compact", "retention.ms", "3600000", "segment.bytes", "<null>"))).(*kmsg.CreateTopicsResponse)
	if st := resp.Topics[0]; st.ErrorCode != 0 || st.ReplicationFactor != 1 || len(st.Configs) != len(topicConfigNames) {
		t.Fatalf("create: %+v", st)
	}
	for _, v := range []int16{0, 1, 3, 4} {
		code, cs := describeTopicConfigs(t, g, v, "dc")
		if code != 0 || len(cs) != len(topicConfigNames) {
			t.Fatalf("v%d: code %d, %d configs", v, code, len(cs))
		}
		cp, rm, rb, sb := cs["cleanup.policy"], cs["retention.ms"], cs["retention.bytes"], cs["segment.bytes"]
		if value(cp) != "compact" || value(rm) != "3600000" || value(rb) != "-1" || value(sb) != "1073741824" {
			t.Errorf("v%d values: %s %s %s %s", v, value(cp), value(rm), value(rb), value(sb))
		}
		if cp.IsDefault || !rb.IsDefault || !sb.IsDefault {
			t.Errorf("v%d is_default: %v %v %v", v, cp.IsDefault, rb.IsDefault, sb.IsDefault)
		}
		if v == 0 {
			continue
		}
		if cp.Source != kmsg.ConfigSourceDynamicTopicConfig || rb.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("v%d sources: %v %v", v, cp.Source, rb.Source)
		}
		if len(rm.ConfigSynonyms) != 2 || rm.ConfigSynonyms[1].Name != "log.retention.ms" || value(kmsg.DescribeConfigsResponseResourceConfig{Value: rm.ConfigSynonyms[1].Value}) != "-1" {
			t.Errorf("v%d retention.ms synonyms: %+v", v, rm.ConfigSynonyms)
		}
		if v >= 3 {
			if cp.ConfigType != kmsg.ConfigTypeList || cp.Documentation == nil || !strings.Contains(*cp.Documentation, "never deletes from a compacted topic") {
				t.Errorf("v%d cleanup.policy type %v doc %v", v, cp.ConfigType, cp.Documentation)
			}
		} else if cp.Documentation != nil {
			t.Errorf("v%d: documentation not asked for", v)
		}
	}
	// A filter; unknown names are skipped.
	resp2 := do(t, g, describeReq(4, kmsg.ConfigResourceTypeTopic, "dc", "retention.ms", "made.up")).(*kmsg.DescribeConfigsResponse)
	if cs := resp2.Resources[0].Configs; len(cs) != 1 || cs[0].Name != "retention.ms" {
		t.Errorf("filtered: %+v", cs)
	}
	if code, _ := describeTopicConfigs(t, g, 4, "missing"); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing topic: %d", code)
	}
	if code, _ := describeTopicConfigs(t, g, 4, "a*b"); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("bad name: %d", code)
	}
}

func TestDescribeConfigsBroker(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	resp := do(t, g, describeReq(4, kmsg.ConfigResourceTypeBroker, "1")).(*kmsg.DescribeConfigsResponse)
	r := resp.Resources[0]
	got := map[string]string{}
	for _, c := range r.Configs {
		d := brokerDynamic[c.Name]
		if c.ReadOnly != (d == nil || d.readOnly) || c.Source != kmsg.ConfigSourceStaticBrokerConfig || c.Documentation == nil {
			t.Errorf("%s: read-only %v source %v", c.Name, c.ReadOnly, c.Source)
		}
		got[c.Name] = *c.Value
	}
	want := map[string]string{"num.partitions": "3", "auto.create.topics.enable": "true", "default.replication.factor": "1",
		"min.insync.replicas": "1", "log.retention.ms": "-1", "broker.id": "1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	g2 := newGateway(t, noAutoCreate)
	resp = do(t, g2, describeReq(4, kmsg.ConfigResourceTypeBroker, "1", "auto.create.topics.enable")).(*kmsg.DescribeConfigsResponse)
	if cs := resp.Resources[0].Configs; len(cs) != 1 || *cs[0].Value != "false" {
		t.Errorf("auto.create.topics.enable with auto-creation off: %+v", cs)
	}
	resp = do(t, g, describeReq(4, kmsg.ConfigResourceTypeBroker, "")).(*kmsg.DescribeConfigsResponse)
	if r := resp.Resources[0]; r.ErrorCode != 0 || len(r.Configs) != 0 {
		t.Errorf("cluster defaults: %+v", r)
	}
	resp = do(t, g, describeReq(4, kmsg.ConfigResourceTypeBroker, "7")).(*kmsg.DescribeConfigsResponse)
	if r := resp.Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("other broker: %+v", r)
	}
	resp = do(t, g, describeReq(4, kmsg.ConfigResourceTypeClientMetrics, "m")).(*kmsg.DescribeConfigsResponse)
	if r := resp.Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("client metrics: %+v", r)
	}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "ia", 2)
	const (
		set = kmsg.IncrementalAlterConfigOpSet
		del = kmsg.IncrementalAlterConfigOpDelete
		app = kmsg.IncrementalAlterConfigOpAppend
		sub = kmsg.IncrementalAlterConfigOpSubtract
	)
	if r := incAlter(t, g, false, "ia", "retention.ms", set, "86400000", "cleanup.policy", app, "compact"); r.ErrorCode != 0 {
		t.Fatalf("set: %+v", r)
	}
	_, cs := describeTopicConfigs(t, g, 4, "ia")
	if value(cs["retention.ms"]) != "86400000" || value(cs["cleanup.policy"]) != "delete,compact" {
		t.Fatalf("after set: %s %s", value(cs["retention.ms"]), value(cs["cleanup.policy"]))
	}
	// Refusals name the config and change nothing (all or nothing).
	for _, tc := range []struct {
		ops  []any
		code int16
		name string
	}{
		{[]any{"retention.ms", set, "1", "made.up", set, "1"}, kerr.InvalidConfig.Code, "made.up"},
		{[]any{"retention.ms", set, "soon"}, kerr.InvalidConfig.Code, "retention.ms"},
		{[]any{"message.timestamp.type", set, "AppendTime"}, kerr.InvalidConfig.Code, "message.timestamp.type"},
		{[]any{"retention.ms", app, "1"}, kerr.InvalidConfig.Code, "retention.ms"},
		{[]any{"cleanup.policy", sub, "delete,compact"}, kerr.InvalidConfig.Code, "cleanup.policy"},
		{[]any{"retention.ms", set, "<null>"}, kerr.InvalidRequest.Code, "retention.ms"},
		{[]any{"retention.ms", set, "1", "retention.ms", del, ""}, kerr.InvalidRequest.Code, "retention.ms"},
	} {
		r := incAlter(t, g, false, "ia", tc.ops...)
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, tc.name) {
			t.Errorf("%v: code %d message %v", tc.ops, r.ErrorCode, r.ErrorMessage)
		}
	}
	if r := incAlter(t, g, true, "ia", "retention.ms", set, "5"); r.ErrorCode != 0 {
		t.Fatalf("validate only: %+v", r)
	}
	_, cs = describeTopicConfigs(t, g, 4, "ia")
	if value(cs["retention.ms"]) != "86400000" {
		t.Fatalf("a refused or validate-only change was kept: %s", value(cs["retention.ms"]))
	}
	if r := incAlter(t, g, false, "ia", "retention.ms", del, "<null>", "cleanup.policy", sub, "delete"); r.ErrorCode != 0 {
		t.Fatalf("delete: %+v", r)
	}
	_, cs = describeTopicConfigs(t, g, 4, "ia")
	if rm := cs["retention.ms"]; value(rm) != "-1" || rm.Source != kmsg.ConfigSourceDefaultConfig || value(cs["cleanup.policy"]) != "compact" {
		t.Fatalf("after delete: %+v %s", rm, value(cs["cleanup.policy"]))
	}
	if r := incAlter(t, g, false, "nope", "retention.ms", set, "1"); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("missing topic: %+v", r)
	}
	// A static broker config cannot change (broker_configs_test.go has
	// the dynamic ones).
	br := incAlterResource(t, g, kmsg.ConfigResourceTypeBroker, "1", false, "num.partitions", set, "9")
	if br.ErrorCode != kerr.InvalidRequest.Code || *br.ErrorMessage != "Cannot update these configs dynamically: [num.partitions]" {
		t.Errorf("broker alter: %+v", br)
	}
}

// AlterConfigs replaces the whole set: what is left out returns to its
// default.
func TestAlterConfigs(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	do(t, g, createReq(7, withConfig(ct("ac", 1, 1), "cleanup.policy", "compact", "retention.bytes", "1000")))
	alter := func(validate bool, kv ...string) kmsg.AlterConfigsResponseResource {
		return alterResource(t, g, kmsg.ConfigResourceTypeTopic, "ac", validate, kv...)
	}
	if r := alter(false, "retention.ms", "1000", "segment.ms", "60000"); r.ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	_, cs := describeTopicConfigs(t, g, 4, "ac")
	if value(cs["cleanup.policy"]) != "delete" || !cs["cleanup.policy"].IsDefault || value(cs["retention.ms"]) != "1000" ||
		value(cs["segment.ms"]) != "60000" || value(cs["retention.bytes"]) != "-1" {
		t.Fatalf("after alter: %s %s %s %s", value(cs["cleanup.policy"]), value(cs["retention.ms"]), value(cs["segment.ms"]), value(cs["retention.bytes"]))
	}
	if r := alter(false, "min.insync.replicas", "2"); r.ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(*r.ErrorMessage, "min.insync.replicas") {
		t.Errorf("fixed config: %+v", r)
	}
	if r := alter(true); r.ErrorCode != 0 {
		t.Errorf("validate only: %+v", r)
	}
	if _, cs = describeTopicConfigs(t, g, 4, "ac"); value(cs["retention.ms"]) != "1000" {
		t.Errorf("validate-only or refused alter changed configs")
	}
}

// The DescribeConfigs v1 body of a topic with two configs is pinned byte
// for byte. Regenerate with: go test ./handlers -run Golden -update
func TestGoldenDescribeConfigs(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	do(t, g, createReq(7, withConfig(ct("golden", 1, 1), "cleanup.policy", "compact", "retention.ms", "60000")))
	wireGolden(t, "32_describe_configs_v1_resp.hex", do(t, g, describeReq(1, kmsg.ConfigResourceTypeTopic, "golden", "cleanup.policy", "retention.ms", "retention.bytes")))
}

// Replication factor 3 (Kafka Connect's default for its internal topics)
// is refused as a one-broker Kafka refuses it; -1 and no assignment are a
// one-broker cluster's replication factor 1.
func TestCreateTopicsReplicationFactor(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	st := do(t, g, createReq(7, ct("rf3", 1, 3))).(*kmsg.CreateTopicsResponse).Topics[0]
	if st.ErrorCode != kerr.InvalidReplicationFactor.Code || st.ErrorMessage == nil || !strings.Contains(*st.ErrorMessage, "only 1 broker(s) are registered") {
		t.Errorf("rf 3: %d %v", st.ErrorCode, st.ErrorMessage)
	}
	st = do(t, g, createReq(7, ct("rfm1", -1, -1))).(*kmsg.CreateTopicsResponse).Topics[0]
	if st.ErrorCode != 0 || st.ReplicationFactor != 1 || st.NumPartitions != 3 {
		t.Errorf("rf -1: %+v", st)
	}
}
