package bridge

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/iggy-kafka/gateway/codec"
)

// benchBatch is a Kafka batch of n records with size-byte values, a small
// key and one header, the shape of a typical keyed producer.
func benchBatch(tb testing.TB, n, size int) codec.RecordBatch {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{
			key:     fmt.Appendf(nil, "key-%d", i),
			value:   bytes.Repeat([]byte{byte(i)}, size),
			ts:      nowMs + int64(i),
			headers: []hdr{{"trace", []byte("0123456789abcdef")}},
		}
	}
	rb, _, err := codec.ParseBatch(kafkaBatch(tb, plainMeta, recs))
	if err != nil {
		tb.Fatal(err)
	}
	return rb
}

// plainBatch is a Kafka batch of n records with size-byte values, no key
// and no headers, timestamps rising: what the bench harness's kgo producer
// sends.
func plainBatch(tb testing.TB, n, size int) codec.RecordBatch {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{value: bytes.Repeat([]byte{byte(i)}, size), ts: nowMs + int64(i/100)}
	}
	rb, _, err := codec.ParseBatch(kafkaBatch(tb, plainMeta, recs))
	if err != nil {
		tb.Fatal(err)
	}
	return rb
}

func BenchmarkEncodeKafkaRecords(b *testing.B) {
	for _, c := range []struct {
		n, size int
		plain   bool
	}{{100, 100, false}, {10, 1024, false}, {1000, 100, true}, {100, 1024, true}} {
		name := fmt.Sprintf("%dx%dB", c.n, c.size)
		if c.plain {
			name += "-plain"
		}
		b.Run(name, func(b *testing.B) {
			rb := benchBatch(b, c.n, c.size)
			if c.plain {
				rb = plainBatch(b, c.n, c.size)
			}
			dst := make([]byte, 0, 1<<20)
			b.ReportAllocs()
			b.SetBytes(int64(len(rb.Records)))
			for b.Loop() {
				var err error
				if dst, _, err = EncodeKafkaRecords(dst[:0], &rb, rb.Records, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The -snappy/-lz4/-zstd/-gzip cases are batches their producer
// compressed: Fetch compresses them again every time (records are stored
// uncompressed), and this is that cost per codec.
func BenchmarkAppendKafkaBatch(b *testing.B) {
	for _, c := range []struct {
		n, size int
		plain   bool
		codec   int8
	}{{100, 100, false, 0}, {10, 1024, false, 0}, {1000, 100, true, 0}, {100, 1024, true, 0},
		{100, 1024, true, codec.CompressionSnappy}, {100, 1024, true, codec.CompressionLZ4},
		{100, 1024, true, codec.CompressionZstd}, {100, 1024, true, codec.CompressionGzip}} {
		name := fmt.Sprintf("%dx%dB", c.n, c.size)
		if c.plain {
			name += "-plain"
		}
		if c.codec != codec.CompressionNone {
			name += "-" + map[int8]string{codec.CompressionGzip: "gzip", codec.CompressionSnappy: "snappy",
				codec.CompressionLZ4: "lz4", codec.CompressionZstd: "zstd"}[c.codec]
		}
		b.Run(name, func(b *testing.B) {
			rb := benchBatch(b, c.n, c.size)
			if c.plain {
				rb = plainBatch(b, c.n, c.size)
			}
			rb.Attributes |= int16(c.codec)
			iggy, _, err := EncodeKafkaRecords(nil, &rb, rb.Records, 0)
			if err != nil {
				b.Fatal(err)
			}
			StampIggyBatch(iggy, 0, 1000, testServerTs)
			dst := make([]byte, 0, 1<<20)
			b.ReportAllocs()
			b.SetBytes(int64(len(rb.Records)))
			for b.Loop() {
				cur := FetchCursor{MaxBytes: 1 << 20}
				if dst, err = AppendKafkaBatch(dst[:0], iggy, &cur); err != nil || cur.Records != c.n {
					b.Fatal(err, cur.Records)
				}
			}
		})
	}
}

func BenchmarkVerifyIggyBatch(b *testing.B) {
	rb := benchBatch(b, 100, 100)
	iggy, _, _ := EncodeKafkaRecords(nil, &rb, rb.Records, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(iggy)))
	for b.Loop() {
		if _, err := VerifyIggyBatch(iggy); err != nil {
			b.Fatal(err)
		}
	}
}

// The produce and fetch paths must not allocate when the caller's buffer
// has room: they run once per partition per request.
func TestMappingDoesNotAllocate(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	rb := benchBatch(t, 100, 100)
	dst := make([]byte, 0, 1<<20)
	iggy, _, err := EncodeKafkaRecords(nil, &rb, rb.Records, 0)
	if err != nil {
		t.Fatal(err)
	}
	StampIggyBatch(iggy, 0, 1, testServerTs)
	if n := testing.AllocsPerRun(50, func() {
		dst, _, _ = EncodeKafkaRecords(dst[:0], &rb, rb.Records, 0)
	}); n != 0 {
		t.Errorf("EncodeKafkaRecords: %v allocs", n)
	}
	if n := testing.AllocsPerRun(50, func() {
		cur := FetchCursor{MaxBytes: 1 << 20}
		dst, _ = AppendKafkaBatch(dst[:0], iggy, &cur)
	}); n != 0 {
		t.Errorf("AppendKafkaBatch: %v allocs", n)
	}
}

// BenchmarkBatchChecksum: the batch checksum of a 9090-message batch (the
// gateway's produce request of 100 B records), over its frames' checksums.
func BenchmarkBatchChecksum(b *testing.B) {
	rb := plainBatch(b, 9090, 100)
	iggy, _, err := EncodeKafkaRecords(nil, &rb, rb.Records, 0)
	if err != nil {
		b.Fatal(err)
	}
	v, err := ParseIggyBatch(iggy)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if batchChecksum(v, v.Messages) != v.Checksum {
			b.Fatal("checksum")
		}
	}
}
