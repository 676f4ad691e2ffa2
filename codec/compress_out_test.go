package codec

import (
	"bytes"
	"testing"
)

// Every codec's output decodes back with Decompress (which reads what
// Kafka clients write), for empty, small and multi-block inputs.
func TestCompressRoundTrip(t *testing.T) {
	t.Parallel()
	inputs := [][]byte{{}, []byte("hello kafka"), bytes.Repeat([]byte("abcdefgh"), 20000), make([]byte, 3<<20)}
	for _, c := range []int8{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		for _, in := range inputs {
			prefix := []byte("keep")
			out, err := Compress(append([]byte(nil), prefix...), c, in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("codec %d: dst prefix lost", c)
			}
			back, err := Decompress(nil, c, out[len(prefix):], len(in)+1)
			if err != nil || !bytes.Equal(back, in) {
				t.Fatalf("codec %d, %d bytes: round trip %v (%d bytes back)", c, len(in), err, len(back))
			}
			if len(in) == 3<<20 && len(out) > 1<<20 {
				t.Errorf("codec %d: 3 MiB of zeros took %d bytes", c, len(out))
			}
		}
	}
	if _, err := Compress(nil, CompressionNone, []byte("x")); err == nil {
		t.Error("CompressionNone accepted")
	}
}

func BenchmarkCompress(b *testing.B) {
	in := bytes.Repeat([]byte("a kafka record value of some length, "), 1<<10)
	for _, c := range []struct {
		name  string
		codec int8
	}{{"gzip", CompressionGzip}, {"snappy", CompressionSnappy}, {"lz4", CompressionLZ4}, {"zstd", CompressionZstd}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			dst := make([]byte, 0, len(in))
			for b.Loop() {
				dst, _ = Compress(dst[:0], c.codec, in)
			}
		})
	}
}

// A batch built uncompressed and compressed in place parses, checks its
// CRC, names the codec and decompresses to the same records.
func TestCompressBatch(t *testing.T) {
	t.Parallel()
	var bb BatchBuilder
	dst := bb.Begin([]byte("prefix"), 100, 1_700_000_000_000)
	for i := range 50 {
		dst = bb.AppendRecord(dst, int32(i), int64(i), []byte("k"), bytes.Repeat([]byte{byte(i)}, 300), 0)
	}
	dst = bb.Finish(dst)
	plain := append([]byte(nil), dst[6:]...)
	for _, c := range []int8{CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		out, _, err := CompressBatch(append([]byte(nil), dst...), 6, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		rb, _, err := ParseBatch(out[6:])
		if err != nil {
			t.Fatalf("codec %d: %v", c, err)
		}
		if rb.Compression() != c || rb.NumRecords != 50 || rb.BaseOffset != 100 {
			t.Fatalf("codec %d: %+v", c, rb)
		}
		recs, err := Decompress(nil, c, rb.Records, 1<<20)
		if err != nil || !bytes.Equal(recs, plain[BatchHeaderLen:]) {
			t.Fatalf("codec %d: records differ (%v)", c, err)
		}
		if len(out)-6 >= len(plain) {
			t.Errorf("codec %d: %d bytes, not smaller than %d", c, len(out)-6, len(plain))
		}
	}
}
