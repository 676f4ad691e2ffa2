package bridge

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/iggy-kafka/gateway/codec"
)

// readKafkaBatches reads every batch of a Fetch answer: each batch's codec,
// and its records as readKafka checks them (a compressed batch is
// decompressed and checked as the equivalent uncompressed batch).
func readKafkaBatches(t *testing.T, b []byte) (codecs []int8, counts []int, recs []rec) {
	t.Helper()
	for len(b) > 0 {
		rb, n, err := codec.ParseBatch(b)
		if err != nil {
			t.Fatalf("fetched batch: %v", err)
		}
		one := append([]byte(nil), b[:n]...)
		b = b[n:]
		if c := rb.Compression(); c != codec.CompressionNone {
			plain, err := codec.Decompress(nil, c, rb.Records, 64<<20)
			if err != nil {
				t.Fatalf("codec %d: %v", c, err)
			}
			one = append(one[:codec.BatchHeaderLen], plain...)
			binary.BigEndian.PutUint16(one[21:], 0)
			binary.BigEndian.PutUint32(one[8:], uint32(len(one)-12))
			binary.BigEndian.PutUint32(one[17:], crc32.Checksum(one[21:], crcTable))
		}
		_, _, got := readKafka(t, one)
		codecs, counts, recs = append(codecs, rb.Compression()), append(counts, len(got)), append(recs, got...)
	}
	return codecs, counts, recs
}

// A batch the producer compressed travels compressed with the same codec
// on Fetch, records intact; its first message carries kafka.codec.
func TestCompressedBatchesTravelCompressed(t *testing.T) {
	t.Parallel()
	recs := make([]rec, 20)
	for i := range recs {
		recs[i] = rec{key: []byte("k"), value: bytes.Repeat([]byte{'a' + byte(i)}, 200), ts: nowMs + int64(i)}
	}
	for _, c := range []int8{codec.CompressionGzip, codec.CompressionSnappy, codec.CompressionLZ4, codec.CompressionZstd} {
		iggy, err := encode(t, batchMeta{producerID: -1, producerEpoch: -1, baseSequence: -1, attributes: int16(c)}, recs, 0)
		if err != nil {
			t.Fatal(err)
		}
		ms := messages(t, iggy)
		mark := userHeaders(t, ms[0].UserHeaders)[HeaderCodec]
		// userHeaders gives the value kind, then the value.
		if len(mark) != 6 || mark[0] != byte(KindRaw) || int8(mark[1]) != c || binary.LittleEndian.Uint32(mark[2:]) != 20 {
			t.Fatalf("codec %d: first message's kafka.codec %x", c, mark)
		}
		if _, ok := userHeaders(t, ms[1].UserHeaders)[HeaderCodec]; ok {
			t.Fatalf("codec %d: kafka.codec on a later message", c)
		}
		out, cur := fetched(t, iggy, testBase)
		codecs, _, got := readKafkaBatches(t, out)
		if len(codecs) != 1 || codecs[0] != c || cur.Bytes != len(out) || cur.Records != 20 || cur.Next != testBase+20 {
			t.Fatalf("codec %d: batches %v, cursor %+v, %d bytes", c, codecs, cur, len(out))
		}
		if len(out) >= 20*200 {
			t.Errorf("codec %d: %d bytes, not compressed", c, len(out))
		}
		checkSame(t, recs, got)

		// The gateway's own readers ask for plain records.
		cur = FetchCursor{MaxBytes: 1 << 20, Uncompressed: true}
		out, _ = AppendKafkaBatch(nil, iggy, &cur)
		if codecs, _, got := readKafkaBatches(t, out); len(codecs) != 1 || codecs[0] != codec.CompressionNone || len(got) != 20 {
			t.Fatalf("codec %d, Uncompressed: batches %v", c, codecs)
		}

		// From inside the batch: the rest, uncompressed (the marker is
		// on the batch's first message).
		cur = FetchCursor{From: testBase + 5, MaxBytes: 1 << 20}
		out, _ = AppendKafkaBatch(nil, iggy, &cur)
		codecs, _, got = readKafkaBatches(t, out)
		if len(codecs) != 1 || codecs[0] != codec.CompressionNone {
			t.Fatalf("codec %d from the middle: batches %v", c, codecs)
		}
		checkSame(t, recs[5:], got)
	}
}

