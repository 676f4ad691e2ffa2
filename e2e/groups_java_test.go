package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// The Java console consumer (classic protocol, auto commit) commits what it
// consumed and the next run of the group resumes there.
func TestGroupsJavaConsumerCommitResume(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	const topic, group = "g-java", "grp-java"
	clientWithTopic(t, gw.Addr, topic, 1)
	produceParts(t, gw.Addr, topic, 1, 30)
	run := func(n int, extra ...string) []string {
		args := append([]string{"--bootstrap-server", gw.Addr, "--topic", topic, "--group", group,
			"--max-messages", strconv.Itoa(n), "--timeout-ms", "30000",
			// One record per poll: the position (what is committed on
			// close) is then exactly what was printed.
			"--consumer-property", "max.poll.records=1"}, extra...)
		out, errOut, err := javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", args...)
		if err != nil {
			t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, errOut)
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	got := run(10, "--from-beginning")
	if len(got) != 10 || got[0] != "p0-0" || got[9] != "p0-9" {
		t.Fatalf("first run: %q", got)
	}
	got = run(20)
	if len(got) != 20 || got[0] != "p0-10" || got[19] != "p0-29" {
		t.Fatalf("resumed run: %q", got)
	}

	// kafka-consumer-groups on the same group.
	tool := consumerGroupsTool(t, gw.Addr)
	if out := tool("--list"); !strings.Contains(out, group) {
		t.Fatalf("--list:\n%s", out)
	}
	// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
	out := tool("--describe", "--group", group)
	if !describeRow(out, topic, "0", "30", "30", "0") {
		t.Fatalf("--describe:\n%s", out)
	}
	if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Empty") {
		t.Fatalf("--state:\n%s", out)
	}
	out = tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	if !strings.Contains(out, topic) {
		t.Fatalf("--reset-offsets:\n%s", out)
	}
	// Reset to 0 reads back as 0 on every backend (on Iggy from the group
	// log, as the native offset cannot hold it).
	out = tool("--describe", "--group", group)
	if !describeRow(out, topic, "0", "0", "30", "30") {
		t.Fatalf("--describe after reset (lag 30):\n%s", out)
	}

	// A live member seen by --describe --members.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := newClient(t, gw.Addr, kgo.ConsumerGroup("grp-live"), kgo.ConsumeTopics(topic), kgo.ClientID("live-client"))
	go func() {
		for ctx.Err() == nil {
			live.PollFetches(ctx)
		}
	}()
	if err := await.Poll(60*time.Second, time.Second, func() error {
		out := tool("--describe", "--group", "grp-live", "--members")
		// The HOST column is the member's peer address, as on Kafka.
		if !strings.Contains(out, "live-client") || !strings.Contains(out, "/127.0.0.1") {
			return fmt.Errorf("--members:\n%s", out)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 60*time.Second, err)
	}
	// The first rebalance of a group waits out the initial delay (3s).
	if err := await.Poll(60*time.Second, time.Second, func() error {
		if out := tool("--describe", "--group", "grp-live", "--state"); !strings.Contains(out, "Stable") {
			return fmt.Errorf("--state of a live group:\n%s", out)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 60*time.Second, err)
	}

	out = tool("--delete", "--group", group)
	if !strings.Contains(out, "deleted") && !strings.Contains(out, "Deletion") {
		t.Fatalf("--delete:\n%s", out)
	}
	if out := tool("--list"); strings.Contains(out, group+"\n") || strings.HasSuffix(out, group) {
		t.Fatalf("--list after delete:\n%s", out)
	}
}
