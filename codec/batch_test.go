package codec

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestParseBatchKmsgRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleRecords()
	records := kmsgRecords(want)
	batch := kmsgBatch(records, int32(len(want)), 0x10, 1<<31-1)
	src := append(append([]byte{}, batch...), 0xde, 0xad) // trailing bytes stay unread
	b, n, err := ParseBatch(src)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(batch) || len(b.Raw) != len(batch) {
		t.Fatalf("consumed %d raw %d, want %d", n, len(b.Raw), len(batch))
	}
	if b.BaseOffset != 1000 || b.PartitionLeaderEpoch != 3 || b.Magic != 2 || b.Attributes != 0x10 ||
		b.LastOffsetDelta != 1<<31-1 || b.FirstTimestamp != 1_700_000_000_000 || b.MaxTimestamp != 1_700_000_000_500 ||
		b.ProducerID != 42 || b.ProducerEpoch != 1 || b.BaseSequence != 17 || b.NumRecords != int32(len(want)) ||
		int(b.BatchLength) != len(batch)-12 || b.CRC != binary.BigEndian.Uint32(batch[17:]) {
		t.Fatalf("header fields: %+v", b)
	}
	if !b.IsTransactional() || b.IsControl() || b.LogAppendTime() || b.Compression() != CompressionNone {
		t.Fatalf("attribute bits wrong")
	}
	got, err := iterate(b.Records, b.NumRecords)
	if err != nil {
		t.Fatal(err)
	}
	compareRecords(t, got, want)
}

func TestParseBatchTwoInARow(t *testing.T) {
	t.Parallel()
	one := kmsgBatch(kmsgRecords(sampleRecords()[:2]), 2, 0, 1)
	two := kmsgBatch(kmsgRecords(sampleRecords()[2:]), 4, 0, 3)
	src := append(append([]byte{}, one...), two...)
	_, n, err := ParseBatch(src)
	if err != nil || n != len(one) {
		t.Fatal(n, err)
	}
	b, n, err := ParseBatch(src[n:])
	if err != nil || n != len(two) || b.NumRecords != 4 {
		t.Fatal(n, err)
	}
}

func TestAttributeBits(t *testing.T) {
	t.Parallel()
	b := RecordBatch{Attributes: 0x3c}
	if b.Compression() != CompressionZstd || !b.LogAppendTime() || !b.IsTransactional() || !b.IsControl() {
		t.Fatalf("bits of 0x3c")
	}
}

func TestParseBatchErrors(t *testing.T) {
	t.Parallel()
	good := kmsgBatch(kmsgRecords(sampleRecords()[:3]), 3, 0, 2)
	edit := func(f func(b []byte) []byte) []byte {
		return f(append([]byte{}, good...))
	}
	tests := []struct {
		name string
		in   []byte
		err  error
	}{
		{"empty", nil, ErrBatchShort},
		{"16 bytes", good[:16], ErrBatchShort},
		{"magic 1", edit(func(b []byte) []byte { b[16] = 1; return b }), ErrBatchMagic},
		{"magic 0, short legacy message", edit(func(b []byte) []byte { b[16] = 0; return b[:30] }), ErrBatchMagic},
		{"header cut", good[:60], ErrBatchShort},
		{"body cut", good[:len(good)-1], ErrBatchShort},
		{"length under header", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 48); return b }), ErrBatchShort},
		{"negative length", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 0xffffffff); return b }), ErrBatchShort},
		{"length over input", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], uint32(len(b))); return b }), ErrBatchShort},
		{"crc flipped", edit(func(b []byte) []byte { b[17] ^= 1; return b }), ErrBatchCRC},
		{"record byte flipped", edit(func(b []byte) []byte { b[len(b)-1] ^= 0x40; return b }), ErrBatchCRC},
		{"attributes flipped", edit(func(b []byte) []byte { b[22] ^= 1; return b }), ErrBatchCRC},
		{"negative count", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 0xffffffff); fixCRC(b); return b }), ErrBatchCount},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ParseBatch(tc.in); !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

