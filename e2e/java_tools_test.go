package e2e

// The Apache Kafka Java client and tools: the console producer and
// consumer, the AdminClient (in source-file mode), kafka-topics,
// kafka-delete-records, kafka-log-dirs and kafka-transactions.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/handlers"
)

// The Java console producer with its defaults (enable.idempotence=true,
// acks=all) and then the Java console consumer from the beginning.
func TestJavaConsoleRoundTrip(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)

	const n = 150
	var in strings.Builder
	var want []string
	for i := 0; i < n; i++ {
		k, v := fmt.Sprintf("jk-%d", i%4), fmt.Sprintf("java value %d ünïcode", i)
		fmt.Fprintf(&in, "%s:%s\n", k, v)
		want = append(want, k+"\t"+v)
	}
	_, errOut, err := javaRun(t, 90*time.Second, in.String(), "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", gw.Addr, "--topic", "java-orders",
		"--reader-property", "parse.key=true", "--reader-property", "key.separator=:")
	if err != nil {
		t.Fatalf("ConsoleProducer: %v\nstderr: %s", err, errOut)
	}
	if strings.Contains(errOut, "ERROR") {
		t.Fatalf("ConsoleProducer reported errors:\n%s", errOut)
	}

	args := []string{
		"--bootstrap-server", gw.Addr, "--topic", "java-orders",
		"--from-beginning", "--max-messages", fmt.Sprint(n), "--timeout-ms", "30000",
		"--formatter-property", "print.key=true",
	}
	// Without a group coordinator the console consumer must read by
	// assignment; with one, it runs as a group member like a user's would.
	if handlers.Lookup(10) == nil {
		args = append(args, "--partition", "0")
	}
	out, errOut, err := javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer", args...)
	if err != nil {
		t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, errOut)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != n {
		t.Fatalf("ConsoleConsumer printed %d records, want %d:\n%s\nstderr: %s", len(got), n, out, errOut)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("record %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

// The Java AdminClient (e2e/java/src/AdminCheck.java, run in source-file
// mode): createPartitions, a refused shrink, deleteRecords, listOffsets
// earliest, describeLogDirs, describeClientQuotas and listTransactions
// (both empty) and describeProducers, then a consumer with
// auto.offset.reset=earliest starting at the new log start.
func TestJavaAdminCreatePartitionsDeleteRecords(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	src := javaSource(t, "java/src/AdminCheck.java")
	out, errOut, err := javaRun(t, 120*time.Second, "", src, gw.Addr, "java-admin")
	if err != nil {
		t.Fatalf("AdminCheck: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	for _, want := range []string{
		"OK createPartitions 4\n",
		"OK shrink refused\n",
		"OK deleteRecords 4\n",
		"OK earliest 4\n",
		"OK consumed [4, 5, 6, 7, 8, 9]\n",
		"OK describeClientQuotas 0\n",
		"OK listTransactions 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("AdminCheck output lacks %q:\n%s\nstderr: %s", want, out, tail(errOut, 30))
		}
	}
	if m := regexp.MustCompile(`OK describeLogDirs \S+ 1 (\d+)`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Errorf("describeLogDirs: one dir with partition 0's size wanted:\n%s", out)
	}
	if !regexp.MustCompile(`OK describeProducers \d+ 0 9\n`).MatchString(out) {
		t.Errorf("describeProducers: the producer with last sequence 9 wanted:\n%s", out)
	}
}

// Kafka's own tools: kafka-topics --alter --partitions (TopicCommand) and
// kafka-delete-records (DeleteRecordsCommand).
func TestJavaToolsAlterPartitionsDeleteRecords(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	cl := filledTopic(t, gw.Addr, "java-tools", 12)

	kafkaTool(t, gw.Addr, "org.apache.kafka.tools.TopicCommand", "--alter", "--topic", "java-tools", "--partitions", "3")
	if n := partitionsOf(t, gw.Addr, "java-tools"); n != 3 {
		t.Fatalf("%d partitions after kafka-topics --alter --partitions 3", n)
	}

	js := filepath.Join(t.TempDir(), "delete.json")
	if err := os.WriteFile(js, []byte(`{"version":1,"partitions":[{"topic":"java-tools","partition":0,"offset":5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut := kafkaTool(t, gw.Addr, "org.apache.kafka.tools.DeleteRecordsCommand", "--offset-json-file", js)
	if !strings.Contains(out, "low_watermark: 5") {
		t.Fatalf("DeleteRecordsCommand output:\n%s\nstderr: %s", out, errOut)
	}
	if o := startOffset(t, cl, "java-tools"); o != 5 {
		t.Fatalf("earliest after kafka-delete-records: %d", o)
	}
}

// Kafka's kafka-log-dirs --describe (LogDirsCommand) and kafka-transactions
// describe-producers / list (TransactionsCommand).
func TestJavaToolsLogDirsDescribeProducersTransactions(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	cl := filledTopic(t, gw.Addr, "java-logdirs", 4)
	pid, _, err := cl.ProducerID(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	out, errOut := kafkaTool(t, gw.Addr, "org.apache.kafka.tools.LogDirsCommand", "--describe", "--topic-list", "java-logdirs")
	if !regexp.MustCompile(`"partition":"java-logdirs-0","size":[1-9]`).MatchString(out) {
		t.Fatalf("LogDirsCommand: no size for java-logdirs-0:\n%s\nstderr: %s", out, errOut)
	}

	out, errOut = kafkaTool(t, gw.Addr, "org.apache.kafka.tools.TransactionsCommand",
		"describe-producers", "--topic", "java-logdirs", "--partition", "0")
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+0\s+-1\s+3\s+\d+\s+None`, pid)).MatchString(out) {
		t.Fatalf("describe-producers: producer %d with epoch 0, coordinator epoch -1, last sequence 3, a timestamp and no transaction wanted:\n%s\nstderr: %s", pid, out, errOut)
	}

	out, errOut = kafkaTool(t, gw.Addr, "org.apache.kafka.tools.TransactionsCommand", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "TransactionalId") {
		t.Fatalf("kafka-transactions list: want only the header line:\n%s\nstderr: %s", out, errOut)
	}
}

// The Java AdminClient's describeCluster and describeTopics
// (e2e/java/src/DescribeCheck.java) and the tools built on them,
// kafka-topics --describe and kafka-cluster cluster-id / list-endpoints:
// Kafka 4.x clients ask DescribeCluster (60) and DescribeTopicPartitions
// (75), and the answers print as a Kafka 4.4.0 broker's do (the ELR lists
// empty rather than N/A, which is what the Metadata fallback gives).
func TestJavaToolsDescribeClusterAndTopics(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	src := javaSource(t, "java/src/DescribeCheck.java")
	out, errOut, err := javaRun(t, 120*time.Second, "", src, gw.Addr, "describe-a", "describe-b")
	if err != nil {
		t.Fatalf("DescribeCheck: %v\nstdout: %s\nstderr: %s", err, out, tail(errOut, 30))
	}
	partition := func(p int) string { return fmt.Sprintf(" %d:leader=1:isr=[1]:elr=[]:lastKnownElr=[]", p) }
	topicOps := "[READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS]"
	for _, want := range []string{
		"OK cluster e2e controller 1 nodes 1@" + gw.Addr + " ops [CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE]\n",
		"OK topic describe-a internal=false ops=" + topicOps + partition(0) + partition(1) + partition(2) + "\n",
		"OK topic describe-b internal=false ops=" + topicOps + partition(0) + partition(1) + "\n",
		"OK missing topic\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("DescribeCheck output lacks %q:\n%s\nstderr: %s", want, out, tail(errOut, 30))
		}
	}

	out, errOut = kafkaTool(t, gw.Addr, "org.apache.kafka.tools.TopicCommand", "--describe", "--topic", "describe-a")
	for p := 0; p < 3; p++ {
		want := fmt.Sprintf("\tTopic: describe-a\tPartition: %d\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n", p)
		if !strings.Contains(out, want) {
			t.Errorf("kafka-topics --describe lacks %q:\n%s\nstderr: %s", want, out, errOut)
		}
	}
	// kafka-cluster takes its options after the command.
	clusterTool := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, err := javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.ClusterTool", append(args, "--bootstrap-server", gw.Addr)...)
		if err != nil {
			t.Fatalf("kafka-cluster %v: %v\nstdout: %s\nstderr: %s", args, err, out, tail(errOut, 40))
		}
		return out, errOut
	}
	out, errOut = clusterTool("cluster-id")
	if out != "Cluster ID: e2e\n" {
		t.Errorf("kafka-cluster cluster-id: %q\nstderr: %s", out, errOut)
	}
	out, errOut = clusterTool("list-endpoints", "--include-fenced-brokers")
	host, port, _ := strings.Cut(gw.Addr, ":")
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^1\s+%s\s+%s\s+null\s+unfenced\s+broker\s*$`, regexp.QuoteMeta(host), port)).MatchString(out) {
		t.Errorf("kafka-cluster list-endpoints --include-fenced-brokers:\n%s\nstderr: %s", out, errOut)
	}
}
