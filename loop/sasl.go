package loop

// The loop's side of SASL (handlers/sasl.go has the exchange): which
// requests a connection may send before and after authentication, one
// request at a time while a login is open, and the bare-token framing
// after a v0 SaslHandshake (KIP-43).

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/handlers"
)

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
	// preAuthMaxFrame caps a frame before authentication (Kafka's
	// sasl.server.max.receive.size is 512 KiB; nothing a client sends
	// before logging in comes near 64 KiB), so an anonymous client cannot
	// make the gateway buffer max-frame-size bytes.
	preAuthMaxFrame = 64 << 10
)

func isSaslKey(k int16) bool { return k == saslHandshakeKey || k == saslAuthenticateKey }

// saslGate decides whether a request of key may run on a SASL connection.
// Loop only.
func saslGate(cs *connState, sa *handlers.SaslConn, key int16, now time.Time) (CloseReason, error) {
	switch {
	case sa.Failed():
		return CloseSaslFailed, nil
	case !sa.Authenticated():
		if key != apiVersionsKey && !isSaslKey(key) {
			return CloseSaslRequired, fmt.Errorf("api key %d before authentication", key)
		}
	case sa.Expired(now) && !isSaslKey(key):
		return CloseSaslExpired, fmt.Errorf("api key %d after the session expired", key)
	}
	return CloseClient, nil
}

// holdUntilIdle leaves the frame unread until the connection has no
// request in flight; release wakes it. It returns true when the last one
// finished in between (look again at once). Loop only.
func (cs *connState) holdUntilIdle() bool {
	cs.held.Store(true)
	if cs.inflight.Load() == 0 && cs.held.CompareAndSwap(true, false) {
		return true
	}
	cs.stalled = true
	return false
}

// noteServed records that a whole request arrived. Loop only.
func (cs *connState) noteServed(now time.Time) {
	cs.lastActive.Store(now.UnixNano())
	// The whole request is here: its FrameTimeout is met.
	cs.served = true
	if cs.frameStart.Load() != 0 {
		cs.frameStart.Store(0)
	}
}

// handlerCloseReason names the close for a handler's error.
func handlerCloseReason(err error) CloseReason {
	if errors.Is(err, handlers.ErrSaslFailed) {
		return CloseSaslFailed
	}
	return CloseHandler
}

// encodeRawToken frames the auth bytes of a SaslAuthenticate answer bare:
// a size and the token, no header (KIP-43). Any goroutine.
func encodeRawToken(resp kmsg.Response) *bytebufferpool.ByteBuffer {
	buf := smallBufs.Get()
	buf.B = append(buf.B[:0], 0, 0, 0, 0)
	if r, ok := resp.(*kmsg.SASLAuthenticateResponse); ok {
		buf.B = append(buf.B, r.SASLAuthBytes...)
	}
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
	return sa != nil && !sa.Authenticated() && cs.inflight.Load() == 0 && now-cs.opened > int64(timeout)
}