// TestParseBatchEveryCut: no prefix of a batch parses.
func TestParseBatchEveryCut(t *testing.T) {
	t.Parallel()
	good := kmsgBatch(kmsgRecords(sampleRecords()), 6, 0, 5)
	for cut := 0; cut < len(good); cut++ {
		if _, _, err := ParseBatch(good[:cut]); err != ErrBatchShort {
			t.Fatalf("cut %d: %v", cut, err)
		}
	}
}

// The partition leader epoch and base offset are outside the CRC, so they
// can be patched in place.
func TestPatchOutsideCRC(t *testing.T) {
	t.Parallel()
	b := kmsgBatch(kmsgRecords(sampleRecords()[:1]), 1, 0, 0)
	PatchBaseOffset(b, 123456789)
	PatchPartitionLeaderEpoch(b, -1)
	rb, _, err := ParseBatch(b)
	if err != nil || rb.BaseOffset != 123456789 || rb.PartitionLeaderEpoch != -1 {
		t.Fatalf("%+v %v", rb, err)
	}
}

// SetMaxTimestamp stamps a batch as a broker does: the timestamp type and
// the max timestamp change, the CRC follows, the records stay; and back.
func TestSetMaxTimestamp(t *testing.T) {
	t.Parallel()
	want := sampleRecords()
	b := kmsgBatch(kmsgRecords(want), int32(len(want)), CompressionLZ4|0x10, 1<<31-1)
	rb, _, err := ParseBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	rb.SetMaxTimestamp(true, 1_800_000_000_000)
	if again, _, err := ParseBatch(b); err != nil || again.CRC != rb.CRC || again.Attributes != rb.Attributes || again.MaxTimestamp != rb.MaxTimestamp {
		t.Fatalf("view %+v, bytes %+v %v", rb, again, err)
	}
	if !rb.LogAppendTime() || rb.MaxTimestamp != 1_800_000_000_000 || rb.Attributes != CompressionLZ4|0x10|0x08 ||
		rb.FirstTimestamp != 1_700_000_000_000 {
		t.Fatalf("stamped: %+v", rb)
	}
	got, err := iterate(rb.Records, rb.NumRecords)
	if err != nil {
		t.Fatal(err)
	}
	compareRecords(t, got, want)
	rb.SetMaxTimestamp(false, 1_700_000_000_500)
	if rb, _, err = ParseBatch(b); err != nil || rb.LogAppendTime() || rb.MaxTimestamp != 1_700_000_000_500 || rb.Attributes != CompressionLZ4|0x10 {
		t.Fatalf("back to CreateTime: %+v %v", rb, err)
	}
}

func TestRecordIterCountMismatch(t *testing.T) {
	t.Parallel()
	records := kmsgRecords(sampleRecords())
	for _, n := range []int32{0, 1, 5, 7, 1 << 30} {
		if _, err := iterate(records, n); err != ErrBatchCount {
			t.Errorf("count %d: err %v", n, err)
		}
	}
	if _, err := iterate(records, -1); err != ErrBatchCount {
		t.Errorf("count -1: err %v", err)
	}
	if _, err := iterate(nil, 0); err != nil {
		t.Errorf("empty: %v", err)
	}
}

