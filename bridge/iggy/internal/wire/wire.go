// Package wire holds the layout of Iggy's VSR-style binary framing
// (PROTOCOL.md sections 2-5) shared by the client (bridge/iggy) and the
// in-process test server (bridge/iggy/iggytest): header offsets, frame
// commands, operations, command codes, status codes and a bounds-checked
// little-endian reader. Request bodies and replies are encoded on each side
// separately, so a mistake on one side cannot hide a mistake on the other;
// the golden vectors check both.
package wire

import (
	"encoding/binary"
	"errors"
	"io"
)

var le = binary.LittleEndian

// HeaderSize is the size of every frame header, both ways.
const HeaderSize = 256

// MaxFrame is the largest frame (header included) the server accepts and
// the SDKs read: message_bus.max_message_size.
const MaxFrame = 64 << 20

// Frame commands (header byte 60).
const (
	CmdRequest  = 5
	CmdReply    = 8
	CmdEviction = 13
)

// Header field offsets shared by requests and replies.
const (
	OffSize    = 48
	OffCommand = 60
)

// Request header offsets (PROTOCOL.md 2.1).
const (
	ReqClient          = 128 // u128: low u64 then high u64
	ReqRequestChecksum = 144 // u128
	ReqTimestamp       = 160
	ReqRequest         = 168
	ReqOperation       = 176
	ReqSession         = 184
	ReqUserID          = 192
	ReqCode            = 196 // only for operation NonReplicated
)

// Reply header offsets (PROTOCOL.md 2.2).
const (
	RepRequestChecksum = 128
	RepClient          = 160
	RepOp              = 176
	RepCommit          = 184
	RepTimestamp       = 192
	RepRequest         = 200
	RepOperation       = 208
	RepStatus          = 216
)

// Eviction header offsets (PROTOCOL.md 2.4).
const (
	EvClient        = 128
	EvServerVersion = 144
	EvServerMin     = 148
	EvReason        = 255
)

// Operations (header byte 176 on requests, 208 on replies).
const (
	OpRegister             = 1
	OpNonReplicated        = 2
	OpLogout               = 3
	OpCreateStream         = 128
	OpDeleteStream         = 130
	OpCreateTopic          = 132
	OpUpdateTopic          = 133
	OpDeleteTopic          = 134
	OpCreatePartitions     = 136
	OpDeletePartitions     = 137
	OpDeleteSegments       = 138
	OpSendMessages         = 160
	OpStoreConsumerOffset  = 161
	OpDeleteConsumerOffset = 162
)

// Command codes. NonReplicated ones travel at header bytes 196..199.
const (
	CodePing                 = 1
	CodeLoginUser            = 38 // legacy, evicted with MalformedLogin
	CodeLoginRegister        = 40
	CodeLoginWithPAT         = 44 // legacy, evicted with MalformedLogin
	CodeLoginRegisterWithPAT = 45
	CodePollMessages         = 100
	CodeGetConsumerOffset    = 120
	CodeGetStream            = 200
	CodeGetTopic             = 300
	CodeGetTopics            = 301
	CodeGetUser              = 31
)

// Status and result codes (PROTOCOL.md 9) the gateway meets.
const (
	StatusOK                     = 0
	StatusError                  = 1
	StatusInvalidCommand         = 3
	StatusInvalidFormat          = 4
	StatusResourceNotFound       = 20
	StatusStaleClient            = 30
	StatusUnauthenticated        = 40
	StatusUnauthorized           = 41
	StatusInvalidCredentials     = 42
	StatusTransientNotCommitted  = 57
	StatusTransientNotAccepted   = 58
	StatusRequestAlreadyApplied  = 59
	StatusStreamIDNotFound       = 1009
	StatusStreamNameNotFound     = 1010
	StatusStreamNameExists       = 1012
	StatusTopicIDNotFound        = 2010
	StatusTopicNameNotFound      = 2011
	StatusTopicNameExists        = 2013
	StatusTooManyPartitions      = 2015
	StatusPartitionNotFound      = 3007
	StatusConsumerOffsetNotFound = 3021
	StatusInvalidOffset          = 4100
	StatusIncompatibleProtocol   = 14003
)

// Eviction reasons (header byte 255 of an eviction frame).
const (
	EvictNoSession            = 1
	EvictInvalidRequestOp     = 4
	EvictInvalidCredentials   = 9
	EvictInvalidToken         = 10
	EvictUserInactive         = 11
	EvictSessionError         = 12
	EvictStaleClient          = 13
	EvictIncompatibleProtocol = 14
	EvictMalformedLogin       = 15
)

// PackVersion packs major.minor.patch into the u32 the login body carries.
func PackVersion(major, minor, patch uint32) uint32 {
	return (major&0x3ff)<<20 | (minor&0x3ff)<<10 | patch&0x3ff
}

