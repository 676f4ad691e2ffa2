package handlers

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/group"
)

// incAlterReq is an IncrementalAlterConfigs request of one resource of
// type typ named name; ops are (name, op, value) triples, value "<null>"
// for none.
func incAlterReq(typ kmsg.ConfigResourceType, name string, validate bool, ops ...any) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version, req.ValidateOnly = 1, validate
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i < len(ops); i += 3 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = ops[i].(string), ops[i+1].(kmsg.IncrementalAlterConfigOp)
		if v := ops[i+2].(string); v != "<null>" {
			c.Value = kmsg.StringPtr(v)
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return req
}

// incAlterResource sends incAlterReq and returns its one resource.
func incAlterResource(t *testing.T, g *Gateway, typ kmsg.ConfigResourceType, name string, validate bool, ops ...any) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	return do(t, g, incAlterReq(typ, name, validate, ops...)).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
}

// alterResource sends an AlterConfigs request of one resource and returns
// its answer; kv are name, value pairs, value "<null>" for none.
func alterResource(t *testing.T, g *Gateway, typ kmsg.ConfigResourceType, name string, validate bool, kv ...string) kmsg.AlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version, req.ValidateOnly = 2, validate
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name = kv[i]
		if kv[i+1] != "<null>" {
			c.Value = kmsg.StringPtr(kv[i+1])
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return do(t, g, req).(*kmsg.AlterConfigsResponse).Resources[0]
}

// refusal is one refused IncrementalAlterConfigs resource: its name,
// operations, and the code and message wanted.
type refusal struct {
	name string
	ops  []any
	code int16
	msg  string
}

// wantRefusal alters the resource (typ, name) with ops and fails t unless
// the answer is code with message msg.
func wantRefusal(t *testing.T, g *Gateway, typ kmsg.ConfigResourceType, name string, ops []any, code int16, msg string) {
	t.Helper()
	r := incAlterResource(t, g, typ, name, false, ops...)
	if r.ErrorCode != code || r.ErrorMessage == nil || *r.ErrorMessage != msg {
		got := "<null>"
		if r.ErrorMessage != nil {
			got = *r.ErrorMessage
		}
		t.Errorf("%v %q %v: code %d message %q, want %d %q", typ, name, ops, r.ErrorCode, got, code, msg)
	}
}

