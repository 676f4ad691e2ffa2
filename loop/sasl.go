package loop

// The loop's side of SASL (handlers/sasl.go has the exchange): which
// requests a connection may send before and after authentication, one
// request at a time while a login is open, and the bare-token framing
// after a v0 SaslHandshake (KIP-43). Which keys are which is the handlers'
// registry's to say (handlers.Spec: BeforeLogin, LoginStep, BareToken).

import (
	"errors"
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/handlers"
)

// preAuthMaxFrame caps a frame before authentication (Kafka's
// sasl.server.max.receive.size is 512 KiB; nothing a client sends before
// logging in comes near 64 KiB), so an anonymous client cannot make the
// gateway buffer max-frame-size bytes.
const preAuthMaxFrame = 64 << 10

// saslGate decides whether a request of spec's key may run on a SASL
// connection now: keepOpen if so, else the reason to close. Loop only.
func saslGate(sa *handlers.SaslConn, spec *handlers.Spec, now time.Time) (CloseReason, error) {
	switch {
	case sa.Failed():
		return CloseSaslFailed, nil
	case !sa.Authenticated():
		if !spec.BeforeLogin && !spec.LoginStep {
			return CloseSaslRequired, fmt.Errorf("api key %d before authentication", spec.Key)
		}
	case sa.Expired(now) && !spec.LoginStep:
		return CloseSaslExpired, fmt.Errorf("api key %d after the session expired", spec.Key)
	}
	return keepOpen, nil
}

// queueBareToken queues the whole frame of total bytes, a bare token with
// no Kafka header, as a v0 request of the key that takes bare tokens
// (handlers.BareTokenSpec). The caller checked that nothing is in flight.
// Loop only.
func (s *Server) queueBareToken(cs *connState, c gnet.Conn, total int) (bool, CloseReason, error) {
	frame, err := c.Peek(total)
	if err != nil {
		return false, CloseInternal, err
	}
	now := time.Now()
	cs.noteServed(now)
	s.cfg.Metrics.BytesIn(total)
	spec := handlers.BareTokenSpec()
	hdr := codec.RequestHeader{Key: spec.Key}
	return s.queueFrame(cs, c, spec, &hdr, frame[4:], total, now, nil)
}

// handlerCloseReason names the close for a handler's error. Any goroutine.
func handlerCloseReason(err error) CloseReason {
	if errors.Is(err, handlers.ErrSaslFailed) {
		return CloseSaslFailed
	}
	return CloseHandler
}

// encodeBareToken frames a token bare: a size and the token, no header
// (KIP-43). Any goroutine.
func encodeBareToken(token []byte) *bytebufferpool.ByteBuffer {
	buf := smallBufs.Get()
	buf.B = append(buf.B[:0], 0, 0, 0, 0)
	buf.B = append(buf.B, token...)
	codec.PatchFrameSize(buf.B, 0)
	return buf
}

// loginLate reports that a connection on a SASL listener has not logged in
// within timeout of connecting and has nothing in flight (a login being
// checked or a refusal waiting for its delay ends by itself). An anonymous
// client cannot hold a connection slot by sending only ApiVersions. The
// ticker; any goroutine.
func (cs *connState) loginLate(now int64, timeout time.Duration) bool {
	sa := cs.sasl
	return sa != nil && !sa.Authenticated() && !cs.busy() && now-cs.opened > int64(timeout)
}
