package codec

import "encoding/binary"

// ProduceAcks reads the acks field of a Produce request body (the frame from
// RequestHeader.BodyOffset on) without decoding the request, so the loop can
// decide whether the request takes a reply slot (acks=0 gets no reply) before
// it copies the frame. The body starts with transactional_id for v3+ (a
// nullable string; compact, uvarint length+1, from v9 on), then acks int16;
// v0-v2 start with acks. ok is false when the body is truncated or a length
// is invalid.
//
// Any goroutine; no allocation.
func ProduceAcks(body []byte, version int16) (acks int16, ok bool) {
	off := 0
	switch {
	case version >= 9:
		n, used := readUvarint32(body)
		if used == 0 {
			return 0, false
		}
		off = used
		if n > 0 {
			if uint64(n-1) > uint64(len(body)-off) {
				return 0, false
			}
			off += int(n - 1)
		}
	case version >= 3:
		if _, off, ok = readNullableString(body, 0); !ok {
			return 0, false
		}
	}
	if len(body)-off < 2 {
		return 0, false
	}
	return int16(binary.BigEndian.Uint16(body[off:])), true
}
