package e2e

// Group configs (KIP-848's ConfigResource type GROUP) with the tool a
// user reaches for, kafka-configs --entity-type groups, and their effect
// on a consumer group's heartbeats.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestGroupConfigsKafkaTools(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	tool := func(args ...string) (string, error) {
		t.Helper()
		out, errOut, err := javaRun(t, 90*time.Second, "", configsClass, append([]string{"--bootstrap-server", gw.Addr}, args...)...)
		return out + errOut, err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := tool(args...)
		if err != nil {
			t.Fatalf("kafka-configs %v: %v\n%s", args, err, tail(out, 40))
		}
		return out
	}
	must("--alter", "--entity-type", "groups", "--entity-name", "cfg-group",
		"--add-config", "consumer.heartbeat.interval.ms=6000,consumer.session.timeout.ms=50000")
	// Without --all the tool first lists the config resources
	// (ListConfigResources v1), then describes the group's dynamic configs.
	out := must("--describe", "--entity-type", "groups", "--entity-name", "cfg-group")
	if !strings.Contains(out, "consumer.heartbeat.interval.ms=6000") || !strings.Contains(out, "consumer.session.timeout.ms=50000") ||
		strings.Contains(out, "share.isolation.level") {
		t.Errorf("kafka-configs --describe groups:\n%s", out)
	}
	out = must("--describe", "--all", "--entity-type", "groups", "--entity-name", "cfg-group")
	if !strings.Contains(out, "consumer.session.timeout.ms=50000") || !strings.Contains(out, "share.isolation.level=read_uncommitted") ||
		!strings.Contains(out, "streams.num.standby.replicas=0") {
		t.Errorf("kafka-configs --describe --all groups:\n%s", out)
	}
	// Out of Kafka's bounds: refused, naming the bound, as Kafka 4.1 does.
	if out, err := tool("--alter", "--entity-type", "groups", "--entity-name", "cfg-group", "--add-config", "consumer.session.timeout.ms=10000"); err == nil ||
		!strings.Contains(out, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms") {
		t.Errorf("a session timeout below the minimum: err %v\n%s", err, tail(out, 20))
	}
	if out, err := tool("--alter", "--entity-type", "groups", "--entity-name", "cfg-group", "--add-config", "no.such.config=1"); err == nil ||
		!strings.Contains(out, "Unknown group config name: no.such.config") {
		t.Errorf("an unknown group config: err %v\n%s", err, tail(out, 20))
	}

	// A consumer-protocol member of the group is told the group's
	// interval; once the config is deleted, the default.
	cl := clientWithTopic(t, gw.Addr, "cfg-group-topic", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	beat := func(epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "cfg-group", "member-cfg-1", epoch
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{"cfg-group-topic"}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat epoch %d: error %d %v", epoch, resp.ErrorCode, resp.ErrorMessage)
		}
		return resp
	}
	first := beat(0)
	if first.HeartbeatIntervalMillis != 6000 {
		t.Errorf("heartbeat interval %d ms, want the group's 6000", first.HeartbeatIntervalMillis)
	}
	must("--alter", "--entity-type", "groups", "--entity-name", "cfg-group", "--delete-config", "consumer.heartbeat.interval.ms")
	if r := beat(first.MemberEpoch); r.HeartbeatIntervalMillis != 5000 {
		t.Errorf("after --delete-config: interval %d ms, want the default 5000", r.HeartbeatIntervalMillis)
	}
	// The group's configs outlive its deletion, as on Kafka.
	beat(-1)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"cfg-group"}
	if resp, err := del.RequestWith(ctx, cl); err != nil || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %v %+v", err, resp)
	}
	if out := must("--describe", "--entity-type", "groups", "--entity-name", "cfg-group"); !strings.Contains(out, "consumer.session.timeout.ms=50000") {
		t.Errorf("after DeleteGroups:\n%s", out)
	}
}

// Group configs survive a restart of the gateway binary (kill -9).
func TestGroupConfigsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gw := spawnGateway(t, dir)
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = 32, "restart-group"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "consumer.session.timeout.ms", kmsg.StringPtr("55000")
	r.Configs = append(r.Configs, c)
	alter.Resources = append(alter.Resources, r)
	cl := newClient(t, gw.Addr)
	resp, err := alter.RequestWith(adminCtx(t), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	cl.Close()
	gw.Kill()

	gw2 := spawnGateway(t, dir)
	cl2 := newClient(t, gw2.Addr, kgo.RetryTimeout(30*time.Second))
	desc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = 32, "restart-group"
	dr.ConfigNames = []string{"consumer.session.timeout.ms"}
	desc.Resources = append(desc.Resources, dr)
	dresp, err := desc.RequestWith(adminCtx(t), cl2)
	if err != nil || len(dresp.Resources) != 1 || dresp.Resources[0].ErrorCode != 0 || len(dresp.Resources[0].Configs) != 1 {
		t.Fatalf("describe after restart: %v %+v", err, dresp)
	}
	got := dresp.Resources[0].Configs[0]
	if got.Value == nil || *got.Value != "55000" || got.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after restart: %v source %v, want 55000 from GROUP_CONFIG", got.Value, got.Source)
	}
	lcr := kmsg.NewPtrListConfigResourcesRequest()
	lcr.ResourceTypes = []int8{32}
	lresp, err := lcr.RequestWith(adminCtx(t), cl2)
	if err != nil || lresp.ErrorCode != 0 || len(lresp.ConfigResources) != 1 || lresp.ConfigResources[0].Name != "restart-group" {
		t.Fatalf("ListConfigResources groups after restart: %v %+v", err, lresp)
	}
}
