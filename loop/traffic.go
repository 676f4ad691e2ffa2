package loop

import (
	"errors"
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/metrics"
)

// OnTraffic handles every whole frame buffered on c, in order. It stops
// early, leaving bytes unread, when the connection has MaxInFlightPerConn
// requests in flight, holds MaxBufferedPerConn bytes of requests in flight,
// has MaxOutboundPerConn bytes queued for writing, or the worker queue is
// full; whoever frees room wakes the connection (gnet does not fire
// OnTraffic again for bytes already buffered), and for the write cap a
// timer does (backpressure.go). While it is held the socket is not read
// (mute.go). Loop only.
func (s *Server) OnTraffic(c gnet.Conn) gnet.Action {
	cs, ok := c.Context().(*connState)
	if !ok || cs.closed.Load() {
		return gnet.None
	}
	if s.draining.Load() {
		// Stopping: take no new requests; the connection closes with the
		// engine once in-flight replies are out.
		return gnet.None
	}
	cs.stalled = false
	entry := c.InboundBuffered()
	now := time.Now().UnixNano()
	for {
		if cs.throttled(now) {
			cs.stalled = true // a client quota's throttle (throttle.go)
			break
		}
		if cs.writeBlocked(c) {
			cs.stalled = true // our doing, not the client's: no frame deadline
			break
		}
		if cs.inflightFull() {
			if cs.holdWhile(cs.inflightFull) {
				continue
			}
			break
		}
		more, reason, err := s.nextFrame(cs, c)
		if reason != keepOpen {
			cs.close(reason, err)
			return gnet.None
		}
		if !more {
			break
		}
	}
	buffered := c.InboundBuffered()
	if buffered > s.cfg.MaxBufferedPerConn+socketReadChunk {
		cs.close(CloseBufferedBytes, fmt.Errorf("%d unread bytes", buffered))
		return gnet.None
	}
	if cs.stalled || cs.muted {
		cs.setMuted(c, cs.stalled, entry)
	}
	cs.exitBuffered = buffered
	if !cs.stalled {
		// Whatever is left is a partial request (unread, or being
		// assembled): its clock runs.
		cs.noteFrameProgress(buffered + cs.assembledBytes())
	}
	return gnet.None
}

// nextFrame handles one buffered frame. more=false means no whole frame is
// buffered (or the connection is held for room); a reason other than
// keepOpen closes the connection. Loop only.
func (s *Server) nextFrame(cs *connState, c gnet.Conn) (more bool, reason CloseReason, err error) {
	if cs.asm.buf != nil {
		return s.assembledFrame(cs, c)
	}
	head, _ := c.Peek(4)
	if len(head) < 4 {
		return false, keepOpen, nil
	}
	size, _, ferr := codec.FrameSize(head, s.cfg.MaxFrameSize)
	if ferr != nil {
		switch {
		case errors.Is(ferr, codec.ErrFrameHTTP):
			return false, CloseFrameHTTP, ferr
		case errors.Is(ferr, codec.ErrFrameTLS):
			return false, CloseFrameTLS, ferr
		default:
			return false, CloseFrameSize, ferr
		}
	}
	sa := cs.sasl
	if sa != nil && !sa.Authenticated() && size > preAuthMaxFrame {
		return false, CloseSaslFrameSize, fmt.Errorf("%d-byte frame before authentication", size)
	}
	total := 4 + int(size)
	if c.InboundBuffered() < total {
		s.startAssembly(cs, c, total)
		return false, keepOpen, nil
	}
	if sa != nil && (!sa.Authenticated() || sa.Raw() || sa.Failed()) {
		if sa.Failed() {
			return false, CloseSaslFailed, nil
		}
		// Before authentication one request at a time: the outcome of
		// the login in flight decides what the next frame may be.
		if cs.busy() {
			return cs.holdWhile(cs.busy), keepOpen, nil
		}
		if sa.Raw() {
			return s.queueBareToken(cs, c, total)
		}
	}
	frame, perr := c.Peek(total)
	if perr != nil {
		return false, CloseInternal, perr
	}
	return s.handleFrame(cs, c, frame[4:], total, nil)
}

