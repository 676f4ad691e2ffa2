package codec

import (
	"encoding/binary"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrHeader is returned for a request header that cannot be parsed.
var ErrHeader = errors.New("codec: malformed request header")

// apiVersionsKey is the one key whose response header never carries tagged
// fields, so that a client of any version can read the reply (KIP-511).
const apiVersionsKey = 18

// controlledShutdownKey v0 is the one request that uses header v0 (no client id).
const controlledShutdownKey = 7

// firstFlexible[k] is the first version of key k that uses the flexible
// (v2 request, v1 response) headers, or -1 when no version known to kmsg
// does. Flexibility never ends once it starts (KIP-482), so one number per key
// answers every version, including versions newer than kmsg knows. A fixed
// array keeps lookups allocation-free; it is written once by init and only
// read afterwards, so any goroutine may read it.
var firstFlexible [kmsg.MaxKey + 1]int16

func init() {
	for k := range firstFlexible {
		firstFlexible[k] = firstFlexibleVersion(int16(k))
	}
}

// firstFlexibleVersion asks kmsg which versions of key are flexible.
func firstFlexibleVersion(key int16) int16 {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return -1
	}
	for v := int16(0); v <= req.MaxVersion(); v++ {
		req.SetVersion(v)
		if req.IsFlexible() {
			return v
		}
	}
	return -1
}

// RequestHeader is a parsed Kafka request header (v0, v1 or v2). ClientID
// aliases the frame; it is nil for a null client id. BodyOffset is where the
// request body starts within the frame (the frame excludes the size prefix).
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      []byte
	BodyOffset    int
	// Flexible is true when the header is v2 (tagged fields follow the
	// client id); it follows Kafka's rule per key and version.
	Flexible bool
}

// RequestIsFlexible reports whether key at version uses the flexible (v2)
// request header, from a table built once from kmsg. Unknown keys are false.
//
// Any goroutine; no allocation.
func RequestIsFlexible(key, version int16) bool {
	if key < 0 || int(key) >= len(firstFlexible) {
		return false
	}
	first := firstFlexible[key]
	return first >= 0 && version >= first
}

// ParseRequestHeader parses the header at the start of frame without
// allocating. Keys unknown to kmsg parse as header v1 (key, version,
// correlation id, client id) so the caller can still answer or close by
// correlation id. ControlledShutdown v0 parses as header v0 (no client id).
//
// On ErrHeader the returned header still holds Key, Version and
// CorrelationID when the frame had the 8 bytes for them, so the caller can
// log or answer by correlation id.
//
// Any goroutine; no allocation.
func ParseRequestHeader(frame []byte) (RequestHeader, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, ErrHeader
	}
	h.Key = int16(binary.BigEndian.Uint16(frame))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	if h.Key == controlledShutdownKey && h.Version == 0 {
		h.BodyOffset = 8
		return h, nil
	}
	clientID, off, ok := readNullableString(frame, 8)
	if !ok {
		return h, ErrHeader
	}
	h.ClientID = clientID
	h.Flexible = RequestIsFlexible(h.Key, h.Version)
	if h.Flexible {
		if off, ok = skipTags(frame, off); !ok {
			return h, ErrHeader
		}
	}
	h.BodyOffset = off
	return h, nil
}

// Rebase returns h for frame, a copy of the bytes h was parsed from:
// ClientID points into frame instead of the original, so the header stays
// valid once the original is reused (a peeked event-loop buffer). A
// non-null client id always starts at offset 10, after key, version,
// correlation id and its int16 length.
//
// Any goroutine; no allocation.
func (h RequestHeader) Rebase(frame []byte) RequestHeader {
	if h.ClientID != nil {
		end := 10 + len(h.ClientID)
		h.ClientID = frame[10:end:end]
	}
	return h
}

// readNullableString reads an int16-length string at b[off:]; it returns nil
// for length -1 and a non-nil (maybe empty) slice of b otherwise.
func readNullableString(b []byte, off int) (s []byte, next int, ok bool) {
	if len(b)-off < 2 {
		return nil, off, false
	}
	n := int(int16(binary.BigEndian.Uint16(b[off:])))
	off += 2
	if n == -1 {
		return nil, off, true
	}
	if n < 0 || n > len(b)-off {
		return nil, off, false
	}
	return b[off : off+n : off+n], off + n, true
}

// skipTags skips a tagged-field buffer (uvarint count, then per field a
// uvarint tag, uvarint size and size bytes) at b[off:].
func skipTags(b []byte, off int) (int, bool) {
	count, n := readUvarint32(b[off:])
	if n == 0 {
		return off, false
	}
	off += n
	// Each field needs at least 2 bytes; this bounds the loop by the input.
	if uint64(count) > uint64(len(b)-off) {
		return off, false
	}
	for ; count > 0; count-- {
		if _, n = readUvarint32(b[off:]); n == 0 {
			return off, false
		}
		off += n
		size, n := readUvarint32(b[off:])
		if n == 0 {
			return off, false
		}
		off += n
		if uint64(size) > uint64(len(b)-off) {
			return off, false
		}
		off += int(size)
	}
	return off, true
}

// ResponseHeaderLen is the number of bytes AppendResponseHeader writes after
// the 4-byte size: 4 (correlation id) or 5 with the empty tag buffer of a
// flexible response. ApiVersions (key 18) always uses the v0 header.
//
// Any goroutine; no allocation.
func ResponseHeaderLen(key, version int16) int {
	if key != apiVersionsKey && RequestIsFlexible(key, version) {
		return 5
	}
	return 4
}

// AppendResponseHeader appends a 4-byte size placeholder, the correlation id
// and, for flexible responses other than ApiVersions, the empty tag buffer.
// The caller appends the body and then calls PatchFrameSize(buf, start),
// where start is len(dst) before this call.
//
// Any goroutine; no allocation when dst has room for 9 more bytes.
func AppendResponseHeader(dst []byte, key, version int16, correlationID int32) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if ResponseHeaderLen(key, version) == 5 {
		dst = append(dst, 0)
	}
	return dst
}

// PatchFrameSize writes len(buf)-start-4 as the big-endian size prefix at
// buf[start:start+4].
//
// Any goroutine; no allocation.
func PatchFrameSize(buf []byte, start int) {
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
}
