package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// A Kafka Streams word count (e2e/java/src/WordCount.java: at_least_once,
// a repartition topic, a RocksDB count store with a compacted changelog)
// counts the lines the test produced and purges its repartition topic with
// DeleteRecords; stopped and restarted with an empty
// state dir, it restores the counts from the changelog and counts the
// next lines on top of them.
func TestStreamsWordCountRestoresFromChangelog(t *testing.T) {
	t.Parallel()
	needJar(t, "kafka-streams-*.jar")
	gw := startGateway(t)
	cl := newClient(t, gw.Addr)
	const app, in, out = "wc-app", "wc-lines", "wc-counts"
	createTopic(t, cl, in, 2)
	createTopic(t, cl, out, 2)
	src := javaSource(t, "java/src/WordCount.java")
	want := map[string]int{}
	produceLines := func(from, to int) { produceWordLines(t, cl, in, from, to, want) }
	countsMatch := func() error {
		got, err := latestValues(t, gw.Addr, out)
		if err != nil {
			return err
		}
		return countsEqual(got, want)
	}

	produceLines(0, 200)
	wc := javaStart(t, "WordCount", src, gw.Addr, app, in, out, t.TempDir())
	wc.waitOutput(t, "RUNNING", 3*time.Minute)
	if err := await.Poll(2*time.Minute, time.Second, countsMatch); err != nil {
		t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
	}

	// Streams purges what it consumed from its repartition topic through
	// DeleteRecords, but only on a commit that had something to commit and
	// came more than repartition.purge.interval.ms (1 s in WordCount) after
	// the stream thread started; a clean close commits without purging. An
	// app that counted the first lines within that second would never
	// purge while idle, so each wait below feeds it one more line.
	repart := app + "-words-repartition"
	next := 200
	if err := await.Poll(time.Minute, time.Second, func() error {
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
	}); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	if err := await.Poll(2*time.Minute, time.Second, countsMatch); err != nil {
		t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
	}
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
	if err := await.Poll(2*time.Minute, time.Second, countsMatch); err != nil {
		t.Fatalf("still not so after %v: %v", 2*time.Minute, err)
	}
	wc.stop(t, time.Minute)
}

// produceWordLines produces lines from..to-1 of the word counts' input to
// topic and adds their words to want. Line i holds 1-3 words picked from
// i, so the counts differ.
func produceWordLines(t *testing.T, cl *kgo.Client, topic string, from, to int, want map[string]int) {
	t.Helper()
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		var ws []string
		for j := 0; j <= i%3; j++ {
			w := words[(i*(j+2)+j)%len(words)]
			ws = append(ws, w)
			want[w]++
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: []byte(strings.Join(ws, " "))})
	}
	produceAll(t, cl, recs)
}

// countsEqual compares the word counts read from the output (word ->
// decimal count) with the counts of the lines produced.
func countsEqual(got map[string]string, want map[string]int) error {
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
