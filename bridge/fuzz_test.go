package bridge

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/internal/golden"
)

// seedBatches are valid batches of every shape the mapping writes, plus a
// native one, used as fuzz seeds.
func seedBatches(t testing.TB) [][]byte {
	long := bytes.Repeat([]byte("x"), 300)
	sets := [][]rec{
		{{key: []byte("k"), value: []byte("v"), ts: nowMs, headers: []hdr{{"h", []byte("1")}}}},
		{{ts: nowMs}, {key: []byte{}, value: []byte{}, ts: nowMs + 1}},
		{{key: long, value: []byte("v"), ts: 0, headers: []hdr{{"n", nil}, {"e", []byte{}}}}},
		{{value: []byte("a"), ts: -1}, {value: []byte("b"), ts: nowMs}},
	}
	var out [][]byte
	for _, recs := range sets {
		b, err := encode(t, plainMeta, recs, 0)
		if err != nil {
			t.Fatal(err)
		}
		StampIggyBatch(b, 1, 10, testServerTs)
		out = append(out, b)
	}
	// A batch its producer compressed (kafka.codec on the first message).
	b, err := encode(t, batchMeta{producerID: -1, producerEpoch: -1, baseSequence: -1, attributes: int16(codec.CompressionSnappy)}, sets[3], 0)
	if err != nil {
		t.Fatal(err)
	}
	StampIggyBatch(b, 1, 20, testServerTs)
	out = append(out, b)
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, 5)
	h, _ := AppendUserHeader(nil, KindString, []byte("trace"), KindString, []byte("abc"))
	buf, _ = bb.Append(buf, [16]byte{1}, 5, []byte("native"), h)
	buf, _ = bb.Finish(buf)
	out = append(out, buf)
	// A transactional batch and a transaction marker.
	if b, err = encode(t, batchMeta{producerID: 3, producerEpoch: 1, baseSequence: 0, attributes: codec.AttrTransactional}, sets[0], 0); err != nil {
		t.Fatal(err)
	}
	StampIggyBatch(b, 1, 30, testServerTs)
	out = append(out, b)
	m, _, err := EncodeMarker(nil, Marker{ProducerID: 3, Epoch: 1, Commit: true, CoordinatorEpoch: 2, TimestampMs: nowMs})
	if err != nil {
		t.Fatal(err)
	}
	StampIggyBatch(m, 1, 31, testServerTs)
	return append(out, m)
}

// FuzzIggyBatch feeds arbitrary bytes to every reader of the batch layout:
// nothing may panic, and AppendKafkaBatch may neither emit an invalid Kafka
// batch nor produce more than a small multiple of its input.
func FuzzIggyBatch(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseIggyBatch(data)
		if err == nil {
			it := NewIggyMessageIter(v)
			for it.Next() {
				_ = it.Message()
			}
			_, _ = VerifyIggyBatch(data)
			StampIggyBatch(append([]byte(nil), data...), 1, 2, 3)
		}
		_ = ScanProducerRecords(data, func(uint64, ProducerSeq, bool, bool) bool { return true })
		cur := FetchCursor{MaxBytes: 1 << 20}
		out, err := AppendKafkaBatch(nil, data, &cur)
		if len(out) > 2*len(data)+codec.BatchHeaderLen {
			t.Fatalf("%d bytes out of %d in", len(out), len(data))
		}
		if len(out) == 0 {
			return
		}
		// One batch, or several where kafka.codec runs begin and end;
		// each valid, compressed ones decompressing to valid records.
		total := 0
		for rest := out; len(rest) > 0; {
			rb, n, perr := codec.ParseBatch(rest)
			if perr != nil {
				t.Fatalf("emitted an invalid Kafka batch: %v (err %v)", perr, err)
			}
			rest = rest[n:]
			records := rb.Records
			if c := rb.Compression(); c != codec.CompressionNone {
				if records, perr = codec.Decompress(nil, c, rb.Records, 4*len(data)+1024); perr != nil {
					t.Fatalf("emitted a batch that does not decompress: %v", perr)
				}
			}
			ri := codec.NewRecordIter(records, rb.NumRecords)
			for ri.Next() {
			}
			if ri.Err() != nil {
				t.Fatalf("emitted invalid records: %v", ri.Err())
			}
			total += int(rb.NumRecords)
		}
		if total != cur.Records {
			t.Fatalf("%d records in the batches, cursor says %d", total, cur.Records)
		}
	})
}