// ProtocolVersion is the protocol this package speaks: 0.11.0.
var ProtocolVersion = PackVersion(0, 11, 0)

// VersionAccepted applies the server's login gate: v is at least min and
// its major.minor is not newer than the server's.
func VersionAccepted(v, server, min uint32) bool {
	return v >= min && v>>10 <= server>>10
}

// IsMetadataOp reports whether op is on the metadata plane (128..149):
// result-framed replies and request ids consumed on use.
func IsMetadataOp(op byte) bool { return op >= 128 && op <= 149 }

// IsPartitionOp reports whether op is on the partition plane (160..162).
func IsPartitionOp(op byte) bool { return op >= 160 && op <= 162 }

// ResultFramed reports whether a reply to op starts with a result section
// (PROTOCOL.md 2.3). Register is result-framed only when its body is not
// empty; callers check that themselves.
func ResultFramed(op byte) bool {
	return (IsMetadataOp(op) && op != OpDeleteSegments) || op == OpStoreConsumerOffset ||
		op == OpDeleteConsumerOffset || op == OpRegister
}

// KnownOp reports whether a client may send op.
func KnownOp(op byte) bool {
	return op == OpRegister || op == OpNonReplicated || op == OpLogout ||
		IsMetadataOp(op) || IsPartitionOp(op)
}

// Errors of frame reading.
var (
	ErrFrameSize = errors.New("iggy wire: frame size out of range")
	ErrShort     = errors.New("iggy wire: truncated")
)

// ReadFrame reads one frame into buf (grown as needed) and returns it.
// A size field below 256 or above MaxFrame is ErrFrameSize: the stream
// cannot be resynchronised after it.
func ReadFrame(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) < HeaderSize {
		buf = make([]byte, HeaderSize, 4096)
	}
	buf = buf[:HeaderSize]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, err
	}
	size := le.Uint32(buf[OffSize:])
	if size < HeaderSize || size > MaxFrame {
		return buf, ErrFrameSize
	}
	if int(size) > cap(buf) {
		buf = grow(buf, int(size))
	}
	buf = buf[:size]
	_, err := io.ReadFull(r, buf[HeaderSize:])
	return buf, err
}

// grow returns a buffer of capacity at least size holding buf's bytes,
// with an eighth to spare: replies of one kind vary a little in size, and
// a buffer kept for the next one should not be replaced for every few
// bytes more.
func grow(buf []byte, size int) []byte {
	nb := make([]byte, len(buf), size+size/8)
	copy(nb, buf)
	return nb
}

// FrameReader reads frames from R straight into the caller's buffer: one
// read of as much as the buffer holds (at least a header), then the rest
// of the frame, so no frame passes through a second buffer as it would
// through a bufio.Reader. Bytes read past a frame's end (a peer that sent
// two frames at once) are kept for the next Read. Frames and errors are
// ReadFrame's. Not safe for concurrent use.
type FrameReader struct {
	R    io.Reader
	more []byte // read past the last frame; owned, never the caller's
}

// Read reads one frame into buf (grown as needed) and returns it.
func (fr *FrameReader) Read(buf []byte) ([]byte, error) {
	if cap(buf) < 4096 {
		buf = make([]byte, 0, 4096)
	}
	buf = buf[:cap(buf)]
	n, err := fr.fill(buf, 0, HeaderSize)
	if err != nil {
		return buf[:n], err
	}
	size := int(le.Uint32(buf[OffSize:]))
	if size < HeaderSize || size > MaxFrame {
		return buf[:n], ErrFrameSize
	}
	switch {
	case n > size:
		// Ahead of anything still kept: rare, so a fresh slice will do.
		fr.more = append(append([]byte(nil), buf[size:n]...), fr.more...)
	case n < size:
		if size > len(buf) {
			buf = grow(buf[:n], size)
		}
		buf = buf[:size]
		if n, err = fr.fill(buf, n, size); err != nil {
			return buf[:n], err
		}
	}
	return buf[:size], nil
}

// fill puts at least min bytes in buf from offset n on: first those kept
// from before, then from R, reading no further than min once buf[:n]
// holds a header (only a header's read may take more than it needs).
func (fr *FrameReader) fill(buf []byte, n, min int) (int, error) {
	if len(fr.more) > 0 {
		c := copy(buf[n:], fr.more)
		fr.more = fr.more[:copy(fr.more, fr.more[c:])]
		n += c
	}
	if n >= min {
		return n, nil
	}
	end := len(buf)
	if n >= HeaderSize {
		end = min
	}
	m, err := io.ReadAtLeast(fr.R, buf[n:end], min-n)
	return n + m, err
}