// The byte budget counts a compressed batch at its compressed size, whole,
// as Kafka counts a stored batch: three 1 MiB records of zeros (a few KiB
// compressed) fit a 1 MiB budget; a batch past what is left is dropped
// whole unless it is the cursor's first.
func TestCompressedBatchBudget(t *testing.T) {
	t.Parallel()
	big := make([]byte, 1<<20)
	recs := []rec{{value: big, ts: nowMs}, {value: big, ts: nowMs}, {value: big, ts: nowMs}}
	iggy, err := encode(t, batchMeta{producerID: -1, producerEpoch: -1, baseSequence: -1, attributes: int16(codec.CompressionGzip)}, recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, cur := fetched(t, iggy, 0)
	codecs, counts, _ := readKafkaBatches(t, out)
	if len(codecs) != 1 || counts[0] != 3 || cur.Next != 3 || cur.Bytes != len(out) || len(out) > 1<<20 {
		t.Fatalf("batches %v %v, cursor %+v, %d bytes", codecs, counts, cur, len(out))
	}
	// Behind another partition's records with 100 bytes left: nothing.
	cur = FetchCursor{MaxBytes: 1000, Records: 1, Bytes: 900, Next: 7}
	out, err = AppendKafkaBatch([]byte("before"), iggy, &cur)
	if err != nil || string(out) != "before" || cur.Records != 1 || cur.Bytes != 900 || cur.Next != 7 {
		t.Fatalf("over budget: %q %+v %v", out[:min(len(out), 10)], cur, err)
	}
}

// Within one stored batch (a server may return several produce batches as
// one), a compressed run ends after its record count and the messages
// after it travel uncompressed; a new marker starts a new batch.
// v1Headers is the header block of a gateway-written message (kafka.v = 1).
var v1Headers, _ = AppendUserHeader(nil, KindString, []byte(HeaderVersion), KindUint8, []byte{1})

// marked is the header block of a gateway-written message that opens a
// Kafka batch of n records its producer compressed with c.
func marked(c int8, n uint32) []byte {
	var mark [5]byte
	mark[0] = byte(c)
	binary.LittleEndian.PutUint32(mark[1:], n)
	h, _ := AppendUserHeader(append([]byte(nil), v1Headers...), KindString, []byte(HeaderCodec), KindRaw, mark[:])
	return h
}

func TestCompressedRunBoundaries(t *testing.T) {
	t.Parallel()
	v1 := v1Headers
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, 5_000_000)
	for i, h := range [][]byte{marked(codec.CompressionGzip, 2), v1, v1, v1, marked(codec.CompressionLZ4, 2), v1} {
		var err error
		if buf, err = bb.Append(buf, [16]byte{}, 5_000_000, bytes.Repeat([]byte{byte('a' + i)}, 50), h); err != nil {
			t.Fatal(err)
		}
	}
	buf, _ = bb.Finish(buf)
	out, cur := fetched(t, buf, 0)
	codecs, counts, got := readKafkaBatches(t, out)
	wantCodecs := []int8{codec.CompressionGzip, codec.CompressionNone, codec.CompressionLZ4}
	if !bytes.Equal(int8s(codecs), int8s(wantCodecs)) || len(counts) != 3 || counts[0] != 2 || counts[1] != 2 || counts[2] != 2 {
		t.Fatalf("batches %v with %v records, want %v with [2 2 2]", codecs, counts, wantCodecs)
	}
	for i, r := range got {
		if r.value[0] != byte('a'+i) {
			t.Fatalf("record %d is %q", i, r.value[:1])
		}
	}
	// A corrupt marker (unknown codec) only means no compression.
	var bb2 IggyBatchBuilder
	buf = bb2.Begin(nil, 5_000_000)
	buf, _ = bb2.Append(buf, [16]byte{}, 5_000_000, []byte("x"), marked(9, 1))
	buf, _ = bb2.Finish(buf)
	cur = FetchCursor{MaxBytes: 1 << 20}
	out, err := AppendKafkaBatch(nil, buf, &cur)
	if codecs, _, _ := readKafkaBatches(t, out); err != nil || len(codecs) != 1 || codecs[0] != 0 {
		t.Fatalf("unknown codec marker: %v %v", codecs, err)
	}
}

func int8s(v []int8) []byte {
	out := make([]byte, len(v))
	for i, x := range v {
		out[i] = byte(x)
	}
	return out
}

// A compressed run cut by the end of a stored batch (a server returns a
// partition in chunks) continues in the next stored batch, if that one
// starts where the cursor stopped: compressed with the same codec, for the
// run's remaining records only.
func TestCompressedRunAcrossStoredBatches(t *testing.T) {
	t.Parallel()
	v1 := v1Headers
	stored := func(base uint64, headers ...[]byte) []byte {
		var bb IggyBatchBuilder
		buf := bb.Begin(nil, 5_000_000)
		for i, h := range headers {
			buf, _ = bb.Append(buf, [16]byte{}, 5_000_000, bytes.Repeat([]byte{byte('a' + int(base) + i)}, 40), h)
		}
		buf, _ = bb.Finish(buf)
		StampIggyBatch(buf, 0, base, testServerTs)
		return buf
	}
	first, second := stored(0, marked(codec.CompressionGzip, 4), v1), stored(2, v1, v1, v1)
	for _, tc := range []struct {
		name   string
		from   uint64
		codecs []int8
		counts []int
	}{
		{"whole", 0, []int8{codec.CompressionGzip, codec.CompressionGzip, codec.CompressionNone}, []int{2, 2, 1}},
		// Starting inside the run: no marker seen, nothing to continue.
		{"from 1", 1, []int8{codec.CompressionNone, codec.CompressionNone}, []int{1, 3}},
	} {
		cur := FetchCursor{From: tc.from, MaxBytes: 1 << 20}
		out, err := AppendKafkaBatch(nil, first, &cur)
		if err == nil {
			out, err = AppendKafkaBatch(out, second, &cur)
		}
		if err != nil {
			t.Fatal(err)
		}
		codecs, counts, got := readKafkaBatches(t, out)
		if !bytes.Equal(int8s(codecs), int8s(tc.codecs)) || fmt.Sprint(counts) != fmt.Sprint(tc.counts) {
			t.Fatalf("%s: batches %v with %v records, want %v with %v", tc.name, codecs, counts, tc.codecs, tc.counts)
		}
		for i, r := range got {
			if r.value[0] != byte('a'+int(tc.from)+i) {
				t.Fatalf("%s: record %d is %q", tc.name, i, r.value[:1])
			}
		}
	}
}
