package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decompress appends the decompressed form of src (compressed with codec) to
// dst and returns it. It never lets dst grow by more than budget bytes: past
// that it returns ErrBudget. Snappy accepts both raw and the xerial framing
// Java clients send; LZ4 is the frame format.
//
// Memory: dst's capacity is grown at most to len(dst)+budget, whatever size a
// stream header declares; the decoders themselves are pooled. On error the
// returned slice is dst as given (its spare capacity may have been written).
// An unknown codec or CompressionNone gives ErrBatchCompression.
//
// Any goroutine.
func Decompress(dst []byte, codec int8, src []byte, budget int) ([]byte, error) {
	budget = max(0, min(budget, maxInt-len(dst))) // len(dst)+budget must not overflow
	var out []byte
	var err error
	switch codec {
	case CompressionGzip:
		out, err = gunzip(dst, src, budget)
	case CompressionSnappy:
		out, err = unsnappy(dst, src, budget)
	case CompressionLZ4:
		out, err = unlz4(dst, src, budget)
	case CompressionZstd:
		out, err = unzstd(dst, src, budget)
	default:
		return dst, ErrBatchCompression
	}
	if err != nil {
		return dst, err
	}
	return out, nil
}

// maxInt is the largest int, the bound of any slice length.
const maxInt = int(^uint(0) >> 1)

// ErrCorruptCompressed wraps decoder errors for a compressed record section
// that does not decode; the handler answers CORRUPT_MESSAGE for it.
var ErrCorruptCompressed = errors.New("codec: compressed records do not decode")

// corrupt wraps a decoder error so that errors.Is(err, ErrCorruptCompressed)
// holds, keeping ErrBudget as it is.
func corrupt(err error) error {
	if err == nil || errors.Is(err, ErrBudget) {
		return err
	}
	return &corruptError{err}
}

type corruptError struct{ err error }

func (e *corruptError) Error() string        { return ErrCorruptCompressed.Error() + ": " + e.err.Error() }
func (e *corruptError) Is(target error) bool { return target == ErrCorruptCompressed }
func (e *corruptError) Unwrap() error        { return e.err }

// growCapped makes room for n more bytes in dst without letting its capacity
// pass limit; the caller has checked len(dst)+n <= limit.
func growCapped(dst []byte, n, limit int) []byte {
	need := len(dst) + n
	if need <= cap(dst) {
		return dst
	}
	c := 2 * cap(dst)
	if c < need {
		c = need
	}
	if c < 4096 {
		c = min(4096, limit)
	}
	c = min(c, limit)
	grown := make([]byte, len(dst), c)
	copy(grown, dst)
	return grown
}

// readAllCapped appends everything r yields to dst, stopping with ErrBudget
// once it would pass limit (an absolute length). It reads straight into
// dst's spare capacity, with no intermediate buffer, and grows dst only when
// the stream proves to have more bytes than fit: output that fits dst's
// capacity exactly costs no allocation.
func readAllCapped(dst []byte, r io.Reader, limit int, probe *[1]byte) ([]byte, error) {
	for {
		end := min(cap(dst), limit)
		if len(dst) == end {
			more, err := readByte(r, probe)
			if !more {
				return dst, err
			}
			if len(dst) >= limit {
				return dst, ErrBudget
			}
			dst = append(growCapped(dst, 1, limit), probe[0])
			if err == io.EOF {
				return dst, nil
			}
			continue
		}
		n, err := r.Read(dst[len(dst):end])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, corrupt(err)
		}
	}
}

// readByte reads one byte into probe. more is false at the end of the
// stream (err nil) or on a decoder error (err set); with more true, err may
// be io.EOF when the byte was the last one.
func readByte(r io.Reader, probe *[1]byte) (more bool, err error) {
	for {
		n, err := r.Read(probe[:])
		if n > 0 {
			return true, err
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, corrupt(err)
		}
	}
}

