package e2e

// Fetch sends each batch compressed as the producer sent it (docs/MAPPING.md,
// kafka.codec), and every client reads it back: kcat (librdkafka), the Java
// console consumer and franz-go; the wire shows each codec.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/codec"
)

func TestCompressedFetchRealClients(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	admin := newClient(t, gw.Addr)
	const topic = "compressed-fetch"
	createTopic(t, admin, topic, 1)
	codecs := []struct {
		name string
		c    kgo.CompressionCodec
		id   int8
	}{{"gzip", kgo.GzipCompression(), codec.CompressionGzip}, {"snappy", kgo.SnappyCompression(), codec.CompressionSnappy},
		{"lz4", kgo.Lz4Compression(), codec.CompressionLZ4}, {"zstd", kgo.ZstdCompression(), codec.CompressionZstd},
		{"none", kgo.NoCompression(), codec.CompressionNone}}
	var want []string
	for _, cc := range codecs {
		cl := newClient(t, gw.Addr, kgo.ProducerBatchCompression(cc.c), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(50*time.Millisecond))
		var recs []*kgo.Record
		for i := range 50 {
			v := fmt.Sprintf("%s-%02d-%s", cc.name, i, strings.Repeat("x", 200))
			recs = append(recs, &kgo.Record{Value: []byte(v)})
			want = append(want, v)
		}
		produceAll(t, cl, recs)
		cl.Close()
	}

	// On the wire: one batch per produce batch, each with its codec.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MaxBytes = 12, 100, 50<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicIDOf(t, admin, topic)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 50 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int8]int{}
	b := resp.Topics[0].Partitions[0].RecordBatches
	for len(b) > 0 {
		rb, n, err := codec.ParseBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		seen[rb.Compression()] += int(rb.NumRecords)
		b = b[n:]
	}
	for _, cc := range codecs {
		if seen[cc.id] != 50 {
			t.Errorf("%s: %d records in batches of that codec, want 50 (seen %v)", cc.name, seen[cc.id], seen)
		}
	}
	sort.Strings(want)
	check := func(who string, got []string) {
		t.Helper()
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s read %d records, want %d (first %q)", who, len(got), len(want), first(got))
		}
	}
	// franz-go.
	cons := newClient(t, gw.Addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < len(want) && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	check("franz-go", got)
	// librdkafka.
	kcat := needKcat(t)
	out, errOut, err := runCmd(t, 60*time.Second, "", kcat, "-b", gw.Addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
	if err != nil {
		t.Fatalf("kcat: %v\n%s", err, errOut)
	}
	check("kcat", strings.Fields(out))
	// The Java consumer.
	needJava(t)
	out, errOut, err = javaRun(t, 120*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", gw.Addr, "--topic", topic, "--from-beginning", "--max-messages", fmt.Sprint(len(want)), "--timeout-ms", "60000")
	if err != nil {
		t.Fatalf("ConsoleConsumer: %v\n%s", err, tail(errOut, 30))
	}
	check("the Java console consumer", strings.Fields(out))
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0][:min(len(s[0]), 20)]
}
