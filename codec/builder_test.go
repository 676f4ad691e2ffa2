package codec

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgDecode reads a batch with kmsg only (RecordBatch.ReadFrom, then
// Record.ReadFrom per record), as a client would.
func kmsgDecode(t *testing.T, batch []byte) (kmsg.RecordBatch, []testRecord) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		t.Fatal(err)
	}
	if int(rb.Length)+12 != len(batch) {
		t.Fatalf("batch length %d for %d bytes", rb.Length, len(batch))
	}
	var out []testRecord
	src := rb.Records
	for len(src) > 0 {
		length, n := binary.Varint(src)
		if n <= 0 || length < 0 || int(length) > len(src)-n {
			t.Fatalf("bad record length at %d", len(rb.Records)-len(src))
		}
		var r kmsg.Record
		if err := r.ReadFrom(src[:n+int(length)]); err != nil {
			t.Fatal(err)
		}
		src = src[n+int(length):]
		tr := testRecord{TsDelta: r.TimestampDelta64, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			tr.Headers = append(tr.Headers, testHeader{[]byte(h.Key), h.Value})
		}
		out = append(out, tr)
	}
	if int(rb.NumRecords) != len(out) {
		t.Fatalf("NumRecords %d, %d records", rb.NumRecords, len(out))
	}
	return rb, out
}

func TestBatchBuilderKmsgDecodes(t *testing.T) {
	t.Parallel()
	want := sampleRecords()
	prefix := []byte("prefix")
	buf := buildBatch(append([]byte{}, prefix...), 5000, 1_700_000_000_000, want)
	if string(buf[:len(prefix)]) != "prefix" {
		t.Fatal("prefix overwritten")
	}
	batch := buf[len(prefix):]
	rb, got := kmsgDecode(t, batch)
	compareRecords(t, got, want)
	if rb.FirstOffset != 5000 || rb.Magic != 2 || rb.Attributes != 0 || rb.PartitionLeaderEpoch != 0 ||
		rb.ProducerID != -1 || rb.ProducerEpoch != -1 || rb.FirstSequence != -1 ||
		rb.LastOffsetDelta != 1<<31-1 || rb.FirstTimestamp != 1_700_000_000_000 ||
		rb.MaxTimestamp != 1_700_000_000_000+1<<40 {
		t.Fatalf("batch header: %+v", rb)
	}
	if uint32(rb.CRC) != crcOf(batch) {
		t.Fatal("CRC wrong")
	}
	// And our own parser agrees.
	pb, n, err := ParseBatch(batch)
	if err != nil || n != len(batch) {
		t.Fatal(n, err)
	}
	ours, err := iterate(pb.Records, pb.NumRecords)
	if err != nil {
		t.Fatal(err)
	}
	compareRecords(t, ours, want)
}

// A LogAppendTime batch: the attribute bit is set, also once compressed,
// and the max timestamp is the first plus the largest delta.
func TestBatchBuilderLogAppendTime(t *testing.T) {
	t.Parallel()
	var bb BatchBuilder
	buf := bb.Begin(nil, 7, 1_800_000_000_000)
	bb.LogAppendTime()
	buf = bb.AppendRecord(buf, 0, 0, []byte("k"), []byte("v"), 0)
	buf = bb.AppendRecord(buf, 1, 0, nil, []byte("w"), 0)
	buf = bb.Finish(buf)
	rb, got := kmsgDecode(t, buf)
	if rb.Attributes != 0x08 || rb.MaxTimestamp != 1_800_000_000_000 || len(got) != 2 || uint32(rb.CRC) != crcOf(buf) {
		t.Fatalf("LogAppendTime batch: %+v", rb)
	}
	out, _, err := CompressBatch(buf, 0, CompressionGzip, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pb, _, err := ParseBatch(out); err != nil || !pb.LogAppendTime() || pb.Compression() != CompressionGzip {
		t.Fatalf("compressed: %+v %v", pb, err)
	}
	// The next batch of the builder is CreateTime again.
	buf = bb.Begin(nil, 9, 1)
	buf = bb.AppendRecord(buf, 0, 0, nil, []byte("x"), 0)
	if pb, _, err := ParseBatch(bb.Finish(buf)); err != nil || pb.Attributes != 0 {
		t.Fatalf("next batch: %+v %v", pb, err)
	}
}

func crcOf(batch []byte) uint32 {
	var rb RecordBatch
	rb, _, _ = ParseBatch(batch)
	return rb.CRC
}

func TestBatchBuilderEmptyBatchRemoved(t *testing.T) {
	t.Parallel()
	var bb BatchBuilder
	buf := bb.Begin([]byte("keep"), 1, 2)
	buf = bb.Finish(buf)
	if string(buf) != "keep" || bb.Count() != 0 {
		t.Fatalf("%q", buf)
	}
}

// TestBatchBuilderRecordSizes crosses each length-varint width (1 to 4
// bytes), where the record body is moved by a different amount.
func TestBatchBuilderRecordSizes(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 50, 57, 58, 63, 64, 100, 8180, 8200, 1 << 20, 3 << 20} {
		recs := []testRecord{{Value: make([]byte, size)}, {OffsetDelta: 1, Key: []byte("k"), Value: make([]byte, size/2)}}
		for i := range recs[0].Value {
			recs[0].Value[i] = byte(i * 7)
		}
		batch := buildBatch(nil, 0, 0, recs)
		_, got := kmsgDecode(t, batch)
		compareRecords(t, got, recs)
	}
}

func TestBatchBuilderCountAndReuse(t *testing.T) {
	t.Parallel()
	var bb BatchBuilder
	var buf []byte
	for round := 0; round < 3; round++ {
		start := len(buf)
		buf = bb.Begin(buf, int64(round*10), 100)
		for i := 0; i < 4; i++ {
			buf = bb.AppendRecord(buf, int32(i), int64(i), nil, []byte{byte(i)}, 0)
		}
		buf = bb.Finish(buf)
		if bb.Count() != 4 {
			t.Fatal(bb.Count())
		}
		rb, _ := kmsgDecode(t, buf[start:])
		if rb.FirstOffset != int64(round*10) || rb.MaxTimestamp != 103 || rb.LastOffsetDelta != 3 {
			t.Fatalf("%+v", rb)
		}
	}
}

func TestBatchBuilderHeaderMisusePanics(t *testing.T) {
	t.Parallel()
	expectPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	expectPanic("extra header", func() {
		var bb BatchBuilder
		buf := bb.Begin(nil, 0, 0)
		buf = bb.AppendRecord(buf, 0, 0, nil, nil, 0)
		bb.AppendHeader(buf, []byte("k"), nil)
	})
	expectPanic("missing header", func() {
		var bb BatchBuilder
		buf := bb.Begin(nil, 0, 0)
		buf = bb.AppendRecord(buf, 0, 0, nil, nil, 1)
		bb.Finish(buf)
	})
}
