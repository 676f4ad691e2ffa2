// SaslHandshake: v0-1
//
// Behavior:
//   - Lists the enabled mechanisms (--sasl-mechanisms: PLAIN,
//     SCRAM-SHA-256, SCRAM-SHA-512) and chooses one for the connection; an
//     unknown or disabled one gets UNSUPPORTED_SASL_MECHANISM with the list,
//     and the connection stays unauthenticated.
//   - v0 (KIP-43): the tokens that follow are bare size-prefixed frames, no
//     Kafka header; the loop reads them as SaslAuthenticate v0 and answers
//     them the same way. v1 (KIP-152): the tokens come in SaslAuthenticate.
//   - On a listener without SASL: ILLEGAL_SASL_STATE and an empty list, as
//     a Kafka broker answers on a PLAINTEXT listener.
//   - A handshake on an authenticated connection starts a re-authentication
//     (KIP-368); the mechanism may not change.
//   - Inline: no store call, no crypto.
//
// Version notes:
//   - v1 changes only what follows (SaslAuthenticate instead of bare
//     tokens). Never flexible.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 17, MinVersion: 0, MaxVersion: 1, Inline: true, Handle: typed(saslHandshake), LoginStep: true})
}

func saslHandshake(c *Call, req *kmsg.SASLHandshakeRequest, resp *kmsg.SASLHandshakeResponse) (kmsg.Response, error) {
	sc, s := c.G.Cfg.Sasl, c.Sasl
	if sc == nil || s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = sc.Mechanisms
	if !sc.Enabled(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, nil
	}
	if s.Authenticated() && s.mech != req.Mechanism {
		// KIP-368: a re-authentication keeps the mechanism.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	s.mech = req.Mechanism
	s.handshake = true
	s.scram = nil
	s.pending = nil
	s.raw.Store(req.Version == 0)
	return resp, nil
}