// brokerDescribe describes the BROKER resource name with synonyms, by
// config name.
func brokerDescribe(t *testing.T, g *Gateway, name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := describeReq(4, kmsg.ConfigResourceTypeBroker, name)
	req.IncludeSynonyms = true
	r := do(t, g, req).(*kmsg.DescribeConfigsResponse).Resources[0]
	if r.ErrorCode != 0 {
		t.Fatalf("describe broker %q: %d %v", name, r.ErrorCode, r.ErrorMessage)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range r.Configs {
		out[c.Name] = c
	}
	return out
}

// synonymsOf renders a config's synonyms as name=value/source, in order.
func synonymsOf(c kmsg.DescribeConfigsResponseResourceConfig) string {
	var parts []string
	for _, s := range c.ConfigSynonyms {
		v := "<null>"
		if s.Value != nil {
			v = *s.Value
		}
		parts = append(parts, s.Name+"="+v+"/"+s.Source.String())
	}
	return strings.Join(parts, " ")
}

const (
	cfgSet = kmsg.IncrementalAlterConfigOpSet
	cfgDel = kmsg.IncrementalAlterConfigOpDelete
	cfgApp = kmsg.IncrementalAlterConfigOpAppend
)

// Dynamic broker configs as Kafka keeps them: per broker and as the
// cluster default, each described with its source and its synonyms in
// Kafka's order; the throttles appear only once set.
func TestBrokerConfigsDynamic(t *testing.T) {
	t.Parallel()
	testBrokerConfigsDynamic(t, newGateway(t))
}

func TestBrokerConfigsDynamicOverIggyStore(t *testing.T) {
	t.Parallel()
	testBrokerConfigsDynamic(t, newGatewayOn(t, iggyStore(t)))
}

func testBrokerConfigsDynamic(t *testing.T, g *Gateway) {
	const rate = "leader.replication.throttled.rate"
	if _, ok := brokerDescribe(t, g, "1")[rate]; ok {
		t.Fatalf("%s listed before it is set", rate)
	}
	if r := incAlterResource(t, g, kmsg.ConfigResourceTypeBroker, "", false, rate, cfgSet, "2000", "log.message.timestamp.type", cfgSet, "LogAppendTime"); r.ErrorCode != 0 {
		t.Fatalf("set default: %+v %v", r, r.ErrorMessage)
	}
	if r := incAlterResource(t, g, kmsg.ConfigResourceTypeBroker, "1", false, rate, cfgSet, " 1000 ", "follower.replication.throttled.rate", cfgSet, "1000"); r.ErrorCode != 0 {
		t.Fatalf("set per broker: %+v %v", r, r.ErrorMessage)
	}
	cs := brokerDescribe(t, g, "1")
	if c := cs[rate]; value(c) != "1000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || !c.ReadOnly ||
		synonymsOf(c) != rate+"=1000/DYNAMIC_BROKER_CONFIG "+rate+"=2000/DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Errorf("%s: %s %v read-only %v synonyms %s", rate, value(c), c.Source, c.ReadOnly, synonymsOf(c))
	}
	if c := cs["log.message.timestamp.type"]; value(c) != "LogAppendTime" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || c.ReadOnly ||
		synonymsOf(c) != "log.message.timestamp.type=LogAppendTime/DYNAMIC_DEFAULT_BROKER_CONFIG log.message.timestamp.type=CreateTime/STATIC_BROKER_CONFIG" {
		t.Errorf("log.message.timestamp.type: %s %v read-only %v synonyms %s", value(c), c.Source, c.ReadOnly, synonymsOf(c))
	}
	if c := cs["num.partitions"]; c.Source != kmsg.ConfigSourceStaticBrokerConfig || !c.ReadOnly {
		t.Errorf("num.partitions: %v read-only %v", c.Source, c.ReadOnly)
	}
	defs := brokerDescribe(t, g, "")
	if len(defs) != 2 || synonymsOf(defs[rate]) != rate+"=2000/DYNAMIC_DEFAULT_BROKER_CONFIG" ||
		defs["log.message.timestamp.type"].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("cluster defaults: %+v", defs)
	}

	// A topic without its own message.timestamp.type takes the broker's:
	// described so, and Produce stamps the append time.
	createTopic(t, g, "bt", 1)
	req := describeReq(4, kmsg.ConfigResourceTypeTopic, "bt", "message.timestamp.type")
	req.IncludeSynonyms = true
	tc := do(t, g, req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs[0]
	if value(tc) != "LogAppendTime" || tc.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig || tc.IsDefault ||
		synonymsOf(tc) != "log.message.timestamp.type=LogAppendTime/DYNAMIC_DEFAULT_BROKER_CONFIG log.message.timestamp.type=CreateTime/DEFAULT_CONFIG" {
		t.Errorf("topic message.timestamp.type: %s %v synonyms %s", value(tc), tc.Source, synonymsOf(tc))
	}
	before := time.Now().UnixMilli()
	if p := produceOne(t, g, produceReq(11, "bt", 0, batch(rec{value: []byte("x"), ts: baseTs}))); p.ErrorCode != 0 || p.LogAppendTime < before {
		t.Fatalf("produce under the broker's LogAppendTime: code %d append time %d", p.ErrorCode, p.LogAppendTime)
	}
	// Deleted: back to the static value, at once for Produce.
	if r := incAlterResource(t, g, kmsg.ConfigResourceTypeBroker, "", false, "log.message.timestamp.type", cfgDel, "<null>"); r.ErrorCode != 0 {
		t.Fatalf("delete: %+v", r)
	}
	if p := produceOne(t, g, produceReq(11, "bt", 0, batch(rec{value: []byte("y"), ts: baseTs}))); p.ErrorCode != 0 || p.LogAppendTime != -1 {
		t.Fatalf("produce after the delete: code %d append time %d", p.ErrorCode, p.LogAppendTime)
	}

	// Kept by the store: a gateway over the same store (another process,
	// or another gateway of a cluster) sees them.
	g2 := newGatewayOn(t, g.Store)
	if c := brokerDescribe(t, g2, "1")[rate]; value(c) != "1000" {
		t.Errorf("another gateway over the store: %s", value(c))
	}
	// A gateway with another node id sees the default only.
	g3 := newGatewayOn(t, g.Store, func(c *Config) { c.NodeID = 2 })
	if c := brokerDescribe(t, g3, "2")[rate]; value(c) != "2000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("node 2: %s %v", value(c), c.Source)
	}

	// The key they are kept under is no group's.
	lr := kmsg.NewPtrListConfigResourcesRequest()
	lr.Version = 1
	for _, r := range do(t, g, lr).(*kmsg.ListConfigResourcesResponse).ConfigResources {
		if r.Type == int8(configResourceTypeGroup) {
			t.Errorf("ListConfigResources lists a group %q", r.Name)
		}
	}
	if k := brokerConfigsKey("2147483647"); len(k) != 255 || len(brokerConfigsKey("")) != 255 || len(k) <= group.MaxGroupIDLen {
		t.Errorf("key lengths %d %d", len(k), len(brokerConfigsKey("")))
	}
}