// handleFrame handles one whole frame: body is the frame without its size,
// total the frame's size with it. owned is nil when body was peeked (the
// frame is discarded from c once taken), else the connection's assembled
// buffer holding body (assemble.go), handed to the job or released once
// taken. Loop only.
func (s *Server) handleFrame(cs *connState, c gnet.Conn, body []byte, total int, owned *bytebufferpool.ByteBuffer) (more bool, reason CloseReason, err error) {
	sa := cs.sasl
	hdr, herr := codec.ParseRequestHeader(body)
	if herr != nil {
		return false, CloseBadHeader, herr
	}
	spec := handlers.Lookup(hdr.Key)
	if spec == nil {
		return false, CloseUnknownKey, fmt.Errorf("api key %d", hdr.Key)
	}
	now := time.Now()
	if sa != nil {
		if reason, err := saslGate(sa, spec, now); reason != keepOpen {
			return false, reason, err
		}
		if spec.LoginStep && cs.busy() {
			return cs.holdWhile(cs.busy), keepOpen, nil
		}
	}
	cs.noteServed(now)
	s.cfg.Metrics.BytesIn(total)
	tooNew := false
	if hdr.Version < spec.MinVersion || hdr.Version > spec.MaxVersion {
		// Outside the advertised range closes, unless the key answers a
		// too-new version itself (KIP-511: ApiVersions), so the client
		// can retry with a version we list.
		if hdr.Version < spec.MinVersion || spec.TooNew == nil {
			return false, CloseUnsupportedVersion, fmt.Errorf("api key %d version %d", hdr.Key, hdr.Version)
		}
		tooNew = true
	}
	if (!spec.Inline || spec.Queued != nil && spec.Queued(body[hdr.BodyOffset:], hdr.Version)) && !tooNew {
		// An assembled frame was let in against this cap when its
		// assembly started (startAssembly).
		if owned == nil && s.requestsFull(cs, total) {
			// The connection's jobs already hold their share of request
			// copies; wait for one to finish (it wakes us through release,
			// after it dropped its share).
			return cs.holdWhile(func() bool { return s.requestsFull(cs, total) }), keepOpen, nil
		}
		return s.queueFrame(cs, c, spec, &hdr, body, total, now, owned)
	}
	if reason, err = s.answerInline(cs, spec, &hdr, body, tooNew, now); reason != keepOpen {
		return false, reason, err
	}
	s.frameTaken(cs, c, total, owned)
	return true, keepOpen, nil
}

// requestsFull reports that queueing a frame of total bytes would take the
// request copies the connection's jobs hold past MaxBufferedPerConn (one
// frame always fits: it is at most MaxFrameSize). Any goroutine.
func (s *Server) requestsFull(cs *connState, total int) bool {
	held := cs.reqHeld.Load()
	return held > 0 && held+int64(total) > int64(s.cfg.MaxBufferedPerConn)
}

