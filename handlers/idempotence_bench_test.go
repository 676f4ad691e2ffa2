package handlers

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// BenchmarkProduceIdempotent is BenchmarkProduce with producer id, epoch
// and sequence set (dedup on): each iteration is the next batch of one
// producer, so it pays the state lookup, the check-and-append under the
// producer lock and the record. Sequence and CRC are patched in place in
// the request body between iterations.
func BenchmarkProduceIdempotent(b *testing.B) {
	g := newGateway(b)
	recs := benchTopic(b, g)
	bt := batch(recs...)
	binary.BigEndian.PutUint64(bt[hProducerID:], 4242)
	binary.BigEndian.PutUint16(bt[hProducerID+8:], 0)
	body := produceReq(9, "bench", 0, bt).AppendTo(nil)
	at := len(body) - len(bt) - 1 // the batch sits just before the trailing tag byte
	for string(body[at:at+len(bt)]) != string(bt) {
		at--
	}
	spec := Lookup(0)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	seq := int32(0)
	for b.Loop() {
		rb := body[at : at+len(bt)]
		binary.BigEndian.PutUint32(rb[hProducerID+10:], uint32(seq))
		binary.BigEndian.PutUint32(rb[hCRC:], crc32.Checksum(rb[hAttributes:], castagnoli))
		seq += int32(len(recs))
		benchProduce(b, g, spec, body)
	}
}

// BenchmarkIdempotenceState is the dedup bookkeeping alone, without the
// store: state lookup, producer lock, check and record of the next batch.
func BenchmarkIdempotenceState(b *testing.B) {
	g := newGateway(b)
	createTopic(b, g, "bench", 1)
	c := &Call{G: g, Ctx: b.Context()}
	k := seqPartKey{topic: "bench", id: 1, partition: 0}
	b.ReportAllocs()
	seq := int32(0)
	for b.Loop() {
		p, err := g.Idem.producer(c, k, 99)
		if err != nil {
			b.Fatal(err)
		}
		p.mu.Lock()
		last := lastSeqOf(seq, 100)
		if v, _, _ := p.check(0, seq, last); v != seqAppend {
			b.Fatal(v)
		}
		p.record(0, seq, last, uint64(seq), -1)
		p.mu.Unlock()
		seq = nextSeq(last)
	}
}
