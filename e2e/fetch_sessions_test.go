package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Incremental fetch sessions (KIP-227) with real clients over many
// partitions: franz-go and the Java consumer make sessions on their own
// when the broker offers them; every record must arrive exactly once and
// the gateway's counters must show incremental fetches were answered
// (with FetchSessionSlots -1, sessions off, they stay at zero and this
// fails).
const (
	fsTopics = 8
	fsParts  = 8
	fsPer    = 5 // records per partition per round
)

func fsTopic(i int) string { return fmt.Sprintf("fs-%02d", i) }

// fsProduce writes fsPer records to every partition, values
// "topic/partition/round/i", and returns them.
func fsProduce(t *testing.T, cl *kgo.Client, round int) []string {
	t.Helper()
	var recs []*kgo.Record
	var vals []string
	for ti := range fsTopics {
		for p := range fsParts {
			for i := range fsPer {
				v := fmt.Sprintf("%s/%d/%d/%d", fsTopic(ti), p, round, i)
				vals = append(vals, v)
				recs = append(recs, &kgo.Record{Topic: fsTopic(ti), Partition: int32(p), Value: []byte(v)})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return vals
}

// onceEach fails unless got holds each of want exactly once.
func onceEach(t *testing.T, who string, want, got []string) {
	t.Helper()
	seen := make(map[string]int, len(got))
	for _, v := range got {
		seen[v]++
	}
	for _, v := range want {
		if seen[v] != 1 {
			t.Fatalf("%s: record %q arrived %d times", who, v, seen[v])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", who, len(got), len(want))
	}
}

func TestFetchSessionsRealClients(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	prod := newClient(t, gw.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	topics := make([]string, fsTopics)
	for i := range topics {
		topics[i] = fsTopic(i)
		createTopic(t, prod, topics[i], fsParts)
	}
	want := fsProduce(t, prod, 0)

	// franz-go, group-less, from the start; a second round is produced
	// while it consumes, so incremental replies carry new data too.
	cons := newClient(t, gw.Addr, kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var got []string
	produced := false
	for !produced || len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consumed %d of %d", len(got), len(want))
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if !produced && len(got) >= len(want) {
			want = append(want, fsProduce(t, prod, 1)...)
			produced = true
		}
	}
	// Whatever else is still coming would be a duplicate.
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	cons.PollFetches(short).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	cancelShort()
	onceEach(t, "franz-go", want, got)
	st := gw.G.FetchSessionStats()
	if st.Created == 0 || st.Incremental == 0 {
		t.Fatalf("franz-go used no fetch session: %+v", st)
	}
	cons.Close()

	// The Java consumer (console consumer, its own group) reads all of it.
	needJava(t)
	before := gw.G.FetchSessionStats()
	out, errOut, err := javaRun(t, 3*time.Minute, "", "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", gw.Addr, "--include", "fs-.*", "--from-beginning",
		"--max-messages", strconv.Itoa(len(want)), "--timeout-ms", "60000",
		// Small polls and fetches: many incremental fetches, not one big one.
		"--command-property", "max.poll.records=20",
		"--command-property", "max.partition.fetch.bytes=200")
	if err != nil {
		t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, errOut)
	}
	onceEach(t, "java", want, strings.Split(strings.TrimSuffix(out, "\n"), "\n"))
	after := gw.G.FetchSessionStats()
	if after.Created <= before.Created || after.Incremental <= before.Incremental {
		t.Fatalf("the Java consumer used no fetch session: before %+v after %+v", before, after)
	}
}
