package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

func needCoreJar(t testing.TB) {
	t.Helper()
	if jars, _ := filepath.Glob(filepath.Join(javaLib, "kafka_2.13-*.jar")); len(jars) == 0 {
		missing(t, "the Kafka core jar (kafka_2.13, for kafka-configs)", "run e2e/java/fetch.sh again (needs Maven)")
	}
}

// javaRun runs a Kafka tool class on the fetched classpath.
func javaRun(t testing.TB, timeout time.Duration, stdin, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	java, cp := needJava(t)
	jvm := []string{
		// A short-lived tool: start fast, stay small.
		"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, class,
	}
	return runCmd(t, timeout, stdin, java, append(jvm, args...)...)
}

// javaProc is a long-running JVM started by javaStart: a Streams app or a
// Connect worker the test stops (stdin closed), kills and restarts.
type javaProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *syncBuffer
	err   *syncBuffer
	done  chan struct{}
}

// javaStart starts class (a main class or a source file) on the fetched
// classpath with a heap big enough for Streams or Connect. It is killed
// when the test ends if still running, and its output is logged if the
// test failed.
func javaStart(t testing.TB, name, class string, args ...string) *javaProc {
	t.Helper()
	java, cp := needJava(t)
	jvm := []string{
		"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, class,
	}
	cmd := exec.Command(java, append(jvm, args...)...)
	cmd.Env = childEnv()
	p := &javaProc{cmd: cmd, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan struct{})}
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
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.out.String(), want) {
		select {
		case <-p.done:
			t.Fatalf("exited before printing %q:\nstdout: %s\nstderr: %s", want, tail(p.out.String(), 40), tail(p.err.String(), 80))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not printed within %v", want, timeout)
		}
	}
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
	return func(addr, topic string, n, parts int) {
		out, errOut, err := runCmd(t, 180*time.Second, "", java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
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
