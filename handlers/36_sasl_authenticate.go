// SaslAuthenticate: v0-2
//
// Behavior:
//   - Carries the tokens of the mechanism chosen by SaslHandshake v1
//     (KIP-152); after a v0 handshake the loop feeds the bare tokens in here
//     as v0 requests and writes the answer bare (KIP-43).
//   - PLAIN: "authzid NUL user NUL password"; an authzid other than empty or
//     the user is refused. Checked against the users file (the password is
//     derived with the stored SCRAM salt and iterations and compared with the
//     stored key) or, on the Iggy backend, by logging in to Iggy as that user
//     (SaslConfig.Plain).
//   - SCRAM-SHA-256/512 (RFC 5802/7677, KIP-84): two round trips; no channel
//     binding. An unknown user gets a salt and iteration count derived from
//     a server secret, so the exchange runs to the proof check exactly as
//     for a wrong password.
//   - SCRAM with the extension tokenauth=true (KIP-48): the user name is a
//     delegation token's id and the password its base64 HMAC; the principal
//     is the token's owner, and the session ends at the token's expiry at
//     the latest (as Kafka bounds it). An unknown or expired token, or
//     tokens off, is a failed login like any other (Kafka gives an expired
//     token's session no lifetime).
//   - Every failure (unknown user, wrong password, bad proof or nonce,
//     malformed or oversized token) is SASL_AUTHENTICATION_FAILED with one
//     message, answered FailDelay after the attempt began (doubling per
//     recent failure from the same address, capped), without holding a
//     worker: the call parks. The connection is closed on its next request.
//     In bare-token framing there is no error field: the connection closes.
//   - v1+: session_lifetime_ms is --sasl-session-lifetime (KIP-368); after
//     it, the connection may only re-authenticate.
//   - Worker: PBKDF2 (PLAIN) and Iggy logins cost milliseconds.
//
// Version notes:
//   - v1 adds session_lifetime_ms (KIP-368); v2 is flexible.

package handlers

import (
	"bytes"
	"context"
	"crypto/rand"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/scram"
)

func init() {
	register(Spec{Key: 36, MinVersion: 0, MaxVersion: 2, Handle: typed(saslAuthenticate), LoginStep: true, BareToken: bareSaslToken, BareReply: bareSaslReply})
}

// saslFailMsg is the one message of every refused login.
const saslFailMsg = "Authentication failed: Invalid username or password"

func saslAuthenticate(c *Call, req *kmsg.SASLAuthenticateRequest, resp *kmsg.SASLAuthenticateResponse) (kmsg.Response, error) {
	sc, s := c.G.Cfg.Sasl, c.Sasl
	if sc == nil || s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = strp("SASL is not enabled on this listener")
		return resp, nil
	}
	sc.init()
	if f := s.pending; f != nil {
		// The re-run after the failure delay.
		s.pending = nil
		return s.refuse(resp, f.msg)
	}
	if !s.handshake {
		s.failedFlag.Store(true)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = strp("SaslAuthenticate before SaslHandshake")
		if s.raw.Load() {
			return nil, ErrSaslFailed
		}
		return resp, nil
	}
	now := time.Now()
	if s.scram == nil {
		s.start = now // the first token of an attempt
	}
	tok := req.SASLAuthBytes
	if len(tok) > sc.MaxAuthBytes {
		return s.fail(c, resp, "oversized token", nil)
	}
	switch s.mech {
	case MechPlain:
		return s.plain(c, resp, tok)
	case MechScramSHA256, MechScramSHA512:
		return s.scramStep(c, resp, tok)
	}
	return s.fail(c, resp, "no mechanism", nil)
}

func (s *SaslConn) plain(c *Call, resp *kmsg.SASLAuthenticateResponse, tok []byte) (kmsg.Response, error) {
	sc := c.G.Cfg.Sasl
	authzid, rest, ok1 := bytes.Cut(tok, []byte{0})
	user, pass, ok2 := bytes.Cut(rest, []byte{0})
	if !ok1 || !ok2 || len(user) == 0 || bytes.IndexByte(pass, 0) >= 0 {
		return s.fail(c, resp, "malformed PLAIN token", nil)
	}
	if len(authzid) > 0 && !bytes.Equal(authzid, user) {
		return s.fail(c, resp, "authzid differs from the user", user)
	}
	var ok bool
	if sc.Plain != nil {
		ctx, cancel := context.WithTimeout(c.Ctx, sc.PlainTimeout)
		var err error
		ok, err = sc.Plain(ctx, string(user), string(pass))
		cancel()
		if err != nil {
			// Not the client's fault: answered at once, not booked
			// against its address.
			c.G.Log.Warn("SASL PLAIN: cannot check the credential", "remote", c.ClientHost, "err", err)
			s.end()
			s.failedFlag.Store(true)
			if s.raw.Load() {
				return nil, ErrSaslFailed
			}
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = strp("Authentication failed: the credential store is unavailable, try again")
			return resp, nil
		}
	} else {
		ok = plainAgainstUsers(sc, string(user), string(pass))
	}
	if !ok {
		return s.fail(c, resp, "bad credentials", user)
	}
	return s.succeed(c, resp, string(user), nil)
}

