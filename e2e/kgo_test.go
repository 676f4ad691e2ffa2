package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go with its defaults: idempotent, acks=all, snappy, sticky key
// partitioning over three partitions. Every record reads back exactly, at
// the partition and offset its produce promise reported.
func TestKgoDefaultsRoundTrip(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "kgo-orders", 3)

	want := produceAll(t, cl, testRecords("kgo-orders", 600))
	parts := map[int32]bool{}
	for _, r := range want {
		parts[r.Partition] = true
	}
	if len(parts) < 2 {
		t.Errorf("records landed on %d partition(s); the key spread should use more", len(parts))
	}
	got := consumeN(t, gw.Addr, "kgo-orders", len(want))
	sameRecs(t, want, got)
}

// One test per codec franz-go can produce; the gateway decompresses on
// Produce and serves plain batches on Fetch.
func TestKgoCompression(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
		{"none", kgo.NoCompression()},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			cl := newClient(t, gw.Addr, kgo.ProducerBatchCompression(c.codec), kgo.AllowAutoTopicCreation())
			// Large, repetitive values so every codec really compresses.
			records := testRecords(topic, 300)
			for i, r := range records {
				r.Value = append(r.Value, make([]byte, 200+i)...)
			}
			want := produceAll(t, cl, records)
			got := consumeN(t, gw.Addr, topic, len(want))
			sameRecs(t, want, got)
		})
	}
}

// With --auto-create-topics=false, producing to an unknown topic is refused
// with UNKNOWN_TOPIC_OR_PARTITION and no topic appears.
func TestKgoAutoCreateOff(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withAutoCreate(false))
	cl := newClient(t, gw.Addr, kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(1),
		kgo.RecordDeliveryTimeout(10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "never-made", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to an unknown topic with auto-create off: err = %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if _, err := gw.Store.Topic(ctx, gw.Stream, "never-made"); err == nil {
		t.Fatal("the topic was created although auto-create is off")
	}
}