// FuzzTLV checks the user-header codec: any block the iterator reads in
// full re-encodes to the same bytes, and validation never panics.
func FuzzTLV(f *testing.F) {
	h, _ := AppendUserHeader(nil, KindString, []byte("kafka.v"), KindUint8, []byte{1})
	h, _ = AppendUserHeader(h, KindString, []byte("kafka.h.x"), KindRaw, []byte("value"))
	f.Add(h)
	f.Add([]byte{2, 1, 0, 0, 0, 'a', 7, 8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = ValidateUserHeaders(data)
		it := NewUserHeaderIter(data)
		var re []byte
		for it.Next() {
			if len(it.Key()) == 0 || len(it.Key()) > MaxHeaderField || len(it.Value()) == 0 || len(it.Value()) > MaxHeaderField {
				t.Fatalf("iterator yielded a field of %d/%d bytes", len(it.Key()), len(it.Value()))
			}
			re = appendEntry(re, it.KeyKind(), it.Key(), it.ValueKind(), it.Value())
		}
		if it.Err() == nil && !bytes.Equal(re, data) {
			t.Fatalf("re-encoded %x from %x", re, data)
		}
	})
}

// FuzzKafkaRoundTrip maps arbitrary records sections: whatever
// EncodeKafkaRecords accepts must verify as an Iggy batch and read back
// as the very same records.
func FuzzKafkaRoundTrip(f *testing.F) {
	for _, recs := range [][]rec{
		{{key: []byte("k"), value: []byte("v"), ts: nowMs, headers: []hdr{{"h", []byte("1")}}}},
		{{key: []byte{}, ts: 0, headers: []hdr{{"n", nil}}}, {value: []byte{}, ts: nowMs + 5_000_000}},
	} {
		kb := kafkaBatch(f, plainMeta, recs)
		rb, _, _ := codec.ParseBatch(kb)
		f.Add(rb.Records, rb.NumRecords, rb.FirstTimestamp, int64(-1), uint8(0))
		f.Add(rb.Records, rb.NumRecords, rb.FirstTimestamp, int64(-1), uint8(codec.CompressionLZ4))
		f.Add(rb.Records, rb.NumRecords, rb.FirstTimestamp, int64(9), uint8(codec.AttrTransactional|codec.CompressionGzip))
	}
	f.Fuzz(func(t *testing.T, records []byte, n int32, firstTs, producer int64, comp uint8) {
		// comp: the codec the producer used (the records are already
		// decompressed, as the handler passes them); Fetch compresses again.
		// Its bit 4 is the transactional attribute.
		rb := codec.RecordBatch{NumRecords: n, FirstTimestamp: firstTs, ProducerID: producer, Records: records,
			Attributes: int16(comp&0x0F%5) | int16(comp&codec.AttrTransactional)}
		iggy, stats, err := EncodeKafkaRecords(nil, &rb, records, 0)
		if err != nil {
			return
		}
		v, err := VerifyIggyBatch(iggy)
		if err != nil {
			t.Fatalf("encoded batch fails verification: %v", err)
		}
		// What the encoder says of its timestamps is what a store finds
		// walking the frames (AppendStaged trusts the former).
		if stats.Times != v.Times || !v.Times.Known {
			t.Fatalf("encoder's times %+v, the frames' %+v", stats.Times, v.Times)
		}
		// Stamping from the encoder's gathered checksum input gives the
		// header stamping by walking the frames gives.
		if stats.Sums != nil {
			a, b := slices.Clone(iggy[:BatchHeaderSize]), slices.Clone(iggy[:BatchHeaderSize])
			StampIggyHeader(a, iggy[BatchHeaderSize:], 3, 77, testServerTs)
			StampIggyHeaderSums(b, slices.Clone(stats.Sums), 3, 77, testServerTs)
			if !bytes.Equal(a, b) {
				t.Fatalf("stamped from the gathered sums:\n%x\nfrom the frames:\n%x", b, a)
			}
		}
		StampIggyBatch(iggy, 0, 0, testServerTs)
		cur := FetchCursor{MaxBytes: 1 << 30}
		out, err := AppendKafkaBatch(nil, iggy, &cur)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		compareRecords(t, &rb, out)
	})
}

