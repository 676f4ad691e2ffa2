package codec

import "testing"

// BenchmarkDecompress decompresses the realistic produce batch's records
// (about 23 KiB) with each codec into a reused buffer.
func BenchmarkDecompress(b *testing.B) {
	plain := kmsgRecords(realisticRecords())
	for _, c := range compressors {
		comp := c.enc(b, plain)
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, len(plain))
			b.ReportAllocs()
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				out, err := Decompress(dst[:0], c.codec, comp, 1<<20)
				if err != nil || len(out) != len(plain) {
					b.Fatal(err)
				}
			}
		})
	}
}
