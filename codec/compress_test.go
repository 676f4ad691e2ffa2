package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// compressors encode data the way clients do; "snappy-xerial" is the Java
// client's framing, "snappy" the raw block of librdkafka and franz-go.
var compressors = []struct {
	name  string
	codec int8
	enc   func(testing.TB, []byte) []byte
}{
	{"gzip", CompressionGzip, gzipEnc},
	{"snappy", CompressionSnappy, func(_ testing.TB, b []byte) []byte { return snappy.Encode(nil, b) }},
	{"snappy-xerial", CompressionSnappy, func(_ testing.TB, b []byte) []byte { return xerial.Encode(nil, b) }},
	{"lz4", CompressionLZ4, lz4Enc},
	{"zstd", CompressionZstd, zstdEnc},
}

func gzipEnc(t testing.TB, b []byte) []byte {
	return streamEnc(t, b, func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) })
}

func lz4Enc(t testing.TB, b []byte) []byte {
	return streamEnc(t, b, func(w io.Writer) io.WriteCloser { return lz4.NewWriter(w) })
}

// streamEnc compresses b with a streaming writer that newWriter makes.
func streamEnc(t testing.TB, b []byte, newWriter func(io.Writer) io.WriteCloser) []byte {
	var buf bytes.Buffer
	w := newWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstdEnc(t testing.TB, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// payloads: empty, tiny, compressible, incompressible, and larger than one
// xerial block (32 KiB) and one lz4 block (64 KiB+).
func payloads() [][]byte {
	noise := make([]byte, 300<<10)
	x := uint32(1)
	for i := range noise {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	return [][]byte{
		{},
		[]byte("a"),
		bytes.Repeat([]byte("kafka record "), 1000),
		noise[:1000],
		noise,
	}
}

func TestDecompressRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range compressors {
		for i, p := range payloads() {
			comp := c.enc(t, p)
			prefix := []byte("pre")
			out, err := Decompress(append([]byte{}, prefix...), c.codec, comp, len(p))
			if err != nil {
				t.Fatalf("%s payload %d: %v", c.name, i, err)
			}
			if string(out[:3]) != "pre" || !bytes.Equal(out[3:], p) {
				t.Fatalf("%s payload %d: output differs", c.name, i)
			}
			if cap(out) > len(prefix)+len(p) && cap(out) > 4096 {
				t.Fatalf("%s payload %d: cap %d past the budget %d", c.name, i, cap(out), len(p))
			}
		}
	}
}

func TestDecompressOverBudget(t *testing.T) {
	t.Parallel()
	p := payloads()[2] // 13000 bytes
	for _, c := range compressors {
		comp := c.enc(t, p)
		for _, budget := range []int{0, 1, 100, len(p) - 1} {
			dst := []byte("keep")
			out, err := Decompress(dst, c.codec, comp, budget)
			if !errors.Is(err, ErrBudget) {
				t.Fatalf("%s budget %d: err %v", c.name, budget, err)
			}
			if string(out) != "keep" {
				t.Fatalf("%s: dst not returned as given on error", c.name)
			}
		}
	}
}

// TestSnappyHugeDeclaredSize: a raw snappy block (and a xerial block) that
// declares 1 GiB must be refused before anything is allocated for it.
func TestSnappyHugeDeclaredSize(t *testing.T) {
	// Not parallel: it measures the heap (MemStats), which other tests would grow.
	huge := binary.AppendUvarint(nil, 1<<30)
	huge = append(huge, 0x00, 'x') // a literal of one byte
	framed := append([]byte{}, xerialMagic...)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, uint32(len(huge)))
	framed = append(framed, huge...)
	for name, src := range map[string][]byte{"raw": huge, "xerial": framed} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Decompress(nil, CompressionSnappy, src, 1<<20)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrBudget) {
			t.Fatalf("%s: err %v", name, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Fatalf("%s: allocated %d bytes for a refused block", name, grew)
		}
	}
}

// TestXerialSecondBlockOverBudget: the budget spans all xerial blocks.
func TestXerialSecondBlockOverBudget(t *testing.T) {
	t.Parallel()
	p := payloads()[4] // 300 KiB, several 32 KiB xerial blocks
	comp := xerial.Encode(nil, p)
	if _, err := Decompress(nil, CompressionSnappy, comp, len(p)-1); !errors.Is(err, ErrBudget) {
		t.Fatal(err)
	}
	if out, err := Decompress(nil, CompressionSnappy, comp, len(p)); err != nil || !bytes.Equal(out, p) {
		t.Fatal(err)
	}
}

func TestDecompressCorrupt(t *testing.T) {
	t.Parallel()
	p := payloads()[2]
	garbage := []byte("this is not compressed data at all, it is plain text")
	for _, c := range compressors {
		comp := c.enc(t, p)
		if _, err := Decompress(nil, c.codec, comp[:len(comp)/2], 1<<20); !errors.Is(err, ErrCorruptCompressed) {
			t.Errorf("%s: truncated input: err %v, want ErrCorruptCompressed", c.name, err)
		}
		if _, err := Decompress(nil, c.codec, garbage, 1<<20); err == nil {
			t.Errorf("%s: plain text accepted", c.name)
		}
	}
	if _, err := Decompress(nil, 5, []byte{1}, 10); err != ErrBatchCompression {
		t.Fatal(err)
	}
	if _, err := Decompress(nil, CompressionNone, []byte{1}, 10); err != ErrBatchCompression {
		t.Fatal(err)
	}
}

// TestCompressedBatchRoundTrip: a batch whose records a client compressed
// parses, decompresses and iterates back to the records.
func TestCompressedBatchRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleRecords()
	records := kmsgRecords(want)
	for _, c := range compressors {
		batch := kmsgBatch(c.enc(t, records), int32(len(want)), int16(c.codec), 5)
		b, _, err := ParseBatch(batch)
		if err != nil {
			t.Fatal(err)
		}
		if b.Compression() != c.codec {
			t.Fatalf("%s: codec %d", c.name, b.Compression())
		}
		plain, err := Decompress(nil, b.Compression(), b.Records, 1<<20)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := iterate(plain, b.NumRecords)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		compareRecords(t, got, want)
	}
}

func TestDecompressHugeBudget(t *testing.T) {
	t.Parallel()
	p := payloads()[2]
	out, err := Decompress([]byte("x"), CompressionGzip, gzipEnc(t, p), int(^uint(0)>>1))
	if err != nil || !bytes.Equal(out[1:], p) {
		t.Fatal(err)
	}
}