// compareRecords checks that the fetched batch out holds rb's records.
func compareRecords(t *testing.T, rb *codec.RecordBatch, out []byte) {
	got, n, err := codec.ParseBatch(out)
	if err != nil || got.NumRecords != rb.NumRecords || n != len(out) {
		t.Fatalf("fetched batch: %v, %d records of %d", err, got.NumRecords, rb.NumRecords)
	}
	if got.IsTransactional() != rb.IsTransactional() || (rb.IsTransactional() && got.ProducerID != rb.ProducerID) {
		t.Fatalf("fetched batch attributes %#x producer %d, produced %#x producer %d", got.Attributes, got.ProducerID, rb.Attributes, rb.ProducerID)
	}
	if c := got.Compression(); c != rb.Compression() {
		t.Fatalf("fetched batch codec %d, produced with %d", c, rb.Compression())
	} else if c != codec.CompressionNone {
		if got.Records, err = codec.Decompress(nil, c, got.Records, 64<<20); err != nil {
			t.Fatalf("fetched batch does not decompress: %v", err)
		}
	}
	a, b := codec.NewRecordIter(rb.Records, rb.NumRecords), codec.NewRecordIter(got.Records, got.NumRecords)
	for a.Next() && b.Next() {
		ra, rbk := a.Record(), b.Record()
		if !sameBytes(ra.Key, rbk.Key) || !sameBytes(ra.Value, rbk.Value) || !sameHeaders(ra, rbk) {
			t.Fatalf("record differs:\n in %+v\nout %+v", ra, rbk)
		}
		in := rb.FirstTimestamp + ra.TimestampDelta
		if back := got.FirstTimestamp + rbk.TimestampDelta; in >= 0 && back != in {
			t.Fatalf("timestamp %d read back as %d", in, back)
		}
	}
}

func sameHeaders(a, b *codec.Record) bool {
	if a.HeaderCount != b.HeaderCount {
		return false
	}
	ha, hb := codec.NewHeaderIter(a.Headers, a.HeaderCount), codec.NewHeaderIter(b.Headers, b.HeaderCount)
	for ha.Next() && hb.Next() {
		if !bytes.Equal(ha.Key(), hb.Key()) || !sameBytes(ha.Value(), hb.Value()) {
			return false
		}
	}
	return true
}

// TestWriteFuzzSeeds regenerates the committed seed corpus under
// testdata/fuzz when BRIDGE_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	// Not parallel: it rewrites testdata/fuzz, which the fuzz targets read.
	if os.Getenv("BRIDGE_WRITE_SEEDS") != "1" {
		t.Skip("set BRIDGE_WRITE_SEEDS=1 to rewrite testdata/fuzz seeds")
	}
	for i, b := range seedBatches(t) {
		writeSeed(t, "FuzzIggyBatch", fmt.Sprintf("seed-%d", i), fmt.Sprintf("[]byte(%q)", b))
	}
	writeSeed(t, "FuzzIggyBatch", "golden", fmt.Sprintf("[]byte(%q)", goldenBatch(t)))
	h, _ := AppendUserHeader(nil, KindString, []byte("trace"), KindString, []byte("abc"))
	h, _ = AppendUserHeader(h, KindString, []byte("kafka.ts"), KindInt64, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	writeSeed(t, "FuzzTLV", "seed-0", fmt.Sprintf("[]byte(%q)", h))
	kb := kafkaBatch(t, batchMeta{producerID: 5, producerEpoch: 1, baseSequence: 7}, []rec{
		{key: []byte("k"), value: []byte("v"), ts: nowMs, headers: []hdr{{"a", []byte("1")}, {"b", nil}}},
		{ts: -1}, {key: []byte{}, value: []byte{}, ts: 0},
	})
	rb, _, _ := codec.ParseBatch(kb)
	writeSeed(t, "FuzzKafkaRoundTrip", "seed-0", fmt.Sprintf("[]byte(%q)\nint32(%d)\nint64(%d)\nint64(5)", rb.Records, rb.NumRecords, rb.FirstTimestamp))
}

func writeSeed(t *testing.T, target, name, body string) {
	golden.Write(t, filepath.Join("testdata", "fuzz", target, name), []byte("go test fuzz v1\n"+body+"\n"))
}
