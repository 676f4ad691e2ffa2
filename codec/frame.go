package codec

import (
	"encoding/binary"
	"errors"
)

// Frame errors. Each is a reason to close the connection: the Kafka protocol
// has no way to answer a frame it cannot delimit.
var (
	ErrFrameNegative = errors.New("codec: negative frame size")
	ErrFrameTooLarge = errors.New("codec: frame size over the limit")
	ErrFrameHTTP     = errors.New("codec: frame looks like an HTTP request; this port speaks the Kafka protocol")
	ErrFrameTLS      = errors.New("codec: frame looks like a TLS handshake; this listener is plaintext")
	ErrFrameZero     = errors.New("codec: zero-length frame")
)

// FrameSize reads the 4-byte big-endian size prefix at the start of b and
// checks it against max (exclusive of the 4 prefix bytes). It needs len(b)>=4
// and reports ok=false when fewer bytes are there. A size <=0 or >max returns
// an error; when the size is over the limit and the prefix bytes spell "HTTP"
// (or "GET ", "POST", "PUT ", "HEAD") the error is ErrFrameHTTP, and a TLS
// record start (0x16 0x03) gives ErrFrameTLS.
//
// ok=false never comes with an error: the caller waits for more bytes. When
// err != nil, ok is true and size is the raw prefix value, for logging.
//
// Any goroutine; no allocation.
func FrameSize(b []byte, max int32) (size int32, ok bool, err error) {
	if len(b) < 4 {
		return 0, false, nil
	}
	size = int32(binary.BigEndian.Uint32(b))
	switch {
	case size == 0:
		return size, true, ErrFrameZero
	case size < 0:
		return size, true, ErrFrameNegative
	case size > max:
		return size, true, oversizeReason(b)
	}
	return size, true, nil
}

// oversizeReason names the common mistake behind an absurd size prefix: a
// plaintext HTTP client or a TLS client talking to this Kafka port. The
// prefixes below all decode as sizes of hundreds of MiB, so they only ever
// reach here past the limit.
func oversizeReason(b []byte) error {
	if b[0] == 0x16 && b[1] == 0x03 {
		return ErrFrameTLS
	}
	switch string(b[:4]) { // no allocation: the compiler compares in place
	case "HTTP", "GET ", "POST", "PUT ", "HEAD", "PRI ", "DELE", "OPTI", "PATC", "CONN":
		return ErrFrameHTTP
	}
	return ErrFrameTooLarge
}
