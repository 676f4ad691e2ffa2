package codec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/golden"
)

// Seeds are shared by f.Add and by the committed corpus under
// testdata/fuzz/; regenerate the corpus with
//
//	CODEC_WRITE_FUZZ_CORPUS=1 go test -run TestWriteFuzzCorpus ./codec/

func frameSeeds() [][]byte {
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("rdkafka"))
	var seeds [][]byte
	produce := kmsg.NewPtrProduceRequest()
	produce.TransactionID = kmsg.StringPtr("txn-1")
	for _, v := range []int16{2, 3, 8, 9, 11} {
		produce.SetVersion(v)
		seeds = append(seeds, fmtr.AppendRequest(nil, produce, 11))
	}
	api := kmsg.NewPtrApiVersionsRequest()
	api.SetVersion(3)
	api.ClientSoftwareName, api.ClientSoftwareVersion = "franz-go", "1.22"
	seeds = append(seeds, fmtr.AppendRequest(nil, api, 0))
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(1)
	seeds = append(seeds, kmsg.NewRequestFormatter().AppendRequest(nil, meta, 3)) // null client id
	cs := kmsg.NewPtrControlledShutdownRequest()
	seeds = append(seeds, fmtr.AppendRequest(nil, cs, 5))
	seeds = append(seeds,
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		[]byte{0x16, 0x03, 0x01, 0x00, 0xa5, 0x01},
		[]byte{0, 0, 0, 14, 0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 2, 0, 1, 'x'}, // tags
		[]byte{0xff, 0xff, 0xff, 0xff},
	)
	return seeds
}

func batchSeeds() [][]byte {
	recs := sampleRecords()[:4]
	records := kmsgRecords(recs)
	seeds := [][]byte{
		kmsgBatch(records, int32(len(recs)), 0, 7),
		buildBatch(nil, 0, 1_700_000_000_000, []testRecord{{Key: []byte("k"), Value: []byte("v")}}),
	}
	for _, c := range compressors {
		seeds = append(seeds, kmsgBatch(c.enc(nil, records), int32(len(recs)), int16(c.codec), 7))
	}
	return seeds
}

func roundTripSeeds() [][]byte {
	return [][]byte{
		{},
		[]byte("\x03\x00\x05hello\x01\x02ab"),
		[]byte("\x05\x07\x10key\x20value-value\x33hdr\x41\x42\x43\x44\x45\x46\x47\x48\x49\x4a"),
		bytes.Repeat([]byte{0xf7, 0x13, 0x80, 0x42}, 64),
	}
}

func addSeeds(f *testing.F, seeds [][]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
}

// FuzzFrameHeader: FrameSize and ParseRequestHeader on any bytes, whole and
// split in two, never panic and agree with themselves.
func FuzzFrameHeader(f *testing.F) {
	addSeeds(f, frameSeeds())
	f.Fuzz(func(t *testing.T, data []byte) {
		size, ok, err := FrameSize(data, 1<<20)
		if ok != (len(data) >= 4) || (!ok && err != nil) {
			t.Fatalf("ok=%v err=%v for %d bytes", ok, err, len(data))
		}
		if ok && err == nil && (size <= 0 || size > 1<<20) {
			t.Fatalf("size %d accepted", size)
		}
		half := data[:len(data)/2]
		hs, hok, herr := FrameSize(half, 1<<20)
		if hok != (len(half) >= 4) || (hok && (hs != size || herr != err)) {
			t.Fatalf("half disagrees: %d %v %v vs %d %v %v", hs, hok, herr, size, ok, err)
		}
		if len(data) < 4 {
			return
		}
		frame := data[4:]
		if ok && err == nil && int(size) < len(frame) {
			frame = frame[:size]
		}
		checkHeader(t, frame)
		checkHeader(t, frame[:len(frame)/2])
	})
}

func checkHeader(t *testing.T, frame []byte) {
	h, err := ParseRequestHeader(frame)
	if err != nil {
		if err != ErrHeader {
			t.Fatalf("error %v", err)
		}
		return
	}
	if h.BodyOffset < 8 || h.BodyOffset > len(frame) || len(h.ClientID) > h.BodyOffset {
		t.Fatalf("header %+v for %d bytes", h, len(frame))
	}
	if h.Flexible != RequestIsFlexible(h.Key, h.Version) {
		t.Fatal("Flexible disagrees with RequestIsFlexible")
	}
	again, err := ParseRequestHeader(frame[:h.BodyOffset])
	if err != nil || again.BodyOffset != h.BodyOffset || !bytes.Equal(again.ClientID, h.ClientID) {
		t.Fatalf("header alone: %+v %v", again, err)
	}
	for cut := 0; cut < h.BodyOffset; cut++ {
		if _, err := ParseRequestHeader(frame[:cut]); err != ErrHeader {
			t.Fatalf("cut %d of %d parsed", cut, h.BodyOffset)
		}
	}
	ProduceAcks(frame[h.BodyOffset:], h.Version)
}

