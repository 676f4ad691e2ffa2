package iggytest

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

var le = binary.LittleEndian

// reqHeader is what the server reads from a request header.
type reqHeader struct {
	clientLo, clientHi uint64
	checksumLo         uint64
	checksumHi         uint64
	timestamp          uint64
	request            uint64
	op                 uint8
	session            uint64
	code               uint32
}

func parseReqHeader(b []byte) reqHeader {
	return reqHeader{
		clientLo:   le.Uint64(b[wire.ReqClient:]),
		clientHi:   le.Uint64(b[wire.ReqClient+8:]),
		checksumLo: le.Uint64(b[wire.ReqRequestChecksum:]),
		checksumHi: le.Uint64(b[wire.ReqRequestChecksum+8:]),
		timestamp:  le.Uint64(b[wire.ReqTimestamp:]),
		request:    le.Uint64(b[wire.ReqRequest:]),
		op:         b[wire.ReqOperation],
		session:    le.Uint64(b[wire.ReqSession:]),
		code:       le.Uint32(b[wire.ReqCode:]),
	}
}

// headerValid applies the checks after which the real server drops a
// frame without a reply (PROTOCOL.md 2.1).
func headerValid(b []byte, h *reqHeader) bool {
	switch {
	case b[wire.OffCommand] != wire.CmdRequest:
		return false
	case h.clientLo == 0 && h.clientHi == 0:
		return false
	case !wire.KnownOp(h.op):
		return false
	case h.op == wire.OpRegister:
		return h.session == 0 && h.request == 0
	case h.op == wire.OpNonReplicated:
		return true
	}
	return h.session > 0 && h.request > 0
}

// checksumOK checks an optional request_checksum: XXH3-64 of the body,
// zero-extended.
func checksumOK(h *reqHeader, body []byte) bool {
	if h.checksumLo == 0 && h.checksumHi == 0 {
		return true
	}
	return h.checksumHi == 0 && h.checksumLo == xxh3.Hash(body)
}

// replyFrame builds a reply to h: header then payload parts.
func replyFrame(h *reqHeader, fence uint64, status uint32, parts ...[]byte) []byte {
	n := wire.HeaderSize
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, wire.HeaderSize, n)
	le.PutUint32(out[wire.OffSize:], uint32(n))
	out[wire.OffCommand] = wire.CmdReply
	le.PutUint64(out[wire.RepRequestChecksum:], h.checksumLo)
	le.PutUint64(out[wire.RepRequestChecksum+8:], h.checksumHi)
	le.PutUint64(out[wire.RepClient:], h.clientLo)
	le.PutUint64(out[wire.RepClient+8:], h.clientHi)
	le.PutUint64(out[wire.RepOp:], fence)
	le.PutUint64(out[wire.RepTimestamp:], h.timestamp)
	le.PutUint64(out[wire.RepRequest:], h.request)
	out[wire.RepOperation] = h.op
	le.PutUint32(out[wire.RepStatus:], status)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// evictionFrame builds an eviction with reason; the version window is
// filled for reason 14 only.
func evictionFrame(h *reqHeader, reason uint8) []byte {
	out := make([]byte, wire.HeaderSize)
	le.PutUint32(out[wire.OffSize:], wire.HeaderSize)
	out[wire.OffCommand] = wire.CmdEviction
	le.PutUint64(out[wire.EvClient:], h.clientLo)
	le.PutUint64(out[wire.EvClient+8:], h.clientHi)
	if reason == wire.EvictIncompatibleProtocol {
		le.PutUint32(out[wire.EvServerVersion:], wire.ProtocolVersion)
		le.PutUint32(out[wire.EvServerMin:], wire.ProtocolVersion)
	}
	out[wire.EvReason] = reason
	return out
}

// ok is an empty result section: success.
var resultOK = []byte{0, 0, 0, 0}

// result is a result section committing a rejection with code.
func result(code uint32) []byte {
	b := make([]byte, 12)
	le.PutUint32(b, 1)
	le.PutUint32(b[8:], code)
	return b
}