// gzipState (like lz4State and zstdState) is the pooled per-call state of a
// stream codec: a reader over src, the decoder and the end probe, so
// steady-state calls allocate little. Each is used by one call at a time.
type gzipState struct {
	src   bytes.Reader
	dec   gzip.Reader
	probe [1]byte
}

var gzipPool = sync.Pool{New: func() any { return new(gzipState) }}

func gunzip(dst, src []byte, budget int) ([]byte, error) {
	st := gzipPool.Get().(*gzipState)
	defer gzipPool.Put(st)
	st.src.Reset(src)
	if err := st.dec.Reset(&st.src); err != nil {
		return dst, corrupt(err)
	}
	out, err := readAllCapped(dst, &st.dec, len(dst)+budget, &st.probe)
	st.src.Reset(nil)
	return out, err
}

type lz4State struct {
	src   bytes.Reader
	dec   *lz4.Reader
	probe [1]byte
}

var lz4Pool = sync.Pool{New: func() any { return &lz4State{dec: lz4.NewReader(nil)} }}

func unlz4(dst, src []byte, budget int) ([]byte, error) {
	st := lz4Pool.Get().(*lz4State)
	defer lz4Pool.Put(st)
	st.src.Reset(src)
	st.dec.Reset(&st.src)
	out, err := readAllCapped(dst, st.dec, len(dst)+budget, &st.probe)
	st.src.Reset(nil)
	return out, err
}

// zstdMaxWindow caps the history window a zstd frame may ask the decoder to
// keep. Kafka producers use small windows (level 3 is 2 MiB at most); a
// hostile frame asking for more fails instead of allocating it.
const zstdMaxWindow = 32 << 20

type zstdState struct {
	src   bytes.Reader
	dec   *zstd.Decoder
	probe [1]byte
}

var zstdPool = sync.Pool{New: func() any {
	// Concurrency 1 decodes synchronously on the caller's goroutine: no
	// goroutines are left behind by a pooled decoder.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(err) // the options are constants; this cannot fail
	}
	return &zstdState{dec: dec}
}}

func unzstd(dst, src []byte, budget int) ([]byte, error) {
	st := zstdPool.Get().(*zstdState)
	defer zstdPool.Put(st)
	st.src.Reset(src)
	if err := st.dec.Reset(&st.src); err != nil {
		return dst, corrupt(err)
	}
	out, err := readAllCapped(dst, st.dec, len(dst)+budget, &st.probe)
	_ = st.dec.Reset(nil) // drop the reference to src
	st.src.Reset(nil)
	return out, err
}

// xerialMagic opens the xerial snappy framing of the Java client: magic,
// then int32 version and int32 compatible version, then blocks of an int32
// length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// unsnappy decodes raw snappy (librdkafka, franz-go, Sarama) or xerial
// framed snappy (the Java client).
func unsnappy(dst, src []byte, budget int) ([]byte, error) {
	limit := len(dst) + budget
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src, limit)
	}
	if len(src) < xerialHeaderLen {
		return dst, corrupt(errors.New("xerial header truncated"))
	}
	src = src[xerialHeaderLen:]
	for len(src) > 0 {
		if len(src) < 4 {
			return dst, corrupt(errors.New("xerial block length truncated"))
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst, corrupt(errors.New("xerial block truncated"))
		}
		var err error
		if dst, err = snappyBlock(dst, src[:n], limit); err != nil {
			return dst, err
		}
		src = src[n:]
	}
	return dst, nil
}

// snappyBlock appends one raw snappy block, checking the length it declares
// against the budget before allocating anything.
func snappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, corrupt(err)
	}
	if n > limit-len(dst) {
		return dst, ErrBudget
	}
	dst = growCapped(dst, n, limit)
	out := dst[len(dst) : len(dst)+n]
	dec, err := snappy.Decode(out, block)
	if err != nil {
		return dst, corrupt(err)
	}
	if len(dec) != n || (n > 0 && &dec[0] != &out[0]) {
		return dst, corrupt(errors.New("snappy block decoded to an unexpected size"))
	}
	return dst[:len(dst)+n], nil
}
