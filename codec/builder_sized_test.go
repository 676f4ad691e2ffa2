package codec

import (
	"bytes"
	"testing"
)

// zigzagLen is the size of v as a zigzag varint, computed without the
// encoder under test.
func zigzagLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bodyLen is the Kafka record body length of r (what its length varint
// counts), computed independently of the builder.
func bodyLen(r testRecord) int {
	vbytes := func(b []byte) int {
		if b == nil {
			return zigzagLen(-1)
		}
		return zigzagLen(int64(len(b))) + len(b)
	}
	n := 1 + zigzagLen(r.TsDelta) + zigzagLen(int64(r.OffsetDelta)) +
		vbytes(r.Key) + vbytes(r.Value) + zigzagLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += vbytes(h.Key) + vbytes(h.Value) // a nil key is written empty: same size
	}
	return n
}

// TestAppendRecordSized: with the right body length, and with lengths too
// small, too large or out of range (a caller's mistake), the batch is byte
// for byte the one AppendRecord builds.
func TestAppendRecordSized(t *testing.T) {
	t.Parallel()
	recs := sampleRecords()
	want := buildBatch([]byte("prefix"), 5000, 1_700_000_000_000, recs)
	for _, c := range []struct {
		name string
		fix  func(int) int
	}{
		{"exact", func(n int) int { return n }},
		{"too small", func(int) int { return 1 }},
		{"too large", func(int) int { return 1 << 30 }},
		{"negative", func(int) int { return -7 }},
		{"off by one", func(n int) int { return n - 1 }},
	} {
		var bb BatchBuilder
		got := bb.Begin([]byte("prefix"), 5000, 1_700_000_000_000)
		for _, r := range recs {
			got = bb.AppendRecordSized(got, c.fix(bodyLen(r)), r.OffsetDelta, r.TsDelta, r.Key, r.Value, len(r.Headers))
			for _, h := range r.Headers {
				got = bb.AppendHeader(got, h.Key, h.Value)
			}
		}
		got = bb.Finish(got)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: batch differs from AppendRecord's", c.name)
		}
	}
	_, decoded := kmsgDecode(t, want[len("prefix"):])
	compareRecords(t, decoded, recs)
}

// BenchmarkBatchBuilderSized is BenchmarkBatchBuilder1MiB with the record
// lengths known up front (AppendRecordSized), and a 100 B variant of both.
func BenchmarkBatchBuilderSized(b *testing.B) {
	for _, c := range []struct {
		name  string
		size  int
		n     int32
		sized bool
	}{{"1KiB/reserve", 1000, 1024, false}, {"1KiB/sized", 1000, 1024, true},
		{"100B/reserve", 100, 9090, false}, {"100B/sized", 100, 9090, true}} {
		b.Run(c.name, func(b *testing.B) {
			value := make([]byte, c.size)
			// Body length less the two deltas (both i): attributes, null
			// key, value, header count.
			fixed := 1 + zigzagLen(-1) + zigzagLen(int64(len(value))) + len(value) + zigzagLen(0)
			buf := make([]byte, 0, 2<<20)
			b.ReportAllocs()
			for b.Loop() {
				var bb BatchBuilder
				out := bb.Begin(buf[:0], 0, 1_700_000_000_000)
				for i := int32(0); i < c.n; i++ {
					if c.sized {
						out = bb.AppendRecordSized(out, fixed+2*zigzagLen(int64(i)), i, int64(i), nil, value, 0)
					} else {
						out = bb.AppendRecord(out, i, int64(i), nil, value, 0)
					}
				}
				buf = bb.Finish(out)
			}
		})
	}
}
