package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/syncbuf"
)

// javaLib is where e2e/java/fetch.sh puts the Kafka jars.
const javaLib = "java/target/lib"

// needJava returns the java path and classpath, or skips.
func needJava(t testing.TB) (java, classpath string) {
	t.Helper()
	p, err := exec.LookPath("java")
	if err != nil {
		missing(t, "java", "install a JDK 17+: apt-get install openjdk-17-jdk-headless maven, then run e2e/java/fetch.sh")
	}
	jars, _ := filepath.Glob(filepath.Join(javaLib, "kafka-tools-*.jar"))
	if len(jars) == 0 {
		missing(t, "the Kafka Java tools jars", "run e2e/java/fetch.sh (needs Maven)")
	}
	abs, err := filepath.Abs(javaLib)
	if err != nil {
		t.Fatal(err)
	}
	return p, filepath.Join(abs, "*")
}

// needJar skips t (fails it under IGGY_KAFKA_E2E_REQUIRED=1) unless a jar
// matching glob, e.g. "kafka-streams-*.jar", is in the fetched classpath:
// a target/lib fetched before the jar joined e2e/java/pom.xml lacks it.
func needJar(t testing.TB, glob string) {
	t.Helper()
	needJava(t)
	if jars, _ := filepath.Glob(filepath.Join(javaLib, glob)); len(jars) == 0 {
		missing(t, glob+" in "+javaLib, "re-run e2e/java/fetch.sh")
	}
}

// configsClass is kafka-configs' main class, in kafka-tools in Kafka 4.4
// (Kafka 4.1 had it in the core jar as kafka.admin.ConfigCommand).
const configsClass = "org.apache.kafka.tools.ConfigCommand"

// javaSource is the absolute path of a Java source file the tests run in
// source-file mode (path is relative to e2e/).
func javaSource(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// javaRun runs a Kafka tool class on the fetched classpath.
func javaRun(t testing.TB, timeout time.Duration, stdin, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	java, jvm := jvmArgs(t, class)
	return runCmd(t, timeout, stdin, java, append(jvm, args...)...)
}

// kafkaTool runs one of Kafka's command-line tools (its main class)
// against the gateway at addr and fails t unless the tool exits 0 within
// 90 s; it returns what the tool printed on stdout and stderr.
func kafkaTool(t testing.TB, addr, class string, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errOut, err := javaRun(t, 90*time.Second, "", class, append([]string{"--bootstrap-server", addr}, args...)...)
	if err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", class, args, err, out, tail(errOut, 40))
	}
	return out, errOut
}

// javaProduceOne sends one record ("java-v") to topic with the Java
// console producer configured by the properties file props, with timeouts
// short enough that a refused write fails soon; it returns the producer's
// stderr and how it exited.
func javaProduceOne(t testing.TB, addr, topic, props string) (stderr string, err error) {
	t.Helper()
	_, errOut, err := javaRun(t, 90*time.Second, "java-v\n", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", addr, "--topic", topic, "--command-config", props,
		"--command-property", "max.block.ms=15000", "--command-property", "delivery.timeout.ms=20000",
		"--command-property", "request.timeout.ms=10000")
	return errOut, err
}

// jvmArgs are the java path and the JVM's arguments up to class, on the
// fetched classpath: start fast and stay small, for the tools and for a
// Streams app or Connect worker alike.
func jvmArgs(t testing.TB, class string, extraCP ...string) (java string, args []string) {
	t.Helper()
	java, cp := needJava(t)
	cp = strings.Join(append([]string{cp}, extraCP...), string(filepath.ListSeparator))
	return java, []string{
		"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, class,
	}
}

// javaProc is a long-running JVM started by javaStart: a Streams app or a
// Connect worker the test stops (stdin closed), kills and restarts.
type javaProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncbuf.Buffer
	err   *syncbuf.Buffer
	done  chan struct{}
}

// javaStart starts class (a main class or a source file) on the fetched
// classpath with a heap big enough for Streams or Connect. It is killed
// when the test ends if still running, and its output is logged if the
// test failed.
func javaStart(t testing.TB, name, class string, args ...string) *javaProc {
	t.Helper()
	return javaStartCP(t, name, nil, class, args...)
}

// javaStartCP is javaStart with extraCP after the fetched classpath.
func javaStartCP(t testing.TB, name string, extraCP []string, class string, args ...string) *javaProc {
	t.Helper()
	java, jvm := jvmArgs(t, class, extraCP...)
	cmd := exec.Command(java, append(jvm, args...)...)
	cmd.Env = childEnv()
	p := &javaProc{cmd: cmd, out: &syncbuf.Buffer{}, err: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout = p.out
	cmd.Stderr = p.err
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = in
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s stdout:\n%s\n%s stderr:\n%s", name, tail(p.out.String(), 60), name, tail(p.err.String(), 400))
		}
	})
	return p
}