// What Kafka's broker refuses, with its codes and words; nothing of a
// refused or validate-only change is kept.
func TestBrokerConfigsRefused(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	const rate = "follower.replication.throttled.rate"
	for _, tc := range []refusal{
		{"1", []any{"num.partitions", cfgSet, "9"}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically: [num.partitions]"},
		{"1", []any{rate, cfgSet, "5", "made.up", cfgSet, "1", "log.dirs", cfgSet, "/x"}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically: [log.dirs, made.up]"},
		{"", []any{"message.max.bytes", cfgSet, "100"}, kerr.InvalidRequest.Code, "Cannot update these configs dynamically: [message.max.bytes]"},
		{"1", []any{rate, cfgSet, "-5"}, kerr.InvalidRequest.Code, "Invalid value -5 for configuration " + rate + ": Value must be at least 0"},
		{"1", []any{rate, cfgSet, "fast"}, kerr.InvalidRequest.Code, "Invalid value fast for configuration " + rate + ": Not a number of type LONG"},
		{"", []any{"log.message.timestamp.type", cfgSet, "AppendTime"}, kerr.InvalidRequest.Code,
			"Invalid value AppendTime for configuration log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"1", []any{rate, cfgApp, "5"}, kerr.InvalidConfig.Code, "Config value append is not allowed for config key: " + rate},
		{"1", []any{rate, cfgSet, "<null>"}, kerr.InvalidRequest.Code, "Null value not supported for : " + rate},
		{"1", []any{rate, cfgSet, "1", rate, cfgDel, ""}, kerr.InvalidRequest.Code, "Error due to duplicate config keys"},
		{"2", []any{rate, cfgSet, "5"}, kerr.InvalidRequest.Code, "Unexpected broker id, expected 1, but received 2"},
		{"one", []any{rate, cfgSet, "5"}, kerr.InvalidRequest.Code, "Node id must be an integer, but it is: one"},
	} {
		wantRefusal(t, g, kmsg.ConfigResourceTypeBroker, tc.name, tc.ops, tc.code, tc.msg)
	}
	// A DELETE of a config that cannot be set is a no-op, as on Kafka.
	if r := incAlterResource(t, g, kmsg.ConfigResourceTypeBroker, "1", false, "num.partitions", cfgDel, "<null>"); r.ErrorCode != 0 {
		t.Errorf("delete of a static config: %+v", r)
	}
	if r := incAlterResource(t, g, kmsg.ConfigResourceTypeBroker, "1", true, rate, cfgSet, "5"); r.ErrorCode != 0 {
		t.Fatalf("validate only: %+v", r)
	}
	if _, ok := brokerDescribe(t, g, "1")[rate]; ok {
		t.Errorf("a refused or validate-only change was kept")
	}
	dr := do(t, g, describeReq(4, kmsg.ConfigResourceTypeBroker, "x")).(*kmsg.DescribeConfigsResponse).Resources[0]
	if dr.ErrorCode != kerr.InvalidRequest.Code || *dr.ErrorMessage != "Broker id must be an integer, but it is: x" {
		t.Errorf("describe broker x: %+v", dr)
	}
}

// AlterConfigs replaces a scope's dynamic configs with the ones given.
func TestBrokerConfigsAlterConfigs(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	alter := func(validate bool, kv ...string) kmsg.AlterConfigsResponseResource {
		t.Helper()
		return alterResource(t, g, kmsg.ConfigResourceTypeBroker, "1", validate, kv...)
	}
	if r := alter(false, "leader.replication.throttled.rate", "10", "follower.replication.throttled.rate", "20"); r.ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if r := alter(false, "follower.replication.throttled.rate", "30"); r.ErrorCode != 0 {
		t.Fatalf("alter again: %+v", r)
	}
	cs := brokerDescribe(t, g, "1")
	if _, ok := cs["leader.replication.throttled.rate"]; ok || value(cs["follower.replication.throttled.rate"]) != "30" {
		t.Errorf("after the replacement: %+v", cs["leader.replication.throttled.rate"])
	}
	if r := alter(false, "follower.replication.throttled.rate", "<null>"); r.ErrorCode != kerr.InvalidRequest.Code ||
		*r.ErrorMessage != "Null value not supported for : follower.replication.throttled.rate" {
		t.Errorf("null: %+v", r)
	}
	if r := alter(false, "num.io.threads", "4"); r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != "Cannot update these configs dynamically: [num.io.threads]" {
		t.Errorf("non-dynamic: %+v", r)
	}
}

// ALTER_CONFIGS on the cluster for a change, DESCRIBE_CONFIGS to read.
func TestBrokerConfigsAuthorized(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	req := incAlterReq(kmsg.ConfigResourceTypeBroker, "1", false, "leader.replication.throttled.rate", cfgSet, "1")
	if got := doAs(t, g, "User:alice", req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; got.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice alters: %+v", got)
	}
	grant(t, g, acl(rtCluster, ptLit, "kafka-cluster", "User:alice", "*", int8(kmsg.ACLOperationAlterConfigs), allow))
	if got := doAs(t, g, "User:alice", req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; got.ErrorCode != 0 {
		t.Errorf("alice alters with ALTER_CONFIGS: %+v", got)
	}
	if got := doAs(t, g, "User:bob", describeReq(4, kmsg.ConfigResourceTypeBroker, "1")).(*kmsg.DescribeConfigsResponse).Resources[0]; got.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob describes: %+v", got)
	}
}

// BROKER_LOGGER: the root logger at the gateway's level, changed at once.
func TestBrokerLoggers(t *testing.T) {
	t.Parallel()
	lv := new(slog.LevelVar)
	g := newGateway(t, func(c *Config) { c.LogLevel = lv })
	describe := func(name string) kmsg.DescribeConfigsResponseResource {
		t.Helper()
		return do(t, g, describeReq(4, kmsg.ConfigResourceTypeBrokerLogger, name)).(*kmsg.DescribeConfigsResponse).Resources[0]
	}
	if r := describe("1"); r.ErrorCode != 0 || len(r.Configs) != 1 || r.Configs[0].Name != "root" || value(r.Configs[0]) != "INFO" ||
		r.Configs[0].Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
		t.Fatalf("describe: %+v", r)
	}
	if r := incAlterResource(t, g, kmsg.ConfigResourceTypeBrokerLogger, "1", true, "root", cfgSet, "DEBUG"); r.ErrorCode != 0 || lv.Level() != slog.LevelInfo {
		t.Fatalf("validate only: %+v, level %v", r, lv.Level())
	}
	if r := incAlterResource(t, g, kmsg.ConfigResourceTypeBrokerLogger, "1", false, "root", cfgSet, "TRACE"); r.ErrorCode != 0 || lv.Level() >= slog.LevelDebug {
		t.Fatalf("set TRACE: %+v, level %v", r, lv.Level())
	}
	if r := describe("1"); value(r.Configs[0]) != "TRACE" {
		t.Errorf("after TRACE: %s", value(r.Configs[0]))
	}
	for _, tc := range []refusal{
		{"1", []any{"root", cfgSet, "LOUD"}, kerr.InvalidConfig.Code, "Cannot set the log level of root to LOUD as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
		{"1", []any{"kafka.server", cfgSet, "INFO"}, kerr.InvalidConfig.Code, "Logger kafka.server does not exist!"},
		{"1", []any{"root", cfgDel, "<null>"}, kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"},
		{"1", []any{"root", cfgApp, "INFO"}, kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
		{"2", []any{"root", cfgSet, "INFO"}, kerr.InvalidRequest.Code, "Unexpected node id. Expected 1, but received 2"},
	} {
		wantRefusal(t, g, kmsg.ConfigResourceTypeBrokerLogger, tc.name, tc.ops, tc.code, tc.msg)
	}
	for name, msg := range map[string]string{"": "Broker id must not be empty", "2": "Unexpected broker id, expected 1 but received 2"} {
		if r := describe(name); r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != msg {
			t.Errorf("describe %q: %+v", name, r)
		}
	}
	// AlterConfigs (legacy) does not serve the type, as on Kafka.
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "1"
	req.Resources = append(req.Resources, r)
	if got := do(t, g, req).(*kmsg.AlterConfigsResponse).Resources[0]; got.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("AlterConfigs BROKER_LOGGER: %+v", got)
	}
}
