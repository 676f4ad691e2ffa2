package e2e

import (
	"fmt"
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