// waitOutput waits until the process printed want, failing t if it exits
// first or after timeout.
func (p *javaProc) waitOutput(t testing.TB, want string, timeout time.Duration) {
	t.Helper()
	await.Until(t, timeout, func() error {
		if strings.Contains(p.out.String(), want) {
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("exited before printing %q:\nstdout: %s\nstderr: %s", want, tail(p.out.String(), 40), tail(p.err.String(), 80))
		default:
		}
		return fmt.Errorf("%q not printed", want)
	})
}

// stop closes the process's stdin (the programs shut down cleanly on that)
// and waits up to timeout for it to exit, then kills it.
func (p *javaProc) stop(t testing.TB, timeout time.Duration) {
	t.Helper()
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.kill()
		t.Fatalf("did not exit within %v of its stdin closing", timeout)
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *javaProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// javaMember is one GroupMember process.
type javaMember struct {
	name string
	p    *javaProc
}

// owned is the member's latest OWNED line, or nil before it printed one.
func (m *javaMember) owned() []int {
	out := m.p.out.String()
	i := strings.LastIndex(out, "OWNED ")
	if i < 0 {
		return nil
	}
	line := out[i+len("OWNED "):]
	line = line[:strings.IndexByte(line, '\n')+1]
	var ps []int
	for _, f := range strings.Split(strings.TrimSpace(line), ",") {
		if f == "" {
			continue
		}
		n, _ := strconv.Atoi(f)
		ps = append(ps, n)
	}
	return ps
}

// ownedHistory is every OWNED set the member printed, in order.
func (m *javaMember) ownedHistory() [][]int {
	var out [][]int
	for _, line := range strings.Split(m.p.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "OWNED "); ok {
			var ps []int
			for _, f := range strings.Split(rest, ",") {
				if n, err := strconv.Atoi(f); err == nil {
					ps = append(ps, n)
				}
			}
			out = append(out, ps)
		}
	}
	return out
}

// records is every value the member printed a REC line for.
func (m *javaMember) records() []string {
	var out []string
	for _, line := range strings.Split(m.p.out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "REC "); ok {
			if f := strings.Fields(rest); len(f) == 3 {
				out = append(out, f[2])
			}
		}
	}
	return out
}

// consumerGroupsTool returns Kafka's kafka-consumer-groups
// (ConsumerGroupCommand) against addr: it returns the tool's output and
// fails t when the tool fails.
func consumerGroupsTool(t *testing.T, addr string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, errOut, err := javaRun(t, 2*time.Minute, "", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			append([]string{"--bootstrap-server", addr}, args...)...)
		if err != nil {
			t.Fatalf("kafka-consumer-groups %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
		}
		return out
	}
}

// recordCounts counts the REC lines of ms by value.
func recordCounts(ms []*javaMember) map[string]int {
	n := map[string]int{}
	for _, m := range ms {
		for _, v := range m.records() {
			n[v]++
		}
	}
	return n
}

// allConsumed is nil once ms between them printed a REC line for every
// value of want.
func allConsumed(ms []*javaMember, want []string) error {
	n := recordCounts(ms)
	for _, v := range want {
		if n[v] == 0 {
			return fmt.Errorf("record %s not consumed (%d of %d)", v, len(n), len(want))
		}
	}
	return nil
}

// ownedApart returns how many partitions each of ms owns now and how many
// they own between them, or an error naming a partition two of them own.
func ownedApart(ms []*javaMember) (sizes []int, total int, err error) {
	seen := map[int]string{}
	for _, m := range ms {
		o := m.owned()
		sizes = append(sizes, len(o))
		for _, p := range o {
			if who, dup := seen[p]; dup {
				return nil, 0, fmt.Errorf("partition %d owned by %s and %s", p, who, m.name)
			}
			seen[p] = m.name
		}
	}
	return sizes, len(seen), nil
}

// Kafka's JAAS login modules for SASL clients.
const (
	scramLogin = "org.apache.kafka.common.security.scram.ScramLoginModule"
	plainLogin = "org.apache.kafka.common.security.plain.PlainLoginModule"
)

