package iggytest

import (
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Reply operations of committed CreateTopic and CreatePartitions.
const (
	opCreateTopicWithAssignments      = 64
	opCreatePartitionsWithAssignments = 65
)

// connState is one client connection's session.
type connState struct {
	srv                *Server
	clientLo, clientHi uint64
	fence              uint64 // 0: not logged in
	lastMeta           uint64 // highest metadata request id applied
	cached             []byte // reply to lastMeta, replayed on a resend
}

// handle answers one frame. It returns the bytes to write (nil: stay
// silent) and whether to close the connection afterwards.
func (cs *connState) handle(frame []byte) ([]byte, bool) {
	h := parseReqHeader(frame)
	body := frame[wire.HeaderSize:]
	if !headerValid(frame, &h) {
		cs.srv.rejected.Add(1)
		cs.srv.log.Warn("iggytest: invalid request header, dropped", "op", h.op)
		return nil, false
	}
	if !checksumOK(&h, body) {
		return cs.reply(&h, wire.StatusInvalidFormat), false
	}
	switch {
	case h.op == wire.OpRegister:
		return cs.login(&h, body)
	case h.op == wire.OpNonReplicated:
		return cs.nonReplicated(&h, body)
	case h.op == wire.OpLogout:
		cs.fence = 0
		return cs.reply(&h, wire.StatusOK), false
	}
	if !cs.bound(&h) {
		return evictionFrame(&h, wire.EvictNoSession), true
	}
	if wire.IsMetadataOp(h.op) {
		return cs.metadata(&h, body), false
	}
	out := cs.partitionOp(&h, body)
	return out, false
}

// bound reports whether h belongs to this connection's live session.
func (cs *connState) bound(h *reqHeader) bool {
	return cs.fence != 0 && h.session == cs.fence && h.clientLo == cs.clientLo && h.clientHi == cs.clientHi
}

func (cs *connState) reply(h *reqHeader, status uint32, parts ...[]byte) []byte {
	return replyFrame(h, cs.fence, status, parts...)
}

// nonReplicated serves reads and Ping. Only Ping works before login;
// the legacy login codes are evicted as malformed logins.
func (cs *connState) nonReplicated(h *reqHeader, body []byte) ([]byte, bool) {
	switch h.code {
	case wire.CodeLoginUser, wire.CodeLoginWithPAT:
		cs.srv.rejected.Add(1)
		return evictionFrame(h, wire.EvictMalformedLogin), true
	case wire.CodePing:
		return cs.reply(h, wire.StatusOK), false
	}
	if cs.fence == 0 || h.session != cs.fence {
		return cs.reply(h, wire.StatusUnauthenticated), false
	}
	status, parts := cs.srv.read(h.code, body)
	return cs.reply(h, status, parts...), false
}

// metadata applies a metadata-plane request once per request id: a resend
// of the last id gets the cached reply, an older id status 59.
func (cs *connState) metadata(h *reqHeader, body []byte) []byte {
	switch {
	case h.request == cs.lastMeta && cs.cached != nil:
		return cs.cached
	case h.request <= cs.lastMeta:
		return cs.reply(h, wire.StatusRequestAlreadyApplied)
	}
	status, parts := cs.srv.metadata(h.op, body)
	rh := *h
	if status == wire.StatusOK {
		// A committed CreateTopic or CreatePartitions is answered with
		// the replica-internal operation the real server rewrote it into.
		switch h.op {
		case wire.OpCreateTopic:
			rh.op = opCreateTopicWithAssignments
		case wire.OpCreatePartitions:
			rh.op = opCreatePartitionsWithAssignments
		}
	}
	out := cs.reply(&rh, status, parts...)
	cs.lastMeta, cs.cached = h.request, out
	return out
}

// partitionOp serves SendMessages and the offset writes. A send that fails
// admission gets no reply at all, as from Iggy.
func (cs *connState) partitionOp(h *reqHeader, body []byte) []byte {
	switch h.op {
	case wire.OpSendMessages:
		status, parts, ok := cs.srv.send(body)
		if !ok {
			cs.srv.rejected.Add(1)
			cs.srv.log.Warn("iggytest: send batch failed admission, dropped")
			return nil
		}
		return cs.reply(h, status, parts...)
	case wire.OpStoreConsumerOffset:
		return cs.resultReply(h, cs.srv.storeOffset(body))
	case wire.OpDeleteConsumerOffset:
		return cs.resultReply(h, cs.srv.deleteOffset(body))
	}
	return cs.reply(h, wire.StatusInvalidCommand)
}

// resultReply answers a result-framed op: an empty result section on
// success, an empty body with the status on a denial.
func (cs *connState) resultReply(h *reqHeader, status uint32) []byte {
	if status != wire.StatusOK {
		return cs.reply(h, status)
	}
	return cs.reply(h, status, resultOK)
}
