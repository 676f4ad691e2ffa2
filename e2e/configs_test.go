package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// franz-go's kadm: topic configs at create, described, changed
// incrementally and by replacement; a static broker config refused as
// Kafka refuses one it cannot change at runtime. On Iggy the
// retention configs must also be the Iggy topic's own.
func TestConfigKadm(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	adm := kadm.NewClient(newClient(t, gw.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ret, compact := "604800000", "compact,delete"
	cr, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"retention.ms": &ret, "cleanup.policy": &compact}, "cfg-kadm")
	if err != nil || cr.Err != nil {
		t.Fatalf("create: %v %v", err, cr.Err)
	}
	describe := func() map[string]*kadm.Config {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, "cfg-kadm")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("cfg-kadm", nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe: %v %v", err, rc.Err)
		}
		out := map[string]*kadm.Config{}
		for i := range rc.Configs {
			out[rc.Configs[i].Key] = &rc.Configs[i]
		}
		return out
	}
	cs := describe()
	if v := cs["retention.ms"]; v.MaybeValue() != ret || v.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("retention.ms: %+v", v)
	}
	if v := cs["cleanup.policy"]; v.MaybeValue() != compact {
		t.Errorf("cleanup.policy: %+v", v)
	}
	if v := cs["retention.bytes"]; v.MaybeValue() != "-1" || v.Source.String() != "DEFAULT_CONFIG" {
		t.Errorf("retention.bytes: %+v", v)
	}
	if st, ok := gw.Store.(*iggy.Store); ok {
		// On Iggy, retention.ms is the topic's own message_expiry (µs).
		tp, found, err := st.Client().GetTopic(ctx, iggy.Name(gw.Stream), iggy.Name("cfg-kadm"))
		if err != nil || !found || tp.MessageExpiry != 604800000*1000 {
			t.Errorf("Iggy topic message_expiry %d (found %v, %v)", tp.MessageExpiry, found, err)
		}
	} else if iggyBackend() {
		t.Fatalf("iggy backend but store %T", gw.Store)
	}

	day := "86400000"
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: &day},
		{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kmsgStr("delete")},
	}, "cfg-kadm")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("incremental alter: %v %+v", err, ar)
	}
	cs = describe()
	if cs["retention.ms"].MaybeValue() != day || cs["cleanup.policy"].MaybeValue() != "compact" {
		t.Errorf("after incremental alter: %s %s", cs["retention.ms"].MaybeValue(), cs["cleanup.policy"].MaybeValue())
	}
	ar, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "made.up", Value: &day}}, "cfg-kadm")
	if err != nil || !errors.Is(ar[0].Err, kerr.InvalidConfig) || !strings.Contains(ar[0].ErrMessage, "made.up") {
		t.Errorf("unknown config: %v %+v", err, ar)
	}

	// AlterConfigs (non-incremental): what is left out returns to default.
	ar, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: &day}}, "cfg-kadm")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, ar)
	}
	cs = describe()
	if cs["segment.ms"].MaybeValue() != day || cs["retention.ms"].MaybeValue() != "-1" || cs["cleanup.policy"].MaybeValue() != "delete" {
		t.Errorf("after alter: %s %s %s", cs["segment.ms"].MaybeValue(), cs["retention.ms"].MaybeValue(), cs["cleanup.policy"].MaybeValue())
	}

	brs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	br, err := brs.On("1", nil)
	if err != nil || br.Err != nil {
		t.Fatalf("broker describe: %v %v", err, br.Err)
	}
	found := false
	for i := range br.Configs {
		if c := &br.Configs[i]; c.Key == "auto.create.topics.enable" {
			found = c.MaybeValue() == "true" && c.Source.String() == "STATIC_BROKER_CONFIG"
		}
	}
	if !found {
		t.Errorf("auto.create.topics.enable not reported true from the static broker config: %+v", br.Configs)
	}
	bar, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: &day}}, 1)
	if err != nil || !errors.Is(bar[0].Err, kerr.InvalidRequest) || bar[0].ErrMessage != "Cannot update these configs dynamically: [log.retention.ms]" {
		t.Errorf("broker alter: %v %+v", err, bar)
	}
}

