package wire

import "encoding/binary"

// Reader decodes little-endian fields from a byte slice. A read past the
// end sets a sticky failure and returns zero values, so decoders read a
// whole record and check Err once, without a bounds check per field.
type Reader struct {
	b   []byte
	off int
	bad bool
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// take returns the next n bytes or nil (and marks the reader bad).
func (r *Reader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b)-r.off {
		r.bad = true
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

// U8 reads one byte.
func (r *Reader) U8() uint8 {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

// U32 reads a little-endian u32.
func (r *Reader) U32() uint32 {
	if s := r.take(4); s != nil {
		return le.Uint32(s)
	}
	return 0
}

// U64 reads a little-endian u64.
func (r *Reader) U64() uint64 {
	if s := r.take(8); s != nil {
		return le.Uint64(s)
	}
	return 0
}

// Uvarint reads an unsigned varint (encoding/binary's).
func (r *Reader) Uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, k := binary.Uvarint(r.b[r.off:])
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.off += k
	return v
}

// Fail marks the reader failed, for a decoder on top of it that refuses
// a field it read.
func (r *Reader) Fail() { r.bad = true }

// Bytes reads n bytes, aliasing the input.
func (r *Reader) Bytes(n int) []byte { return r.take(n) }

// Name reads a u8-length-prefixed string (PROTOCOL.md 5.1), any length.
func (r *Reader) Name() string {
	n := int(r.U8())
	return string(r.take(n))
}

// Bytes32 reads a u32-length-prefixed byte string, aliasing the input.
func (r *Reader) Bytes32() []byte {
	n := r.U32()
	if uint64(n) > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	return r.take(int(n))
}

// Rest returns the unread bytes and consumes them.
func (r *Reader) Rest() []byte {
	if r.bad {
		return nil
	}
	s := r.b[r.off:]
	r.off = len(r.b)
	return s
}

// Len is the number of unread bytes.
func (r *Reader) Len() int {
	if r.bad {
		return 0
	}
	return len(r.b) - r.off
}

// Failed reports whether any read ran past the end.
func (r *Reader) Failed() bool { return r.bad }
