package bridge

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/codec"
)

// hdr is one Kafka header of a test record; v nil is a null value.
type hdr struct {
	k string
	v []byte
}

// rec is one Kafka record as a test writes and expects it. ts is the
// absolute CreateTime in ms; nil key/value are null.
type rec struct {
	key, value []byte
	ts         int64
	headers    []hdr
}

// batchMeta is the batch-level part of a Kafka batch under test.
type batchMeta struct {
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	attributes    int16
}

var plainMeta = batchMeta{producerID: -1, producerEpoch: -1, baseSequence: -1}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// fetched stamps iggy as a stored batch of partition 0 at base (server
// time testServerTs) and reads it back as Kafka batches with a 1 MiB
// budget; cur is where the read stopped.
func fetched(t testing.TB, iggy []byte, base uint64) (out []byte, cur FetchCursor) {
	t.Helper()
	StampIggyBatch(iggy, 0, base, testServerTs)
	cur = FetchCursor{MaxBytes: 1 << 20}
	out, err := AppendKafkaBatch(nil, iggy, &cur)
	if err != nil {
		t.Fatal(err)
	}
	return out, cur
}

// kafkaBatch encodes recs as a v2 batch with kmsg, independently of codec.
func kafkaBatch(t testing.TB, m batchMeta, recs []rec) []byte {
	t.Helper()
	first := recs[0].ts
	maxTs := first
	var records []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.ts - first, OffsetDelta: int32(i), Key: r.key, Value: r.value}
		for _, h := range r.headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.k, Value: h.v})
		}
		body := kr.AppendTo(nil)[1:] // drop the placeholder length 0
		kr.Length = int32(len(body))
		records = kr.AppendTo(records)
		maxTs = max(maxTs, r.ts)
	}
	kb := kmsg.RecordBatch{
		Length:          int32(49 + len(records)),
		Magic:           2,
		Attributes:      m.attributes,
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  first,
		MaxTimestamp:    maxTs,
		ProducerID:      m.producerID,
		ProducerEpoch:   m.producerEpoch,
		FirstSequence:   m.baseSequence,
		NumRecords:      int32(len(recs)),
		Records:         records,
	}
	out := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crcTable))
	return out
}

// readKafka decodes a fetched v2 batch with kmsg, checking its CRC, and
// returns its base offset and records with absolute timestamps.
func readKafka(t testing.TB, b []byte) (int64, []int64, []rec) {
	t.Helper()
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg cannot read the fetched batch: %v", err)
	}
	if int(kb.Length)+12 != len(b) {
		t.Fatalf("batch length %d for %d bytes", kb.Length, len(b))
	}
	if crc := crc32.Checksum(b[21:], crcTable); crc != uint32(kb.CRC) {
		t.Fatalf("fetched batch CRC %08x, computed %08x", uint32(kb.CRC), crc)
	}
	if kb.Attributes != 0 || kb.ProducerID != -1 || kb.NumRecords < 1 {
		t.Fatalf("fetched batch header %+v", kb)
	}
	var offsets []int64
	var out []rec
	src := kb.Records
	maxTs := int64(-1 << 63)
	for i := int32(0); i < kb.NumRecords; i++ {
		l, n := binary.Varint(src)
		var kr kmsg.Record
		if err := kr.ReadFrom(src[:n+int(l)]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		src = src[n+int(l):]
		r := rec{key: kr.Key, value: kr.Value, ts: kb.FirstTimestamp + kr.TimestampDelta64}
		for _, h := range kr.Headers {
			r.headers = append(r.headers, hdr{h.Key, h.Value})
		}
		offsets = append(offsets, kb.FirstOffset+int64(kr.OffsetDelta))
		out = append(out, r)
		maxTs = max(maxTs, r.ts)
	}
	if len(src) != 0 {
		t.Fatalf("%d bytes after the records", len(src))
	}
	if kb.LastOffsetDelta != int32(offsets[len(offsets)-1]-kb.FirstOffset) || kb.MaxTimestamp != maxTs {
		t.Fatalf("last offset delta %d / max ts %d do not match the records", kb.LastOffsetDelta, kb.MaxTimestamp)
	}
	return kb.FirstOffset, offsets, out
}

// encode runs EncodeKafkaRecords over a kmsg-built batch.
func encode(t testing.TB, m batchMeta, recs []rec, maxMessage int) ([]byte, error) {
	t.Helper()
	out, _, err := encodeStats(t, m, recs, maxMessage)
	return out, err
}

// encodeStats is encode with the encoder's stats.
func encodeStats(t testing.TB, m batchMeta, recs []rec, maxMessage int) ([]byte, ProduceStats, error) {
	t.Helper()
	kb := kafkaBatch(t, m, recs)
	rb, n, err := codec.ParseBatch(kb)
	if err != nil || n != len(kb) {
		t.Fatalf("codec.ParseBatch: %v (%d of %d)", err, n, len(kb))
	}
	out, stats, err := EncodeKafkaRecords(nil, &rb, rb.Records, maxMessage)
	if err == nil && (stats.Messages != len(recs) || stats.Bytes != len(out)) {
		t.Fatalf("stats %+v for %d records, %d bytes", stats, len(recs), len(out))
	}
	return out, stats, err
}

// sameBytes compares with null and empty kept apart.
func sameBytes(a, b []byte) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return string(a) == string(b)
}

func sameRec(a, b rec) bool {
	if !sameBytes(a.key, b.key) || !sameBytes(a.value, b.value) || a.ts != b.ts || len(a.headers) != len(b.headers) {
		return false
	}
	for i := range a.headers {
		if a.headers[i].k != b.headers[i].k || !sameBytes(a.headers[i].v, b.headers[i].v) {
			return false
		}
	}
	return true
}

// userHeaders lists a TLV block as "key=kind:value" strings.
func userHeaders(t testing.TB, block []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	it := NewUserHeaderIter(block)
	for it.Next() {
		out[string(it.Key())] = append([]byte{byte(it.ValueKind())}, it.Value()...)
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	if err := ValidateUserHeaders(block); err != nil {
		t.Fatalf("gateway wrote a block Iggy's rules refuse: %v", err)
	}
	return out
}

// messages lists the messages of a batch.
func messages(t testing.TB, b []byte) []IggyMessage {
	t.Helper()
	v, err := ParseIggyBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []IggyMessage
	it := NewIggyMessageIter(v)
	for it.Next() {
		out = append(out, *it.Message())
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return out
}
