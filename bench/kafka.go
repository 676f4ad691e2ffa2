package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// kafkaJVMPerf is KAFKA_JVM_PERFORMANCE_OPTS of kafka-run-class.sh, which
// every Kafka script starts its JVM with: the broker and the perf tools.
var kafkaJVMPerf = []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true"}

// kafkaCommand prepares a single-node KRaft broker in t.dir (a generated
// server.properties bound to 127.0.0.1, storage formatted with
// kafka.tools.StorageTool) and returns the command line of kafka.Kafka.
// It returns an error wrapping ErrSkip when java or the jars are missing.
func (t *procTarget) kafkaCommand(ctx context.Context, port int) ([]string, error) {
	java := t.c.Java
	if java == "" {
		java = "java"
	}
	javaPath, err := exec.LookPath(java)
	if err != nil {
		return nil, fmt.Errorf("kafka: no %s on PATH (install a JDK 17+): %w", java, ErrSkip)
	}
	lib := t.c.KafkaLib
	if lib == "" && t.c.ModuleDir != "" {
		lib = filepath.Join(t.c.ModuleDir, "bench", "kafka", "target", "lib")
	}
	jars, _ := filepath.Glob(filepath.Join(lib, "kafka_2.13-*.jar"))
	if len(jars) == 0 {
		return nil, fmt.Errorf("kafka: no kafka_2.13 jar in %q (run bench/kafka/fetch.sh): %w", lib, ErrSkip)
	}
	ctrlPort, err := iggyreal.FreePort()
	if err != nil {
		return nil, err
	}
	logs := filepath.Join(t.dir, "kafka-logs")
	_ = os.RemoveAll(logs) // a retry after a taken port starts clean
	props := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", ctrlPort),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrlPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", port),
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"log.dirs=" + logs,
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"auto.create.topics.enable=true",
		"",
	}, "\n")
	propsPath := filepath.Join(t.dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		return nil, err
	}
	log4j := filepath.Join(t.dir, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(strings.Join([]string{
		"status = error",
		"appender.console.type = Console",
		"appender.console.name = STDOUT",
		"appender.console.layout.type = PatternLayout",
		"appender.console.layout.pattern = [%d] %p %m (%c)%n",
		"rootLogger.level = warn",
		"rootLogger.appenderRef.stdout.ref = STDOUT",
		"",
	}, "\n")), 0o644); err != nil {
		return nil, err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	cluster := base64.RawURLEncoding.EncodeToString(id[:])
	cp := filepath.Join(lib, "*")
	heap := t.c.KafkaHeap
	if heap == "" {
		heap = "1g"
	}
	// The JVM options of kafka-server-start.sh / kafka-run-class.sh.
	jvm := append(append([]string{"-Xms" + heap, "-Xmx" + heap}, kafkaJVMPerf...),
		"-Dlog4j2.configurationFile="+log4j, "-cp", cp)
	format := exec.CommandContext(ctx, javaPath, "-Xmx256m", "-Dlog4j2.configurationFile="+log4j, "-cp", cp,
		"kafka.tools.StorageTool", "format", "-t", cluster, "-c", propsPath, "--ignore-formatted")
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka storage format: %v\n%s", err, out)
	}
	return append(append([]string{javaPath}, jvm...), "kafka.Kafka", propsPath), nil
}
