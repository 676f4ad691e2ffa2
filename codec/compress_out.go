package codec

import (
	"encoding/binary"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compress appends src compressed with codec to dst, in the framing Kafka
// clients write and every consumer reads: gzip, snappy in the xerial
// framing of the Java producer (32 KiB blocks), the LZ4 frame format,
// zstd. Encoders are pooled, at their fastest level: the gateway
// compresses at fetch time (records are stored uncompressed as Iggy
// messages), so speed matters more than ratio. An unknown codec or
// CompressionNone gives ErrBatchCompression and dst unchanged.
//
// Any goroutine.
func Compress(dst []byte, codec int8, src []byte) ([]byte, error) {
	switch codec {
	case CompressionGzip:
		return gzipTo(dst, src), nil
	case CompressionSnappy:
		return xerialTo(dst, src), nil
	case CompressionLZ4:
		return lz4To(dst, src), nil
	case CompressionZstd:
		return zstdTo(dst, src), nil
	}
	return dst, ErrBatchCompression
}

// appendWriter lets a stream encoder append to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

type gzipWriter struct {
	w   *gzip.Writer
	out appendWriter
}

var gzipWriters = sync.Pool{New: func() any {
	e := &gzipWriter{}
	e.w, _ = gzip.NewWriterLevel(&e.out, gzip.BestSpeed)
	return e
}}

func gzipTo(dst, src []byte) []byte {
	e := gzipWriters.Get().(*gzipWriter)
	e.out.b = dst
	e.w.Reset(&e.out)
	_, _ = e.w.Write(src) // appendWriter never fails
	_ = e.w.Close()
	dst, e.out.b = e.out.b, nil
	gzipWriters.Put(e)
	return dst
}

// xerialHeader is xerialMagic, version 1 and compatible version 1; the
// blocks follow, each a u32 BE length and a raw snappy block.
var xerialHeader = append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)

const xerialBlock = 32 << 10

func xerialTo(dst, src []byte) []byte {
	dst = append(dst, xerialHeader...)
	for len(src) > 0 {
		n := min(len(src), xerialBlock)
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		need := snappy.MaxEncodedLen(n)
		dst = growTo(dst, need)
		enc := snappy.Encode(dst[len(dst):len(dst)+need], src[:n])
		binary.BigEndian.PutUint32(dst[at:], uint32(len(enc)))
		dst = dst[:len(dst)+len(enc)]
		src = src[n:]
	}
	return dst
}

// growTo makes room for n more bytes past len(dst).
func growTo(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	grown := make([]byte, len(dst), 2*cap(dst)+n)
	copy(grown, dst)
	return grown
}

type lz4Writer struct {
	w   *lz4.Writer
	out appendWriter
}

var lz4Writers = sync.Pool{New: func() any {
	e := &lz4Writer{}
	e.w = lz4.NewWriter(&e.out)
	_ = e.w.Apply(lz4.CompressionLevelOption(lz4.Fast), lz4.ConcurrencyOption(1)) // Reset keeps them
	return e
}}

func lz4To(dst, src []byte) []byte {
	e := lz4Writers.Get().(*lz4Writer)
	e.out.b = dst
	e.w.Reset(&e.out)
	_, _ = e.w.Write(src)
	_ = e.w.Close()
	dst, e.out.b = e.out.b, nil
	lz4Writers.Put(e)
	return dst
}

var zstdEncoder = func() *zstd.Encoder {
	// EncodeAll on one shared encoder is safe for concurrent use.
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true))
	return e
}()

func zstdTo(dst, src []byte) []byte { return zstdEncoder.EncodeAll(src, dst) }
