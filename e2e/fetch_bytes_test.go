package e2e

// The record sets of Fetch responses: never null, and within max_bytes and
// partition_max_bytes (KIP-74), with raw requests and real consumers.

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchBytesTopic creates topic with parts partitions and n records of
// valueSize bytes on each, and returns a raw Fetch request of every
// partition from offset 0.
func fetchBytesTopic(t *testing.T, addr, topic string, parts int32, n, valueSize int) *kmsg.FetchRequest {
	t.Helper()
	// Uncompressed: these limits are per record, as the gateway cuts
	// uncompressed batches; a compressed batch is counted whole (the
	// bridge's TestCompressedBatchBudget).
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, topic, parts)
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: bytes.Repeat([]byte{byte('a' + i%26)}, valueSize)})
		}
	}
	produceAll(t, cl, recs)

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < parts; p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset = 0
		rp.LogStartOffset = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// batchesIn splits a partition's record set into batches and returns
// each batch's record count.
func batchesIn(t *testing.T, b []byte) []int32 {
	t.Helper()
	var counts []int32
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("record batch: %v", err)
		}
		counts = append(counts, rb.NumRecords)
		b = b[12+int(rb.Length):]
	}
	return counts
}

// max_bytes and partition_max_bytes bound the whole Fetch response, the
// first partition included; KIP-74 lets only the
// first batch of the first partition with data go over. The gateway
// builds the batches it returns, so "the first batch" is one record.
// Checked at the oldest and the newest Fetch version served, on whichever
// backend the pass runs (embedded, iggytest, the real Iggy server).
func TestFetchBytesLimits(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	const parts, n, size = 3, 20, 4000
	req := fetchBytesTopic(t, gw.Addr, "fetch-bytes", parts, n, size)
	w := dialWire(t, gw.Addr)
	corr := int32(0)
	fetch := func(v int16, maxBytes, partMax int32) []kmsg.FetchResponseTopicPartition {
		t.Helper()
		req.MaxBytes = maxBytes
		for i := range req.Topics[0].Partitions {
			req.Topics[0].Partitions[i].PartitionMaxBytes = partMax
		}
		corr++
		resp := w.roundTrip(req, v, corr).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != parts {
			t.Fatalf("v%d: error %d, topics %+v", v, resp.ErrorCode, resp.Topics)
		}
		ps := resp.Topics[0].Partitions
		for _, p := range ps {
			if p.ErrorCode != 0 || p.HighWatermark != n {
				t.Fatalf("v%d partition %d: error %d, high watermark %d", v, p.Partition, p.ErrorCode, p.HighWatermark)
			}
		}
		return ps
	}
	for _, v := range []int16{4, 12} {
		// 1 byte for the response, 100 MB per partition: exactly one
		// batch of one record, from the first partition only.
		ps := fetch(v, 1, 100<<20)
		if got := batchesIn(t, ps[0].RecordBatches); len(got) != 1 || got[0] != 1 {
			t.Fatalf("v%d max_bytes 1: partition 0 returned batches %v (%d bytes), want one batch of one record", v, got, len(ps[0].RecordBatches))
		}
		for p := 1; p < parts; p++ {
			if len(ps[p].RecordBatches) != 0 {
				t.Fatalf("v%d max_bytes 1: partition %d returned %d bytes after the first had data", v, p, len(ps[p].RecordBatches))
			}
		}

		// 30 KB for the response, 100 MB per partition: the total stays
		// under 30 KB (every record fits on its own, so nothing goes over).
		ps = fetch(v, 30000, 100<<20)
		total, recs := 0, int32(0)
		for p := range ps {
			total += len(ps[p].RecordBatches)
			for _, c := range batchesIn(t, ps[p].RecordBatches) {
				recs += c
			}
		}
		if total > 30000 || recs < 6 {
			t.Fatalf("v%d max_bytes 30000: %d bytes, %d records", v, total, recs)
		}

		// 9 KB per partition, 20 KB in all: every partition within its
		// limit, the response within its own, and more than one
		// partition served.
		ps = fetch(v, 20000, 9000)
		total = 0
		for p := range ps {
			if l := len(ps[p].RecordBatches); l > 9000 {
				t.Fatalf("v%d partition_max_bytes 9000: partition %d returned %d bytes", v, p, l)
			}
			total += len(ps[p].RecordBatches)
		}
		if total > 20000 || len(ps[0].RecordBatches) == 0 || len(ps[1].RecordBatches) == 0 {
			t.Fatalf("v%d max_bytes 20000 / 9000: %d bytes; partition bytes %d, %d, %d", v, total,
				len(ps[0].RecordBatches), len(ps[1].RecordBatches), len(ps[2].RecordBatches))
		}
	}
}

// A consumer with a 1-byte fetch budget still makes progress: every
// response carries one record (KIP-74), and it reads all of them.
func TestFetchBytesTinyBudgetConsumes(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	const parts, n = 3, 10
	fetchBytesTopic(t, gw.Addr, "fetch-tiny", parts, n, 3000)
	cl := newClient(t, gw.Addr,
		kgo.ConsumeTopics("fetch-tiny"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(1),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[int32]int64{}
	got := 0
	for got < parts*n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, parts*n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := seen[r.Partition]; r.Offset != want {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, want)
			}
			seen[r.Partition] = r.Offset + 1
			got++
		})
	}
}

// A Fetch partition with nothing to return must carry an empty record set,
// not a null one: librdkafka (kcat) reads a size of -1 as "invalid
// MessageSetSize", backs off and retries forever, so `kcat -C -e` never
// sees the end of the partition. Kafka brokers always send an empty set.
// kcat itself fetches at v11; every non-flexible version is checked.
func TestFetchEmptyPartitionRecordsNotNull(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "quiet", 1)
	produceAll(t, cl, testRecords("quiet", 3))

	for _, v := range []int16{4, 7, 11, 12} {
		for _, offset := range []int64{3, 0} { // at the end, and with data
			w := dialWire(t, gw.Addr)
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis = 0
			req.MinBytes = 1
			req.MaxBytes = 1 << 20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "quiet"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = 0
			rp.FetchOffset = offset
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := w.roundTrip(req, v, 1).(*kmsg.FetchResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("v%d: answer %+v", v, resp.Topics)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.HighWatermark != 3 {
				t.Fatalf("v%d offset %d: error %d, high watermark %d", v, offset, p.ErrorCode, p.HighWatermark)
			}
			if p.RecordBatches == nil {
				t.Errorf("Fetch v%d at offset %d: null record set, want an empty one", v, offset)
			}
		}
	}
}
