package codec

import "testing"

// realisticRecords is a produce batch as a typical client sends it: 100
// records of 100 B values and 10 of 1 KiB, short keys, a header on some.
func realisticRecords() []testRecord {
	var recs []testRecord
	for i := 0; i < 110; i++ {
		size := 100
		if i%11 == 10 {
			size = 1024
		}
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		r := testRecord{TsDelta: int64(i / 10), OffsetDelta: int32(i), Key: []byte("user-" + string(rune('0'+i%10))), Value: v}
		if i%4 == 0 {
			r.Headers = []testHeader{{[]byte("trace-id"), []byte("4bf92f3577b34da6a3ce929d0e0e4736")}}
		}
		recs = append(recs, r)
	}
	return recs
}

// BenchmarkParseBatchIterate: CRC check, then every record and header.
func BenchmarkParseBatchIterate(b *testing.B) {
	recs := realisticRecords()
	batch := kmsgBatch(kmsgRecords(recs), int32(len(recs)), 0, int32(len(recs)-1))
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	for b.Loop() {
		rb, _, err := ParseBatch(batch)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		it := NewRecordIter(rb.Records, rb.NumRecords)
		for it.Next() {
			r := it.Record()
			h := NewHeaderIter(r.Headers, r.HeaderCount)
			for h.Next() {
				n += len(h.Value())
			}
			n += len(r.Value)
		}
		if it.Err() != nil || n == 0 {
			b.Fatal(it.Err())
		}
	}
}
