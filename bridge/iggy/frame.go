package iggy

import (
	"fmt"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// protocolVersion is sent in every login body: 0.11.0 (PROTOCOL.md 1).
var protocolVersion = wire.ProtocolVersion

// reqHeader is what a client chooses in a request header; everything else
// stays zero (PROTOCOL.md 2.1).
type reqHeader struct {
	clientLo, clientHi uint64
	request            uint64
	session            uint64
	op                 uint8
	code               uint32 // NonReplicated only
	size               uint32 // 256 + body length
}

// putReqHeader writes h into the first 256 bytes of b, zeroing the rest of
// the header.
func putReqHeader(b []byte, h reqHeader) {
	clear(b[:wire.HeaderSize])
	le.PutUint32(b[wire.OffSize:], h.size)
	b[wire.OffCommand] = wire.CmdRequest
	le.PutUint64(b[wire.ReqClient:], h.clientLo)
	le.PutUint64(b[wire.ReqClient+8:], h.clientHi)
	le.PutUint64(b[wire.ReqRequest:], h.request)
	b[wire.ReqOperation] = h.op
	le.PutUint64(b[wire.ReqSession:], h.session)
	if h.op == wire.OpNonReplicated {
		le.PutUint32(b[wire.ReqCode:], h.code)
	}
}

// session holds the per-connection stamping state of PROTOCOL.md 3.3.
type session struct {
	clientLo, clientHi uint64
	fence              uint64 // 0 before login
	next               uint64 // request counter, starts at 1
}

// stamp returns the request id and session a request with operation op
// carries, and advances the counter for the classes that consume it.
func (s *session) stamp(op uint8) (request, fence uint64) {
	switch {
	case op == wire.OpRegister:
		return 0, 0
	case wire.IsMetadataOp(op) || op == wire.OpLogout:
		r := s.next
		s.next++
		return r, s.fence
	default: // NonReplicated and partition ops reuse the counter
		return s.next, s.fence
	}
}

// bind starts the session the login reply granted.
func (s *session) bind(fence uint64) {
	s.fence = fence
	s.next = 1
}

// header builds the header of a request with a body of bodyLen bytes.
func (s *session) header(op uint8, code uint32, bodyLen int) reqHeader {
	req, fence := s.stamp(op)
	return reqHeader{
		clientLo: s.clientLo, clientHi: s.clientHi,
		request: req, session: fence,
		op: op, code: code,
		size: uint32(wire.HeaderSize + bodyLen),
	}
}

// reply is a decoded reply frame. body aliases the read buffer.
type reply struct {
	request uint64
	// operation is the operation of the request this reply answers: it,
	// not the reply's own operation byte, decides how the body is framed.
	// A real server answers CreateTopic (132) with 64 and CreatePartitions
	// (136) with 65, the replica-internal operations it rewrote them into,
	// and both bodies are still result-framed.
	operation uint8
	replyOp   uint8 // header byte 208 as the server wrote it; logs and tests only
	status    uint32
	body      []byte
}

// decodeFrame reads a reply or an eviction frame (whole frame in b) to a
// request sent with operation sent.
func decodeFrame(b []byte, sent uint8) (reply, error) {
	if len(b) < wire.HeaderSize || int(le.Uint32(b[wire.OffSize:])) != len(b) {
		return reply{}, fmt.Errorf("%w: frame size", ErrProtocol)
	}
	switch b[wire.OffCommand] {
	case wire.CmdReply:
		return reply{
			request:   le.Uint64(b[wire.RepRequest:]),
			operation: sent,
			replyOp:   b[wire.RepOperation],
			status:    le.Uint32(b[wire.RepStatus:]),
			body:      b[wire.HeaderSize:],
		}, nil
	case wire.CmdEviction:
		return reply{}, &EvictionError{
			Reason:        b[wire.EvReason],
			ServerVersion: le.Uint32(b[wire.EvServerVersion:]),
			MinVersion:    le.Uint32(b[wire.EvServerMin:]),
		}
	}
	return reply{}, fmt.Errorf("%w: frame command %d", ErrProtocol, b[wire.OffCommand])
}

// payload returns the reply's payload after checking the status and, for
// result-framed operations, the result section (PROTOCOL.md 2.3).
func (r *reply) payload() ([]byte, error) {
	if r.status != wire.StatusOK {
		return nil, &Error{Code: r.status}
	}
	if !wire.ResultFramed(r.operation) || (r.operation == wire.OpRegister && len(r.body) == 0) {
		return r.body, nil
	}
	return resultSection(r.body)
}

// resultSection strips a result section: count 0 is success, else the
// first entry's result is the error committed as a rejection.
func resultSection(b []byte) ([]byte, error) {
	rd := wire.NewReader(b)
	n := rd.U32()
	if rd.Failed() {
		return nil, fmt.Errorf("%w: short result section", ErrProtocol)
	}
	if n == 0 {
		return rd.Rest(), nil
	}
	_ = rd.U32() // index
	code := rd.U32()
	if rd.Failed() {
		return nil, fmt.Errorf("%w: short result entry", ErrProtocol)
	}
	return nil, &Error{Code: code, Committed: true}
}