func kmsgStr(s string) *string { return &s }

// CreateTopics of an existing topic with configs answers
// TOPIC_ALREADY_EXISTS, as Kafka 4.4.0 does, not INVALID_CONFIG:
// "create if missing" callers (Kafka Connect) depend on it.
func TestCreateTopicsExistingWithConfigs(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	adm := kadm.NewClient(newClient(t, gw.Addr))
	ctx := adminCtx(t)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "exists-cfg"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	bad, compact := "1", "compact"
	for _, cfg := range []map[string]*string{{"cleanup.policy": &compact}, {"made.up": &bad}} {
		// kadm returns the topic's error as err too.
		r, err := adm.CreateTopic(ctx, -1, -1, cfg, "exists-cfg")
		if !errors.Is(err, kerr.TopicAlreadyExists) || !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			t.Errorf("configs %v: %v %v", cfg, err, r.Err)
		}
	}
}

// The Java AdminClient (e2e/java/ConfigsAdmin.java).
func TestConfigJavaAdmin(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	src := javaSource(t, "java/ConfigsAdmin.java")
	out, errOut, err := javaRun(t, 120*time.Second, "", src, gw.Addr, "cfg-java")
	if err != nil || strings.TrimSpace(out) != "OK" {
		t.Fatalf("ConfigsAdmin: %v\nstdout: %s\nstderr: %s", err, out, tail(errOut, 60))
	}
}

// kafka-topics and kafka-configs, the commands a new user reaches for.
func TestConfigKafkaTools(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	tool := func(class string, args ...string) string {
		t.Helper()
		out, _ := kafkaTool(t, gw.Addr, class, args...)
		return out
	}
	const topics, configs = "org.apache.kafka.tools.TopicCommand", configsClass
	tool(topics, "--create", "--topic", "cfg-tools", "--partitions", "2", "--config", "retention.ms=604800000", "--config", "cleanup.policy=compact")
	out := tool(topics, "--describe", "--topic", "cfg-tools")
	if !strings.Contains(out, "PartitionCount: 2") || !strings.Contains(out, "ReplicationFactor: 1") ||
		!strings.Contains(out, "cleanup.policy=compact") || !strings.Contains(out, "retention.ms=604800000") {
		t.Errorf("kafka-topics --describe:\n%s", out)
	}
	tool(configs, "--alter", "--entity-type", "topics", "--entity-name", "cfg-tools", "--add-config", "retention.ms=3600000,segment.ms=60000", "--delete-config", "cleanup.policy")
	out = tool(configs, "--describe", "--entity-type", "topics", "--entity-name", "cfg-tools")
	if !strings.Contains(out, "retention.ms=3600000") || !strings.Contains(out, "segment.ms=60000") || strings.Contains(out, "cleanup.policy=compact") {
		t.Errorf("kafka-configs --describe after --alter:\n%s", out)
	}
	out = tool(configs, "--describe", "--all", "--entity-type", "topics", "--entity-name", "cfg-tools")
	if !strings.Contains(out, "cleanup.policy=delete") || !strings.Contains(out, "retention.bytes=-1") {
		t.Errorf("kafka-configs --describe --all:\n%s", out)
	}
	out = tool(configs, "--describe", "--all", "--entity-type", "brokers", "--entity-name", "1")
	if !strings.Contains(out, "auto.create.topics.enable=true") || !strings.Contains(out, "num.partitions=1") {
		t.Errorf("kafka-configs --describe brokers:\n%s", out)
	}
	// A broker config cannot change: the tool fails and names it.
	bout, berr, err := javaRun(t, 90*time.Second, "", configs, "--bootstrap-server", gw.Addr,
		"--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "log.retention.ms=1000")
	if err == nil {
		t.Errorf("kafka-configs --alter brokers succeeded:\n%s\n%s", bout, berr)
	} else if !strings.Contains(bout+berr, "log.retention.ms") {
		t.Errorf("kafka-configs --alter brokers refusal does not name the config:\n%s\n%s", bout, berr)
	}
}
