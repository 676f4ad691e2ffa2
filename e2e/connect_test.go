package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/iggy-kafka/gateway/internal/await"
)

// connectWorker writes a distributed worker's properties for the gateway at
// addr, with its REST listener on a free port, and returns the file and
// the REST base URL.
func connectWorker(t testing.TB, addr, group string) (props, rest string) {
	t.Helper()
	port := freePort(t)
	rest = fmt.Sprintf("http://127.0.0.1:%d", port)
	props = filepath.Join(t.TempDir(), "worker.properties")
	cfg := strings.Join([]string{
		"bootstrap.servers=" + addr,
		"group.id=" + group,
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"config.storage.topic=" + group + "-configs",
		"offset.storage.topic=" + group + "-offsets",
		"status.storage.topic=" + group + "-status",
		// -1: the broker's default (the gateway has a single replica).
		"config.storage.replication.factor=-1",
		"offset.storage.replication.factor=-1",
		"status.storage.replication.factor=-1",
		"offset.storage.partitions=3",
		"status.storage.partitions=1",
		// Commits every 5 s: the test kills the worker between commits.
		"offset.flush.interval.ms=5000",
		// A restarted worker is a new member: hand it the lost connectors
		// and tasks at once instead of after the default 5 minutes.
		"scheduled.rebalance.max.delay.ms=0",
		"listeners=" + rest,
		"rest.advertised.host.name=127.0.0.1",
		"rest.advertised.port=" + strconv.Itoa(port),
		"",
	}, "\n")
	if err := os.WriteFile(props, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return props, rest
}

// restCall sends a JSON body (nil: none) to the worker and returns the
// status and response body.
func restCall(method, url string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// connectorRunning returns nil once the connector and all of its (at least
// one) tasks are RUNNING on the worker.
func connectorRunning(rest, name string) error {
	code, b, err := restCall("GET", rest+"/connectors/"+name+"/status", nil)
	if err != nil {
		return err
	}
	if code != 200 {
		return fmt.Errorf("status of %s: HTTP %d %s", name, code, b)
	}
	var st struct {
		Connector struct{ State string } `json:"connector"`
		Tasks     []struct {
			State string
			Trace string
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	if st.Connector.State != "RUNNING" || len(st.Tasks) == 0 {
		return fmt.Errorf("%s: %s", name, b)
	}
	for _, tk := range st.Tasks {
		if tk.State != "RUNNING" {
			return fmt.Errorf("%s task: %s %s", name, tk.State, tail(tk.Trace, 10))
		}
	}
	return nil
}

// sinkLines reads the sink file's complete lines.
func sinkLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := string(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	} else {
		return nil
	}
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// checkAtLeastOnce returns nil if lines hold line-0..line-(n-1) in order,
// each at least once, where a repeat is only a replay: after a line k the
// next line is k+1 or goes back to an earlier line and counts up again.
// It also returns the number of repeated lines.
func checkAtLeastOnce(lines []string, n int) (dups int, err error) {
	seen := make([]bool, n)
	prev := -1
	for i, l := range lines {
		k, err := strconv.Atoi(strings.TrimPrefix(l, "line-"))
		if err != nil || !strings.HasPrefix(l, "line-") || k < 0 || k >= n {
			return dups, fmt.Errorf("sink line %d: %q", i, l)
		}
		if k > prev+1 {
			return dups, fmt.Errorf("sink line %d: %q follows line-%d: lines lost", i, l, prev)
		}
		if seen[k] {
			dups++
		}
		seen[k] = true
		prev = k
	}
	for k, ok := range seen {
		if !ok {
			return dups, fmt.Errorf("line-%d not in the sink (%d lines)", k, len(lines))
		}
	}
	return dups, nil
}

func appendLines(t testing.TB, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line-%d\n", i)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// lineFileConnectors compiles e2e/java/connect/LineFile.java (a file
// source and sink connector, see there why not connect-file's) against the
// fetched jars and returns the classes directory, with the ServiceLoader
// entries by which the worker finds them.
func lineFileConnectors(t testing.TB) string {
	t.Helper()
	_, cp := needJava(t)
	javac, err := exec.LookPath("javac")
	if err != nil {
		missing(t, "javac", "install a JDK 17+: apt-get install openjdk-17-jdk-headless")
	}
	dir := t.TempDir()
	src := javaSource(t, "java/connect/LineFile.java")
	if out, err := exec.Command(javac, "-nowarn", "-cp", cp, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac LineFile.java: %v\n%s", err, out)
	}
	services := filepath.Join(dir, "META-INF", "services")
	if err := os.MkdirAll(services, 0o755); err != nil {
		t.Fatal(err)
	}
	for iface, impl := range map[string]string{
		"org.apache.kafka.connect.source.SourceConnector": lineFileSource,
		"org.apache.kafka.connect.sink.SinkConnector":     lineFileSink,
	} {
		if err := os.WriteFile(filepath.Join(services, iface), []byte(impl+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The connector classes of e2e/java/connect/LineFile.java.
const (
	lineFileSource = "iggykafka.e2e.LineFile$Source"
	lineFileSink   = "iggykafka.e2e.LineFile$Sink"
)

// A Kafka Connect distributed worker (ConnectDistributed from
// connect-runtime) on the gateway: it creates its compacted config, offset
// and status topics, runs a file source (file -> topic) and a file sink
// (topic -> file) posted through its REST API, and after a
// SIGKILL and a restart it resumes both from the offsets it committed
// through the gateway: no line lost, repeats only as at-least-once
// replays.
func TestConnectFilePipelineSurvivesWorkerKill(t *testing.T) {
	t.Parallel()
	needJar(t, "connect-runtime-*.jar")
	connectors := []string{lineFileConnectors(t)}
	gw := startGateway(t)
	cl := newClient(t, gw.Addr)
	const topic = "connect-lines"
	createTopic(t, cl, topic, 1)
	dir := t.TempDir()
	srcFile, sinkFile := filepath.Join(dir, "source.txt"), filepath.Join(dir, "sink.txt")
	appendLines(t, srcFile, 0, 150)

	props, rest := connectWorker(t, gw.Addr, "connect-e2e")
	const class = "org.apache.kafka.connect.cli.ConnectDistributed"
	w := javaStartCP(t, "connect worker", connectors, class, props)
	if err := await.Poll(3*time.Minute, time.Second, func() error {
		code, b, err := restCall("GET", rest+"/connectors", nil)
		if err == nil && code != 200 {
			err = fmt.Errorf("HTTP %d %s", code, b)
		}
		return err
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 3*time.Minute, err)
	}
	post := func(name string, cfg map[string]string) {
		t.Helper()
		if err := await.Poll(time.Minute, time.Second, func() error {
			code, b, err := restCall("PUT", rest+"/connectors/"+name+"/config", cfg)
			if err == nil && code != 200 && code != 201 {
				err = fmt.Errorf("PUT %s: HTTP %d %s", name, code, b)
			}
			return err
		}); err != nil {
			t.Fatalf("still not so after %v: %v", time.Minute, err)
		}
	}
	post("file-source", map[string]string{
		"connector.class": lineFileSource,
		"tasks.max":       "1",
		"file":            srcFile,
		"topic":           topic,
	})
	post("file-sink", map[string]string{
		"connector.class": lineFileSink,
		"tasks.max":       "1",
		"file":            sinkFile,
		"topics":          topic,
	})
	for _, name := range []string{"file-source", "file-sink"} {
		if err := await.Poll(2*time.Minute, time.Second, func() error { return connectorRunning(rest, name) }); err != nil {
			t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
		}
	}
	// The worker created its internal topics compacted (it refuses to run
	// on topics that are not).
	for _, name := range []string{"connect-e2e-configs", "connect-e2e-offsets", "connect-e2e-status"} {
		if p := topicConfig(t, cl, name, "cleanup.policy"); p != "compact" {
			t.Fatalf("cleanup.policy of %s: %q, want compact", name, p)
		}
	}
	if n := partitionsOf(t, gw.Addr, "connect-e2e-offsets"); n != 3 {
		t.Fatalf("connect-e2e-offsets has %d partitions, want offset.storage.partitions=3", n)
	}
	if err := await.Poll(2*time.Minute, time.Second, func() error {
		lines := sinkLines(sinkFile)
		if len(lines) < 150 {
			return fmt.Errorf("%d of 150 lines in the sink", len(lines))
		}
		_, err := checkAtLeastOnce(lines, 150)
		return err
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
	}
	if n := len(sinkLines(sinkFile)); n != 150 {
		t.Fatalf("%d lines in the sink before any failure, want exactly 150", n)
	}
	// Wait for both connectors to commit past line 149: the source its
	// file position in the offsets topic, the sink its consumer group
	// offset. Nothing up to there may repeat after the kill.
	fi, err := os.Stat(srcFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := await.Poll(time.Minute, time.Second, func() error {
		offs, err := latestValues(t, gw.Addr, "connect-e2e-offsets")
		if err != nil {
			return err
		}
		want := fmt.Sprintf(`{"position":%d}`, fi.Size())
		for k, v := range offs {
			if strings.Contains(k, "file-source") && v == want {
				return nil
			}
		}
		return fmt.Errorf("source offsets %v, want %s", offs, want)
	}); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	if err := await.Poll(time.Minute, time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "connect-file-sink")
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup(topic, 0); !ok || o.At != 150 {
			return fmt.Errorf("sink group offset %+v, want 150", o)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	appendLines(t, srcFile, 150, 200)
	// Kill as soon as these reached the sink, most likely before either
	// connector committed them: they may come again after the restart.
	await.Until(t, time.Minute, func() error {
		if lines := sinkLines(sinkFile); len(lines) < 200 {
			return fmt.Errorf("%d of 200 lines in the sink", len(lines))
		}
		return nil
	})
	w.kill()

	appendLines(t, srcFile, 200, 300)
	w = javaStartCP(t, "connect worker (restarted)", connectors, class, props)
	for _, name := range []string{"file-source", "file-sink"} {
		if err := await.Poll(3*time.Minute, time.Second, func() error { return connectorRunning(rest, name) }); err != nil {
			t.Fatalf("still not so after %v: %v", 3*time.Minute, err)
		}
	}
	var dups int
	if err := await.Poll(3*time.Minute, time.Second, func() error {
		lines := sinkLines(sinkFile)
		var err error
		dups, err = checkAtLeastOnce(lines, 300)
		return err
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 3*time.Minute, err)
	}
	// Only lines after the last committed offsets may repeat: the first
	// 150 lines of the sink are lines 0-149, and none of those comes again.
	lines := sinkLines(sinkFile)
	for i, l := range lines {
		k, _ := strconv.Atoi(strings.TrimPrefix(l, "line-"))
		if (i < 150 && k != i) || (i >= 150 && k < 150) {
			t.Fatalf("sink line %d is %q: a line committed before the kill repeated or moved", i, l)
		}
	}
	// Each connector may replay the 50 lines it had not committed: the
	// source re-reads lines 150-199 into the topic (at most 50 extra
	// records there), and the sink re-reads the topic from its committed
	// offset 150, so the sink file holds at most 100 repeats.
	ends, err := kadm.NewClient(cl).ListEndOffsets(adminCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	if end.Offset < 300 || end.Offset > 350 {
		t.Fatalf("%d records in %s for 300 lines, want 300 to 350", end.Offset, topic)
	}
	if dups > 100 {
		t.Fatalf("%d repeated lines in the sink, more than the source's and the sink's uncommitted 50 each", dups)
	}
	t.Logf("after the worker's SIGKILL: %d records in the topic for 300 lines, %d lines repeated in the sink", end.Offset, dups)
	w.kill()
}