// plainAgainstUsers checks a PLAIN password against the stored SCRAM
// credential (SHA-512 first), deriving it with the stored salt and
// iterations; an unknown user costs the same derivation on a fake one.
func plainAgainstUsers(sc *SaslConfig, user, pass string) bool {
	var cred scram.Credential
	found := false
	if sc.Users != nil {
		if cred, found = sc.Users.Lookup(user, scram.SHA512); !found {
			cred, found = sc.Users.Lookup(user, scram.SHA256)
		}
	}
	if !found {
		cred = scram.Fake(scram.SHA512, sc.Secret, user)
	}
	return cred.Verify(pass) && found
}

func (s *SaslConn) scramStep(c *Call, resp *kmsg.SASLAuthenticateResponse, tok []byte) (kmsg.Response, error) {
	sc := c.G.Cfg.Sasl
	mech, _ := scram.ParseMechanism(s.mech)
	if s.scram == nil {
		cf, err := scram.ParseClientFirst(tok)
		if err != nil {
			return s.fail(c, resp, err.Error(), nil)
		}
		var cred scram.Credential
		found := false
		s.tokenAuth, s.tokenExpiry = cf.TokenAuth, 0
		if cf.TokenAuth {
			var owner string
			cred, owner, s.tokenExpiry, found = c.G.Sec.tokenCredential(cf.User, mech)
			s.tokenOwner = owner
		} else if sc.Users != nil {
			cred, found = sc.Users.Lookup(cf.User, mech)
		}
		if !found {
			cred = scram.Fake(mech, sc.Secret, cf.User)
		}
		var nonce [24]byte
		_, _ = rand.Read(nonce[:])
		srv := scram.NewServer(mech)
		out, err := srv.First(cf, cred, nonce[:])
		if err != nil {
			return s.fail(c, resp, err.Error(), []byte(cf.User))
		}
		s.scram = srv
		resp.SASLAuthBytes = out
		return resp, nil
	}
	out, err := s.scram.Final(tok)
	if err != nil {
		return s.fail(c, resp, err.Error(), []byte(s.scram.User()))
	}
	if s.tokenAuth {
		if s.tokenExpiry < time.Now().UnixMilli() {
			return s.fail(c, resp, "delegation token expired", []byte(s.scram.User()))
		}
		// Kafka's principal of a token login is User: and the owner's name.
		_, owner := splitPrincipal(s.tokenOwner)
		return s.succeed(c, resp, owner, out)
	}
	return s.succeed(c, resp, s.scram.User(), out)
}

func (s *SaslConn) succeed(c *Call, resp *kmsg.SASLAuthenticateResponse, user string, out []byte) (kmsg.Response, error) {
	sc := c.G.Cfg.Sasl
	principal := "User:" + user
	if s.Authenticated() && principal != s.principal {
		// KIP-368: a re-authentication may not change the principal.
		return s.fail(c, resp, "re-authentication as another principal", []byte(user))
	}
	token, tokenExpiry := s.tokenAuth, s.tokenExpiry
	s.end()
	s.principal = principal
	s.token = token
	// Kafka's session lifetime: the configured one, cut at the expiry of
	// the token logged in with.
	now := time.Now()
	life := sc.SessionLifetime
	if token {
		if left := time.UnixMilli(tokenExpiry).Sub(now); life <= 0 || left < life {
			life = max(left, time.Millisecond)
		}
	}
	if life > 0 {
		s.expires.Store(now.Add(life).UnixNano())
		if resp.Version >= 1 {
			resp.SessionLifetimeMillis = life.Milliseconds()
		}
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	s.iggyUser.Store(s.mech == MechPlain && sc.Plain != nil && sc.Permissions != nil)
	s.authenticated.Store(true)
	s.raw.Store(false)
	c.G.Log.Debug("SASL login", "remote", c.ClientHost, "mechanism", s.mech, "principal", principal)
	return resp, nil
}

// end closes the exchange now running (success or failure).
func (s *SaslConn) end() {
	s.handshake = false
	s.scram = nil
	s.tokenAuth, s.tokenExpiry, s.tokenOwner = false, 0, ""
}

// fail books a failed login and parks the call until its answer is due
// (FailDelay after the attempt began, more after recent failures from the
// same address). why is logged, never sent; user may be nil.
func (s *SaslConn) fail(c *Call, resp *kmsg.SASLAuthenticateResponse, why string, user []byte) (kmsg.Response, error) {
	sc := c.G.Cfg.Sasl
	now := time.Now()
	delay := sc.failed(s.addr, now)
	if sc.logFail.allow(now) {
		c.G.Log.Info("SASL authentication failed", "remote", c.ClientHost, "mechanism", s.mech,
			"user", string(user), "reason", why, "answer_after", delay)
	}
	s.end()
	if until := s.start.Add(delay); until.After(now) {
		s.pending = &saslFailure{msg: saslFailMsg}
		c.Park(nil, until)
		return nil, nil
	}
	return s.refuse(resp, saslFailMsg)
}

// refuse answers a failed login and marks the connection for closing.
func (s *SaslConn) refuse(resp *kmsg.SASLAuthenticateResponse, msg string) (kmsg.Response, error) {
	s.end()
	s.failedFlag.Store(true)
	if s.raw.Load() {
		return nil, ErrSaslFailed
	}
	resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
	resp.ErrorMessage = strp(msg)
	return resp, nil
}
