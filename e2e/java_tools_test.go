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
		"--property", "parse.key=true", "--property", "key.separator=:")
	if err != nil {
		t.Fatalf("ConsoleProducer: %v\nstderr: %s", err, errOut)
	}
	if strings.Contains(errOut, "ERROR") {
		t.Fatalf("ConsoleProducer reported errors:\n%s", errOut)
	}

	args := []string{
		"--bootstrap-server", gw.Addr, "--topic", "java-orders",
		"--from-beginning", "--max-messages", fmt.Sprint(n), "--timeout-ms", "30000",
		"--property", "print.key=true",
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
