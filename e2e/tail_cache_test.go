package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/loop"
)

// Real consumers keeping up with producers read from the tail cache
// (internal/fetchcache, Tail): franz-go and kcat get exactly the records
// produced, with snappy and gzip batches sent as the producer compressed
// them, and the cache counts the hits. A topic deleted and made again
// under the same name answers with its own records only. On every backend.
func TestTailCacheRealClients(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "tail", 3, kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	want := produceAll(t, cl, testRecords("tail", 300))
	gz := newClient(t, gw.Addr, kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.DefaultProduceTopic("tail"))
	want = append(want, produceAll(t, gz, testRecords("tail", 100))...)

	before := gw.G.TailCacheStats()
	sameRecs(t, want, consumeN(t, gw.Addr, "tail", len(want)))
	after := gw.G.TailCacheStats()
	if after.Hits <= before.Hits || after.ServedBytes == before.ServedBytes {
		t.Fatalf("franz-go read nothing from the tail cache: %+v then %+v", before, after)
	}

	lines := kcatConsumeAll(t, kcat, gw.Addr, "tail", false)
	var got []rec
	for _, l := range lines {
		got = append(got, rec{Partition: l.Partition, Offset: l.Offset, Key: l.Key, Value: l.Value})
	}
	var noHeaders []rec
	for _, r := range want {
		r.Headers = ""
		noHeaders = append(noHeaders, r)
	}
	sameRecs(t, noHeaders, got)
	if st := gw.G.TailCacheStats(); st.Hits <= after.Hits {
		t.Errorf("kcat read nothing from the tail cache: %+v then %+v", after, st)
	}

	// The same name, a new life: only its own records, at offsets from 0.
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := adm.DeleteTopics(ctx, "tail"); err != nil || res.Error() != nil {
		t.Fatalf("delete: %v %v", err, res.Error())
	}
	await.Until(t, 10*time.Second, func() error {
		res, err := adm.CreateTopics(ctx, 3, 1, nil, "tail")
		if err != nil {
			return err
		}
		return res.Error()
	})
	fresh := make([]*kgo.Record, 30)
	for i := range fresh {
		fresh[i] = &kgo.Record{Topic: "tail", Key: fmt.Appendf(nil, "new-%d", i%3), Value: fmt.Appendf(nil, "second life %d", i)}
	}
	// A new client: one that knew the old life keeps its topic id and,
	// with Produce v13 (topics by id), gets UNKNOWN_TOPIC_ID for the new
	// one, as from a Kafka 4 broker (franz-go does not adopt a new id).
	want2 := produceAll(t, newClient(t, gw.Addr), fresh)
	got2 := consumeN(t, gw.Addr, "tail", len(want2))
	for _, r := range got2 {
		if !strings.HasPrefix(r.Value, "second life") {
			t.Fatalf("the remade topic answered an old record: %v", r)
		}
	}
	sameRecs(t, want2, got2)
}

// A topic the gateway cached, deleted and made again natively with the
// iggy CLI (the gateway is not told): Kafka consumers get the new topic's
// records, never the cached ones of the old, on both fetch paths. Real
// Iggy server only.
func TestTailCacheTopicRemadeNatively(t *testing.T) {
	t.Parallel()
	for _, concurrency := range []int{1, 8} {
		t.Run(fmt.Sprintf("fetch-concurrency-%d", concurrency), func(t *testing.T) {
			testTailCacheTopicRemadeNatively(t, func(hc *handlers.Config, _ *loop.Config) { hc.FetchConcurrency = concurrency })
		})
	}
}

func testTailCacheTopicRemadeNatively(t *testing.T, opt gwOption) {
	gw, rb, cli := realGateway(t, opt)
	cl := clientWithTopic(t, gw.Addr, "remade", 1)
	old := make([]*kgo.Record, 5)
	for i := range old {
		old[i] = &kgo.Record{Topic: "remade", Value: fmt.Appendf(nil, "old %d", i)}
	}
	produceAll(t, cl, old)
	sent := gw.G.TailCacheStats()
	if got := consumeN(t, gw.Addr, "remade", len(old)); got[0].Value != "old 0" {
		t.Fatalf("first record %v", got[0])
	}
	if st := gw.G.TailCacheStats(); st.Hits <= sent.Hits {
		t.Fatalf("the old topic was not read from the tail cache: %+v then %+v", sent, st)
	}

	cli.run("", "topic", "delete", rb.stream, "remade")
	cli.run("", "topic", "create", rb.stream, "remade", "1", "none")
	// More records than the old topic held, so its cached offsets are all
	// below the new high watermark: only the topic's identity tells them
	// apart.
	var natives []string
	for i := range 12 {
		natives = append(natives, fmt.Sprintf("native %d", i))
	}
	cli.run("", append([]string{"message", "send", "-p", "0", rb.stream, "remade"}, natives...)...)

	got := consumeN(t, gw.Addr, "remade", len(natives))
	for i, r := range got {
		if r.Offset != int64(i) || r.Value != fmt.Sprintf("native %d", i) {
			t.Errorf("record %d of the remade topic: %v", i, r)
		}
	}
}
