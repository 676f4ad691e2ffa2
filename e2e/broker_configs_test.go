package e2e

// Dynamic broker configs and broker loggers with the tool a user reaches
// for, kafka-configs --entity-type brokers / broker-loggers, on the
// gateway binary: set per broker and as the cluster default, described
// with Kafka's sources and synonyms, honoured (log.message.timestamp.type)
// and kept across a restart (handlers/broker_configs.go).

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestBrokerConfigsKafkaTools(t *testing.T) {
	t.Parallel()
	needJava(t)
	dir := t.TempDir()
	gw := spawnGateway(t, dir)
	const configs = configsClass
	tool := func(addr string, args ...string) (string, error) {
		t.Helper()
		out, errOut, err := javaRun(t, 90*time.Second, "", configs, append([]string{"--bootstrap-server", addr}, args...)...)
		return out + errOut, err
	}
	must := func(addr string, args ...string) string {
		t.Helper()
		out, err := tool(addr, args...)
		if err != nil {
			t.Fatalf("kafka-configs %v: %v\n%s", args, err, tail(out, 40))
		}
		return out
	}
	broker := []string{"--entity-type", "brokers", "--entity-name", "1"}
	def := []string{"--entity-type", "brokers", "--entity-default"}
	must(gw.Addr, append([]string{"--alter", "--add-config", "leader.replication.throttled.rate=1000,replica.alter.log.dirs.io.max.bytes.per.second=300"}, broker...)...)
	must(gw.Addr, append([]string{"--alter", "--add-config", "leader.replication.throttled.rate=5000,log.message.timestamp.type=LogAppendTime"}, def...)...)

	// The tool prints each config with its synonyms, in Kafka's order.
	wantBroker := []string{
		`(?m)^Dynamic configs for broker 1 are:$`,
		`(?m)^  leader\.replication\.throttled\.rate=1000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:leader\.replication\.throttled\.rate=1000, DYNAMIC_DEFAULT_BROKER_CONFIG:leader\.replication\.throttled\.rate=5000\}$`,
		`(?m)^  replica\.alter\.log\.dirs\.io\.max\.bytes\.per\.second=300 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:replica\.alter\.log\.dirs\.io\.max\.bytes\.per\.second=300\}$`,
	}
	wantDefault := []string{
		`(?m)^Default configs for brokers in the cluster are:$`,
		`(?m)^  leader\.replication\.throttled\.rate=5000 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:leader\.replication\.throttled\.rate=5000\}$`,
		`(?m)^  log\.message\.timestamp\.type=LogAppendTime sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:log\.message\.timestamp\.type=LogAppendTime\}$`,
	}
	check := func(addr, when string) {
		t.Helper()
		for what, c := range map[string]struct {
			args []string
			want []string
		}{"broker 1": {broker, wantBroker}, "the cluster default": {def, wantDefault}} {
			out := must(addr, append([]string{"--describe"}, c.args...)...)
			for _, w := range c.want {
				if !regexp.MustCompile(w).MatchString(out) {
					t.Errorf("%s: describe %s lacks %s:\n%s", when, what, w, out)
				}
			}
		}
		out := must(addr, append([]string{"--describe", "--all"}, broker...)...)
		for _, w := range []string{
			"log.message.timestamp.type=LogAppendTime sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.message.timestamp.type=LogAppendTime, STATIC_BROKER_CONFIG:log.message.timestamp.type=CreateTime}",
			"num.partitions=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:num.partitions=1}",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: describe --all lacks %s:\n%s", when, w, out)
			}
		}
	}
	check(gw.Addr, "set")

	// Refused as a Kafka broker refuses them, naming the config.
	for _, c := range []struct{ config, want string }{
		{"num.partitions=5", "Cannot update these configs dynamically: [num.partitions]"},
		{"leader.replication.throttled.rate=-1", "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"},
	} {
		if out, err := tool(gw.Addr, append([]string{"--alter", "--add-config", c.config}, broker...)...); err == nil || !strings.Contains(out, c.want) {
			t.Errorf("--add-config %s: err %v\n%s", c.config, err, tail(out, 20))
		}
	}

	// The cluster's LogAppendTime applies to a topic that sets none.
	cl := clientWithTopic(t, gw.Addr, "bcfg-lat", 1)
	before := time.Now().Add(-time.Second)
	old := time.Now().Add(-time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bcfg-lat", Value: []byte("v"), Timestamp: old}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consume(t, gw.Addr, "bcfg-lat", atLeast(1))
	if r := got[0]; r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before) {
		t.Errorf("record timestamp %v (type %d): the producer's (%v), not the append time", r.Timestamp, r.Attrs.TimestampType(), old)
	}
	cl.Close()

	// Broker loggers: the root logger at --log-level (debug), changed at
	// once, not kept over a restart (as on Kafka).
	logger := []string{"--entity-type", "broker-loggers", "--entity-name", "1"}
	if out := must(gw.Addr, append([]string{"--describe"}, logger...)...); !strings.Contains(out, "root=DEBUG sensitive=false synonyms={}") {
		t.Errorf("broker-loggers --describe:\n%s", out)
	}
	must(gw.Addr, append([]string{"--alter", "--add-config", "root=WARN"}, logger...)...)
	if out := must(gw.Addr, append([]string{"--describe"}, logger...)...); !strings.Contains(out, "root=WARN") {
		t.Errorf("broker-loggers after root=WARN:\n%s", out)
	}

	gw.Stop()
	gw2 := spawnGateway(t, dir)
	check(gw2.Addr, "after a restart")
	if out := must(gw2.Addr, append([]string{"--describe"}, logger...)...); !strings.Contains(out, "root=DEBUG") {
		t.Errorf("broker-loggers after a restart:\n%s", out)
	}
	must(gw2.Addr, append([]string{"--alter", "--delete-config", "leader.replication.throttled.rate,replica.alter.log.dirs.io.max.bytes.per.second"}, broker...)...)
	if out := must(gw2.Addr, append([]string{"--describe"}, broker...)...); strings.Contains(out, "DYNAMIC_BROKER_CONFIG") {
		t.Errorf("after --delete-config:\n%s", out)
	}
	gw2.Stop()
}