// answerInline decodes and answers a cheap request on the loop, straight
// from the peeked bytes (nothing of them is kept); tooNew answers a version
// above the key's range with its Spec.TooNew. Loop only.
func (s *Server) answerInline(cs *connState, spec *handlers.Spec, hdr *codec.RequestHeader, body []byte,
	tooNew bool, now time.Time) (CloseReason, error) {
	cs.inflight.Add(1)
	s.inflight.Add(1)
	seq := cs.takeSeq()
	call := handlers.Call{G: s.g, Header: *hdr, Ctx: s.ctx, ClientHost: cs.host, Sasl: cs.sasl,
		Advertised: cs.ln.adv, Listener: cs.ln.Name, TLSPrincipal: cs.tlsPrincipal, ConnID: cs.id}
	var resp kmsg.Response
	if tooNew {
		resp = spec.TooNew(&call)
	} else {
		req, err := handlers.Decode(hdr.Key, hdr.Version, body[hdr.BodyOffset:])
		if err != nil {
			s.abandon(cs, seq, hdr.Key, now)
			return CloseDecode, err
		}
		if resp, err = spec.Handle(&call, req); err != nil {
			s.abandon(cs, seq, hdr.Key, now)
			return handlerCloseReason(err), err
		}
	}
	if !tooNew {
		call.RequestThrottle(resp, time.Since(now)) // client quotas (throttle.go)
		cs.throttle(call.ThrottleMillis())
	}
	var out *bytebufferpool.ByteBuffer
	pool := replyPool(spec)
	if resp != nil {
		out = encodeReply(pool, hdr, resp)
	}
	call.RunDeferred()
	s.cfg.Metrics.Request(hdr.Key, metrics.OutcomeOK, time.Since(now))
	cs.finish(seq, out, pool)
	return keepOpen, nil
}

// abandon ends a request whose connection is about to close, keeping the
// in-flight books straight. Loop only.
func (s *Server) abandon(cs *connState, seq uint64, key int16, now time.Time) {
	s.cfg.Metrics.Request(key, metrics.OutcomeClosed, time.Since(now))
	cs.finish(seq, nil, &smallBufs)
}

// queueFrame copies the frame into a pooled buffer (the only copy of the
// request), or takes owned, the assembled buffer body already lives in,
// and queues it for a worker, with its header pointed into that buffer:
// the peeked bytes hdr and body alias are reused once OnTraffic returns.
// A request the Spec says gets no reply (NoReply) takes no reply slot. When the queue is full the frame is left unread and the connection
// is held until a worker frees room. Loop only.
func (s *Server) queueFrame(cs *connState, c gnet.Conn, spec *handlers.Spec, hdr *codec.RequestHeader,
	body []byte, total int, now time.Time, owned *bytebufferpool.ByteBuffer) (bool, CloseReason, error) {
	noReply := spec.NoReply != nil && spec.NoReply(body[hdr.BodyOffset:], hdr.Version)
	j := getJob()
	j.cs, j.spec, j.noReply, j.start = cs, spec, noReply, now
	if owned != nil {
		j.frame = owned // body already lives in it: no copy
	} else {
		j.frame = largeBufs.Get()
		j.frame.B = append(j.frame.B[:0], body...)
	}
	j.call = handlers.Call{G: s.g, Header: hdr.Rebase(j.frame.B), Ctx: s.ctx, ClientHost: cs.host, Sasl: cs.sasl,
		Advertised: cs.ln.adv, Listener: cs.ln.Name, TLSPrincipal: cs.tlsPrincipal, Order: j, RequestBytes: len(body), ConnID: cs.id}
	if cs.sasl != nil && cs.sasl.Raw() {
		// A bare SASL token (sasl.go): read by the Spec that takes them,
		// answered bare.
		j.raw = true
		j.req = spec.BareToken(j.frame.B)
	}
	j.held = int64(total)
	cs.reqHeld.Add(j.held)
	cs.inflight.Add(1)
	s.inflight.Add(1)
	if !noReply {
		j.seq = cs.nextSeq // taken only once the job is queued
	}
	if !cs.dispatch(j) {
		cs.reqHeld.Add(-j.held)
		cs.inflight.Add(-1)
		s.inflight.Add(-1)
		if owned == nil {
			largeBufs.Put(j.frame)
		} // else the assembled frame stays the connection's, for the retry
		putJob(j)
		cs.stalled = true
		s.holdForQueue(cs)
		return false, keepOpen, nil
	}
	if !noReply {
		cs.nextSeq++
	}
	if owned != nil {
		cs.asm = assembly{} // the job has it now
	} else {
		_, _ = c.Discard(total)
	}
	return true, keepOpen, nil
}
