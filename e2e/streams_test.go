package e2e

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

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

// latestValues reads topic from its start to its current end and returns
// the last value seen per key.
func latestValues(t testing.TB, addr, topic string) (map[string]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := newClient(t, addr)
	defer admin.Close()
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]kgo.Offset{}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = kgo.NewOffset().AtStart()
			left[o.Partition] = o.Offset
		}
	})
	got := map[string]string{}
	if len(want) == 0 {
		return got, nil
	}
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: want}),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s to its end: %w", topic, ctx.Err())
		}
		if err := fs.Err(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = string(r.Value)
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
		})
	}
	return got, nil
}

// topicConfig returns a topic config's value as DescribeConfigs answers it
// ("" when absent or null).
func topicConfig(t testing.TB, cl *kgo.Client, topic, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfgs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cfgs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// A Kafka Streams word count (e2e/java/src/WordCount.java: at_least_once,
// a repartition topic, a RocksDB count store with a compacted changelog)
// counts the lines the test produced and purges its repartition topic with
// DeleteRecords; stopped and restarted with an empty
// state dir, it restores the counts from the changelog and counts the
// next lines on top of them.
func TestStreamsWordCountRestoresFromChangelog(t *testing.T) {
	needJar(t, "kafka-streams-*.jar")
	gw := startGateway(t)
	cl := newClient(t, gw.Addr)
	const app, in, out = "wc-app", "wc-lines", "wc-counts"
	createTopic(t, cl, in, 2)
	createTopic(t, cl, out, 2)
	src, err := filepath.Abs("java/src/WordCount.java")
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}
	want := map[string]int{}
	produceLines := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			// Line i holds 1-3 words picked from i, so the counts differ.
			var ws []string
			for j := 0; j <= i%3; j++ {
				w := words[(i*(j+2)+j)%len(words)]
				ws = append(ws, w)
				want[w]++
			}
			recs = append(recs, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i), Value: []byte(strings.Join(ws, " "))})
		}
		produceAll(t, cl, recs)
	}
	countsMatch := func() error {
		got, err := latestValues(t, gw.Addr, out)
		if err != nil {
			return err
		}
		for w, n := range want {
			if got[w] != fmt.Sprint(n) {
				return fmt.Errorf("count of %q: %q, want %d (all: %v)", w, got[w], n, got)
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("words counted: %v, want %v", got, want)
		}
		return nil
	}

	produceLines(0, 200)
	wc := javaStart(t, "WordCount", src, gw.Addr, app, in, out, t.TempDir())
	wc.waitOutput(t, "RUNNING", 3*time.Minute)
	checkFor(t, 2*time.Minute, time.Second, countsMatch)

	// Streams purges what it consumed from its repartition topic through
	// DeleteRecords, but only on a commit that had something to commit and
	// came more than repartition.purge.interval.ms (1 s in WordCount) after
	// the stream thread started; a clean close commits without purging. An
	// app that counted the first lines within that second would never
	// purge while idle, so each wait below feeds it one more line.
	repart := app + "-words-repartition"
	next := 200
	checkFor(t, time.Minute, time.Second, func() error {
		produceLines(next, next+1)
		next++
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, repart)
		if err != nil {
			return err
		}
		var purged int64
		starts.Each(func(o kadm.ListedOffset) { purged += o.Offset })
		if purged == 0 {
			return fmt.Errorf("log starts of %s: %v, want some records purged", repart, starts)
		}
		return nil
	})
	checkFor(t, 2*time.Minute, time.Second, countsMatch)
	wc.stop(t, time.Minute)

	// The internal topics Streams created through CreateTopics: the
	// changelog is compacted, and the gateway reports it so.
	changelog := app + "-counts-changelog"
	policy := topicConfig(t, cl, changelog, "cleanup.policy")
	if policy != "compact" {
		t.Fatalf("cleanup.policy of %s: %q, want compact", changelog, policy)
	}
	// The repartition topic: delete, kept for ever until Streams purges.
	if p, r := topicConfig(t, cl, repart, "cleanup.policy"), topicConfig(t, cl, repart, "retention.ms"); p != "delete" || r != "-1" {
		t.Fatalf("%s: cleanup.policy %q, retention.ms %q; want delete, -1", repart, p, r)
	}

	produceLines(next, next+100)
	wc = javaStart(t, "WordCount (restarted)", src, gw.Addr, app, in, out, t.TempDir())
	wc.waitOutput(t, "RUNNING", 3*time.Minute)
	checkFor(t, 2*time.Minute, time.Second, countsMatch)
	wc.stop(t, time.Minute)
}
