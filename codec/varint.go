package codec

// Kafka's variable-length integers: unsigned LEB128 (uvarint) for tag
// buffers and compact lengths, zigzag-encoded for record fields. These
// helpers are written for the hot record path: they never allocate and they
// reject encodings longer than Kafka allows (5 bytes for 32-bit values, 10 for
// 64-bit ones), as the Java broker does.

// readUvarint32 decodes an unsigned varint of at most 5 bytes from b. n is
// the number of bytes used, or 0 when b is truncated or the value overflows
// 32 bits.
func readUvarint32(b []byte) (v uint32, n int) {
	var shift uint
	for i := 0; i < len(b) && i < 5; i++ {
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0
		}
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v, i + 1
		}
		shift += 7
	}
	return 0, 0
}

// readVarint32 decodes a zigzag varint of at most 5 bytes; n is 0 on error.
func readVarint32(b []byte) (int32, int) {
	if len(b) > 0 && b[0] < 0x80 { // one-byte fast path: most lengths and deltas
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	u, n := readUvarint32(b)
	return int32(u>>1) ^ -int32(u&1), n
}

// readVarint64 decodes a zigzag varint of at most 10 bytes; n is 0 on error.
func readVarint64(b []byte) (int64, int) {
	var u uint64
	var shift uint
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 0x01 {
			return 0, 0
		}
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
		shift += 7
	}
	return 0, 0
}

// appendUvarint64 appends u as an unsigned varint.
func appendUvarint64(dst []byte, u uint64) []byte {
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// appendVarint32 appends v zigzag-encoded.
func appendVarint32(dst []byte, v int32) []byte {
	return appendUvarint64(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

// appendVarint64 appends v zigzag-encoded.
func appendVarint64(dst []byte, v int64) []byte {
	return appendUvarint64(dst, uint64(v<<1)^uint64(v>>63))
}

// putVarint32 writes v zigzag-encoded at the start of b, which must have
// room (5 bytes always suffice), and returns the bytes written.
func putVarint32(b []byte, v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	i := 0
	for u >= 0x80 {
		b[i] = byte(u) | 0x80
		u >>= 7
		i++
	}
	b[i] = byte(u)
	return i + 1
}
