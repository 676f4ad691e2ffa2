package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

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
	cl := newClient(t, gw.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "java-tools", 1)
	produceAll(t, cl, valueRecords("java-tools", 12))

	_, errOut, err := javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.TopicCommand",
		"--bootstrap-server", gw.Addr, "--alter", "--topic", "java-tools", "--partitions", "3")
	if err != nil {
		t.Fatalf("TopicCommand --alter: %v\nstderr: %s", err, errOut)
	}
	if n := partitionsOf(t, gw.Addr, "java-tools"); n != 3 {
		t.Fatalf("%d partitions after kafka-topics --alter --partitions 3", n)
	}

	js := filepath.Join(t.TempDir(), "delete.json")
	if err := os.WriteFile(js, []byte(`{"version":1,"partitions":[{"topic":"java-tools","partition":0,"offset":5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.DeleteRecordsCommand",
		"--bootstrap-server", gw.Addr, "--offset-json-file", js)
	if err != nil {
		t.Fatalf("DeleteRecordsCommand: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if !strings.Contains(out, "low_watermark: 5") {
		t.Fatalf("DeleteRecordsCommand output:\n%s\nstderr: %s", out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, "java-tools")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("java-tools", 0); o.Offset != 5 {
		t.Fatalf("earliest after kafka-delete-records: %+v", o)
	}
}

// Kafka's kafka-log-dirs --describe (LogDirsCommand) and kafka-transactions
// describe-producers / list (TransactionsCommand).
func TestJavaToolsLogDirsDescribeProducersTransactions(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	cl := newClient(t, gw.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "java-logdirs", 1)
	produceAll(t, cl, valueRecords("java-logdirs", 4))
	pid, _, err := cl.ProducerID(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	out, errOut, err := javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.LogDirsCommand",
		"--bootstrap-server", gw.Addr, "--describe", "--topic-list", "java-logdirs")
	if err != nil {
		t.Fatalf("LogDirsCommand: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if !regexp.MustCompile(`"partition":"java-logdirs-0","size":[1-9]`).MatchString(out) {
		t.Fatalf("LogDirsCommand: no size for java-logdirs-0:\n%s\nstderr: %s", out, errOut)
	}

	out, errOut, err = javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.TransactionsCommand",
		"--bootstrap-server", gw.Addr, "describe-producers", "--topic", "java-logdirs", "--partition", "0")
	if err != nil {
		t.Fatalf("TransactionsCommand describe-producers: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+0\s+-1\s+3\s+\d+\s+None`, pid)).MatchString(out) {
		t.Fatalf("describe-producers: producer %d with epoch 0, coordinator epoch -1, last sequence 3, a timestamp and no transaction wanted:\n%s\nstderr: %s", pid, out, errOut)
	}

	out, errOut, err = javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.TransactionsCommand",
		"--bootstrap-server", gw.Addr, "list")
	if err != nil {
		t.Fatalf("TransactionsCommand list: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "TransactionalId") {
		t.Fatalf("kafka-transactions list: want only the header line:\n%s\nstderr: %s", out, errOut)
	}
}