// rawRecord assembles a record from explicit fields, with the length given
// separately so that tests can lie about it.
func rawRecord(length int32, fields ...[]byte) []byte {
	b := appendVarint32(nil, length)
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

func vi(v int32) []byte { return appendVarint32(nil, v) }

func TestRecordIterMalformed(t *testing.T) {
	t.Parallel()
	// A well-formed record body: attrs, ts, offset, key "k", value "v", 1 header a=b.
	body := [][]byte{{0}, vi(0), vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(1), vi(1), []byte("a"), vi(1), []byte("b")}
	n := 0
	for _, f := range body {
		n += len(f)
	}
	if _, err := iterate(rawRecord(int32(n), body...), 1); err != nil {
		t.Fatalf("control record rejected: %v", err)
	}
	with := func(i int, f []byte) [][]byte {
		c := append([][]byte{}, body...)
		c[i] = f
		return c
	}
	size := func(fs [][]byte) int32 {
		s := 0
		for _, f := range fs {
			s += len(f)
		}
		return int32(s)
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"length too long", rawRecord(int32(n)+1, body...)},
		{"length too short", rawRecord(int32(n)-1, body...)},
		{"length negative", rawRecord(-1, body...)},
		{"length zero", rawRecord(0)},
		{"length varint truncated", []byte{0x80}},
		{"length varint 6 bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
		{"key length -2", rawRecord(size(with(3, vi(-2))), with(3, vi(-2))...)},
		{"key length past record", rawRecord(size(with(3, vi(100))), with(3, vi(100))...)},
		{"value length -3", rawRecord(size(with(5, vi(-3))), with(5, vi(-3))...)},
		{"header count negative", rawRecord(size(with(7, vi(-1))), with(7, vi(-1))...)},
		{"header count too big", rawRecord(size(with(7, vi(2))), with(7, vi(2))...)},
		{"header count too small", rawRecord(size(with(7, vi(0))), with(7, vi(0))...)},
		{"header key null", rawRecord(size(with(8, vi(-1))), with(8, vi(-1))...)},
		{"header value length -2", rawRecord(size(with(10, vi(-2))), with(10, vi(-2))...)},
		{"timestamp varint 11 bytes", rawRecord(size(with(1, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0})),
			with(1, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0})...)},
		{"offset delta overflows int32", rawRecord(size(with(2, []byte{0xff, 0xff, 0xff, 0xff, 0x1f})),
			with(2, []byte{0xff, 0xff, 0xff, 0xff, 0x1f})...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := iterate(tc.in, 1); err != ErrBatchRecord {
				t.Fatalf("err = %v, want ErrBatchRecord", err)
			}
		})
	}
}

// TestRecordIterEveryCut: cutting a records section anywhere inside a
// record is an error, never a silent short read.
func TestRecordIterEveryCut(t *testing.T) {
	t.Parallel()
	recs := sampleRecords()
	records := kmsgRecords(recs)
	for cut := 0; cut < len(records); cut++ {
		if _, err := iterate(records[:cut], int32(len(recs))); err == nil {
			t.Fatalf("cut %d accepted", cut)
		}
	}
}

func TestHeaderIterStandalone(t *testing.T) {
	t.Parallel()
	src := append(append(vi(1), 'a'), vi(-1)...)
	h := NewHeaderIter(src, 1)
	if !h.Next() || string(h.Key()) != "a" || h.Value() != nil || h.Next() || h.Err() != nil {
		t.Fatal("one header with null value")
	}
	for _, tc := range []struct {
		src []byte
		n   int32
	}{{src, 2}, {src, 0}, {src, -1}, {src[:2], 1}} {
		h := NewHeaderIter(tc.src, tc.n)
		for h.Next() {
		}
		if h.Err() != ErrBatchRecord {
			t.Errorf("n=%d len=%d: err %v", tc.n, len(tc.src), h.Err())
		}
	}
}

func TestVarintLimits(t *testing.T) {
	t.Parallel()
	for _, v := range []int32{0, 1, -1, 63, -64, 64, 1 << 20, 1<<31 - 1, -1 << 31} {
		b := appendVarint32(nil, v)
		var fixed [5]byte
		if n := putVarint32(fixed[:], v); string(fixed[:n]) != string(b) {
			t.Fatalf("putVarint32(%d) differs", v)
		}
		got, n := readVarint32(b)
		if got != v || n != len(b) {
			t.Fatalf("varint32 %d: got %d n %d", v, got, n)
		}
	}
	for _, v := range []int64{0, -1, 1 << 40, -1 << 63, 1<<63 - 1} {
		b := appendVarint64(nil, v)
		got, n := readVarint64(b)
		if got != v || n != len(b) {
			t.Fatalf("varint64 %d: got %d n %d", v, got, n)
		}
	}
	if _, n := readVarint64([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}); n != 0 {
		t.Fatal("varint64 overflow accepted")
	}
}
