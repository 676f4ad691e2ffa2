package codec

import "testing"

// BenchmarkBatchBuilder1MiB builds a 1 MiB fetch batch of 1 KiB records
// into a reused buffer, as a Fetch response would.
func BenchmarkBatchBuilder1MiB(b *testing.B) {
	value := make([]byte, 1000)
	key := []byte("key-000000")
	hv := []byte("v1")
	const n = 1024
	buf := make([]byte, 0, 2<<20)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		var bb BatchBuilder
		out := bb.Begin(buf[:0], 0, 1_700_000_000_000)
		for i := int32(0); i < n; i++ {
			out = bb.AppendRecord(out, i, int64(i), key, value, 1)
			out = bb.AppendHeader(out, []byte("kafka.v"), hv)
		}
		out = bb.Finish(out)
		size = len(out)
	}
	b.SetBytes(int64(size))
}