// FuzzRecordBatch: ParseBatch, then every record and header, decompressing
// under a small budget; the iterators also run on the raw bytes, which a
// CRC would otherwise keep them from seeing.
func FuzzRecordBatch(f *testing.F) {
	addSeeds(f, batchSeeds())
	f.Fuzz(func(t *testing.T, data []byte) {
		const budget = 64 << 10
		b, n, err := ParseBatch(data)
		if err == nil {
			if n != len(b.Raw) || n > len(data) || n != int(b.BatchLength)+12 || len(b.Records) != n-BatchHeaderLen {
				t.Fatalf("n=%d raw=%d records=%d length=%d", n, len(b.Raw), len(b.Records), b.BatchLength)
			}
			records := b.Records
			if c := b.Compression(); c != CompressionNone {
				out, err := Decompress(nil, c, records, budget)
				if err != nil {
					checkDecompressErr(t, err)
					return
				}
				records = out
			}
			walk(t, records, b.NumRecords)
		}
		if len(data) > 0 {
			walk(t, data[1:], int32(data[0]%8))
			for codec := int8(1); codec <= 4; codec++ {
				out, err := Decompress([]byte("x"), codec, data, 1000)
				if err != nil {
					checkDecompressErr(t, err)
				} else if len(out) > 1001 || out[0] != 'x' {
					t.Fatalf("codec %d: %d bytes out of budget 1000", codec, len(out)-1)
				}
			}
		}
	})
}

func checkDecompressErr(t *testing.T, err error) {
	if !errors.Is(err, ErrBudget) && !errors.Is(err, ErrCorruptCompressed) && err != ErrBatchCompression {
		t.Fatalf("unexpected error kind: %v", err)
	}
}

// walk iterates records and headers, checking that what they return lies
// inside the input and that errors are the documented ones.
func walk(t *testing.T, records []byte, n int32) {
	it := NewRecordIter(records, n)
	got := int32(0)
	for it.Next() {
		got++
		r := it.Record()
		h := NewHeaderIter(r.Headers, r.HeaderCount)
		hn := int32(0)
		for h.Next() {
			hn++
			if h.Key() == nil {
				t.Fatal("nil header key")
			}
		}
		if h.Err() != nil || hn != r.HeaderCount {
			t.Fatalf("validated record has bad headers: %v %d/%d", h.Err(), hn, r.HeaderCount)
		}
	}
	switch err := it.Err(); err {
	case nil:
		if got != n {
			t.Fatalf("%d records of %d without error", got, n)
		}
	case ErrBatchCount, ErrBatchRecord:
	default:
		t.Fatalf("unexpected error %v", err)
	}
}

// byteSource deals out fuzz bytes as record fields; past the end it gives
// zeros, so every input maps to some batch.
type byteSource struct{ b []byte }

func (s *byteSource) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

// field returns nil, empty or a slice of the input, as the next byte says.
func (s *byteSource) field(nullable bool) []byte {
	c := s.byte()
	switch {
	case c%4 == 0 && nullable:
		return nil
	case c%4 == 1:
		return []byte{}
	}
	n := min(int(c>>2), len(s.b))
	f := s.b[:n:n]
	s.b = s.b[n:]
	return f
}

func recordsFromBytes(data []byte) []testRecord {
	s := &byteSource{data}
	n := int(s.byte() % 24)
	recs := make([]testRecord, n)
	for i := range recs {
		c := s.byte()
		r := &recs[i]
		r.OffsetDelta = int32(i) + int32(c>>4)
		r.TsDelta = int64(int8(s.byte())) << (c & 0x0f * 3)
		r.Key = s.field(true)
		r.Value = s.field(true)
		for h := s.byte() % 4; h > 0; h-- {
			r.Headers = append(r.Headers, testHeader{s.field(false), s.field(true)})
		}
	}
	return recs
}

// FuzzBatchRoundTrip: records made from the input, built with BatchBuilder,
// come back unchanged through ParseBatch and the iterators, and through kmsg.
func FuzzBatchRoundTrip(f *testing.F) {
	addSeeds(f, roundTripSeeds())
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := recordsFromBytes(data)
		batch := buildBatch([]byte("prefix"), 9, 1_700_000_000_000, recs)
		if string(batch[:6]) != "prefix" {
			t.Fatal("prefix changed")
		}
		batch = batch[6:]
		if len(recs) == 0 {
			if len(batch) != 0 {
				t.Fatal("empty batch left bytes")
			}
			return
		}
		b, n, err := ParseBatch(batch)
		if err != nil || n != len(batch) || b.NumRecords != int32(len(recs)) || b.BaseOffset != 9 {
			t.Fatalf("ParseBatch: %v n=%d", err, n)
		}
		var maxTs int64
		for i, r := range recs {
			if i == 0 || r.TsDelta > maxTs {
				maxTs = r.TsDelta
			}
		}
		if b.MaxTimestamp != 1_700_000_000_000+maxTs || b.LastOffsetDelta != recs[len(recs)-1].OffsetDelta {
			t.Fatalf("max timestamp %d or last delta %d wrong", b.MaxTimestamp, b.LastOffsetDelta)
		}
		got, err := iterate(b.Records, b.NumRecords)
		if err != nil {
			t.Fatal(err)
		}
		compareRecords(t, got, recs)
		_, viaKmsg := kmsgDecode(t, batch)
		compareRecords(t, viaKmsg, recs)
	})
}

// TestWriteFuzzCorpus writes the seeds as go-fuzz corpus files. It runs only
// when asked, so that a normal test run never writes into the tree.
func TestWriteFuzzCorpus(t *testing.T) {
	// Not parallel: it rewrites testdata/fuzz, which the fuzz targets read.
	if os.Getenv("CODEC_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set CODEC_WRITE_FUZZ_CORPUS=1 to rewrite testdata/fuzz")
	}
	for name, seeds := range map[string][][]byte{
		"FuzzFrameHeader":    frameSeeds(),
		"FuzzRecordBatch":    batchSeeds(),
		"FuzzBatchRoundTrip": roundTripSeeds(),
	} {
		for i, s := range seeds {
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
			golden.Write(t, filepath.Join("testdata", "fuzz", name, fmt.Sprintf("seed-%02d", i)), []byte(body))
		}
	}
}
