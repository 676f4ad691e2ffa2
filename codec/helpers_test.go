package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testRecord is a record as the tests compare it, independent of both
// encoders.
type testRecord struct {
	TsDelta     int64
	OffsetDelta int32
	Key, Value  []byte
	Headers     []testHeader
}

type testHeader struct{ Key, Value []byte }

// sampleRecords covers the edge cases: null vs empty key and value, headers
// with null and empty values, negative and large timestamp deltas, gaps in
// offset deltas, and values long enough for multi-byte length varints.
func sampleRecords() []testRecord {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB
	return []testRecord{
		{TsDelta: 0, OffsetDelta: 0, Key: nil, Value: nil},
		{TsDelta: 1, OffsetDelta: 1, Key: []byte{}, Value: []byte{}},
		{TsDelta: -5, OffsetDelta: 2, Key: []byte("k"), Value: []byte("v"),
			Headers: []testHeader{{[]byte("h1"), nil}, {[]byte("h2"), []byte{}}, {[]byte{}, []byte("x")}}},
		{TsDelta: 1 << 40, OffsetDelta: 7, Key: []byte("key-2"), Value: big[:200]},
		{TsDelta: 63, OffsetDelta: 64, Key: big[:64], Value: big,
			Headers: []testHeader{{[]byte("trace"), big[:300]}}},
		{TsDelta: -1 << 40, OffsetDelta: 1<<31 - 1, Key: nil, Value: []byte("tombstone-ish? no, value")},
	}
}

// kmsgRecords encodes recs with kmsg's Record.AppendTo.
func kmsgRecords(recs []testRecord) []byte {
	var out []byte
	for _, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.TsDelta, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: string(h.Key), Value: h.Value})
		}
		body := kr.AppendTo(nil) // Length 0 takes one byte
		kr.Length = int32(len(body) - 1)
		out = kr.AppendTo(out)
	}
	return out
}

// kmsgBatch wraps records (already compressed when attrs says so) in a
// batch encoded by kmsg, with its CRC.
func kmsgBatch(records []byte, n int32, attrs int16, lastDelta int32) []byte {
	rb := kmsg.RecordBatch{
		FirstOffset:          1000,
		PartitionLeaderEpoch: 3,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      lastDelta,
		FirstTimestamp:       1_700_000_000_000,
		MaxTimestamp:         1_700_000_000_500,
		ProducerID:           42,
		ProducerEpoch:        1,
		FirstSequence:        17,
		NumRecords:           n,
		Records:              records,
	}
	rb.Length = int32(BatchHeaderLen - 12 + len(records))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// fixCRC recomputes the CRC of a batch after a test edited it.
func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
}

// iterate reads every record and header of an uncompressed records section.
func iterate(records []byte, n int32) ([]testRecord, error) {
	var out []testRecord
	it := NewRecordIter(records, n)
	for it.Next() {
		r := it.Record()
		tr := testRecord{TsDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		h := NewHeaderIter(r.Headers, r.HeaderCount)
		for h.Next() {
			tr.Headers = append(tr.Headers, testHeader{h.Key(), h.Value()})
		}
		if err := h.Err(); err != nil {
			return out, fmt.Errorf("headers: %w", err)
		}
		if len(tr.Headers) != int(r.HeaderCount) {
			return out, fmt.Errorf("headers: got %d of %d", len(tr.Headers), r.HeaderCount)
		}
		out = append(out, tr)
	}
	return out, it.Err()
}

// sameBytes compares two byte fields including null vs empty.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func compareRecords(t testing.TB, got, want []testRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.TsDelta != w.TsDelta || g.OffsetDelta != w.OffsetDelta {
			t.Fatalf("record %d: deltas ts=%d off=%d, want %d %d", i, g.TsDelta, g.OffsetDelta, w.TsDelta, w.OffsetDelta)
		}
		if !sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) {
			t.Fatalf("record %d: key %q (nil %v) value len %d (nil %v); want key %q (nil %v) value len %d (nil %v)",
				i, g.Key, g.Key == nil, len(g.Value), g.Value == nil, w.Key, w.Key == nil, len(w.Value), w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			// A header key is never null on the wire: nil and empty are one.
			if !bytes.Equal(g.Headers[j].Key, w.Headers[j].Key) || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d: %q=%q, want %q=%q", i, j, g.Headers[j].Key, g.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
}

// buildBatch encodes recs with BatchBuilder.
func buildBatch(dst []byte, base, firstTs int64, recs []testRecord) []byte {
	var bb BatchBuilder
	dst = bb.Begin(dst, base, firstTs)
	for _, r := range recs {
		dst = bb.AppendRecord(dst, r.OffsetDelta, r.TsDelta, r.Key, r.Value, len(r.Headers))
		for _, h := range r.Headers {
			dst = bb.AppendHeader(dst, h.Key, h.Value)
		}
	}
	return bb.Finish(dst)
}