// jaasConfig is the sasl.jaas.config line of a client properties file
// logging in as user with module.
func jaasConfig(module, user, pass string) string {
	return fmt.Sprintf("sasl.jaas.config=%s required username=\"%s\" password=\"%s\";\n", module, user, javaEscape(pass))
}

// javaConsoleRoundTrip writes a client properties file of props, produces
// 20 values "java <label> <i>" to topic through addr with Kafka's console
// producer and fails t unless its console consumer reads them back in
// order, both clients configured by that file.
func javaConsoleRoundTrip(t *testing.T, addr, topic, label, props string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "client.properties")
	writeFile(t, file, props)
	const n = 20
	var in strings.Builder
	var want []string
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("java %s %d", label, i)
		in.WriteString(v + "\n")
		want = append(want, v)
	}
	_, errOut, err := javaRun(t, 90*time.Second, in.String(), "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", addr, "--topic", topic, "--command-config", file)
	if err != nil || strings.Contains(errOut, "ERROR") {
		t.Fatalf("ConsoleProducer: %v\nstderr: %s", err, errOut)
	}
	out, errOut, err := javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", addr, "--topic", topic, "--from-beginning", "--max-messages", fmt.Sprint(n),
		"--timeout-ms", "30000", "--command-config", file)
	if err != nil {
		t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, errOut)
	}
	if got := strings.TrimSuffix(out, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("ConsoleConsumer printed:\n%s\nwant:\n%s\nstderr: %s", got, strings.Join(want, "\n"), errOut)
	}
}

// describeRow finds a --describe row for topic/partition with the given
// current offset, log end offset and lag.
func describeRow(out, topic, partition, current, end, lag string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+4 < len(f); i++ {
			if f[i] == topic && f[i+1] == partition && f[i+2] == current && f[i+3] == end && f[i+4] == lag {
				return true
			}
		}
	}
	return false
}

// javaIdemProducer sends n records, record i to partition i%parts with
// value v-<i>, with the Java client's idempotent producer, and prints OK
// or the first failure.
const javaIdemProducer = `
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class IdemProducer {
  public static void main(String[] a) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", a[0]);
    p.put("enable.idempotence", "true");
    p.put("acks", "all");
    p.put("max.in.flight.requests.per.connection", "5");
    p.put("batch.size", "1024");
    p.put("linger.ms", "1");
    p.put("retry.backoff.ms", "50");
    p.put("reconnect.backoff.ms", "50");
    p.put("request.timeout.ms", "10000");
    p.put("delivery.timeout.ms", "120000");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    String topic = a[1];
    int n = Integer.parseInt(a[2]), parts = Integer.parseInt(a[3]);
    AtomicReference<Exception> failed = new AtomicReference<>();
    try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
      for (int i = 0; i < n; i++) {
        pr.send(new ProducerRecord<>(topic, i % parts, "k", "v-" + i), (md, e) -> { if (e != null) failed.compareAndSet(null, e); });
      }
      pr.flush();
    }
    System.out.println(failed.get() == null ? "OK" : "FAILED " + failed.get());
  }
}
`

// javaIdem compiles the Java producer and returns a function that runs it
// against addr, failing t unless it reports OK.
func javaIdem(t *testing.T) func(addr, topic string, n, parts int) {
	t.Helper()
	java, cp := needJava(t)
	javac, err := exec.LookPath("javac")
	if err != nil {
		missing(t, "javac", "install a JDK 17+: apt-get install openjdk-17-jdk-headless")
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "IdemProducer.java"), []byte(javaIdemProducer), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := runCmd(t, 120*time.Second, "", javac, "-cp", cp, "-d", src, filepath.Join(src, "IdemProducer.java")); err != nil {
		t.Fatalf("javac: %v\n%s", err, errOut)
	}
	// A producer still running when the test ends (a t.Fatal on the test's
	// goroutine while the producer runs on another) is killed, and waited
	// for, before the test counts as done: its t.Errorf would panic after.
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() { cancel(); running.Wait() })
	return func(addr, topic string, n, parts int) {
		running.Add(1)
		defer running.Done()
		out, errOut, err := runCmdContext(ctx, 180*time.Second, "", java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-cp", cp+string(os.PathListSeparator)+src, "IdemProducer", addr, topic, strconv.Itoa(n), strconv.Itoa(parts))
		if err != nil || strings.TrimSpace(out) != "OK" {
			t.Errorf("java producer: %v\nstdout: %s\nstderr: %s", err, out, tail(errOut, 60))
		}
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// javaEscape writes s for a Java properties file, which is read as
// ISO-8859-1: every non-ASCII rune becomes a \uXXXX escape.
func javaEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}
