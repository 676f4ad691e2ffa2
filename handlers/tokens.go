package handlers

// Delegation tokens (KIP-48, KIP-373; docs/SECURITY.md, "Delegation
// tokens"): what keys 38-41 and the SCRAM login with tokenauth=true share.
//
// A token's state (id, owner, requester, renewers, issue, expiry and max
// times) is a record in the security log beside ACLs and SCRAM
// credentials, replayed into the same immutable snapshot (authz.go), so it
// survives restarts and is shared by gateways on one Iggy. Its HMAC is
// never stored: it is HMAC-SHA512(secret, id), as Kafka computes it from
// delegation.token.secret.key, so every gateway with the same secret
// derives the same one. A client logs in with SCRAM as the token id with
// the base64 HMAC as the password (Kafka's ScramCredential of a token); the
// SCRAM credential is derived on a token's first login on a gateway and
// kept with the token in memory.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/scram"
)

// TokenConfig is Kafka's delegation.token.* settings.
type TokenConfig struct {
	// Secret is delegation.token.secret.key: the HMAC key of every token.
	// Empty: tokens are off, and keys 38-41 answer
	// DELEGATION_TOKEN_AUTH_DISABLED as a Kafka broker without the key.
	// Every gateway sharing one Iggy needs the same one.
	Secret []byte
	// MaxLifetime is delegation.token.max.lifetime.ms, the longest a token
	// lives however often it is renewed; default 7 days.
	MaxLifetime time.Duration
	// ExpiryTime is delegation.token.expiry.time.ms, how long a token
	// lives after its creation or a renewal; default 1 day.
	ExpiryTime time.Duration
	// CheckInterval is delegation.token.expiry.check.interval.ms, how often
	// expired tokens are purged; default 1 hour.
	CheckInterval time.Duration
}

// Defaults of Kafka's delegation.token.* settings.
const (
	DefaultTokenMaxLifetime   = 7 * 24 * time.Hour
	DefaultTokenExpiryTime    = 24 * time.Hour
	DefaultTokenCheckInterval = time.Hour
)

// WithDefaults is tc with Kafka's defaults for the durations left 0.
func (tc TokenConfig) WithDefaults() TokenConfig {
	out := tc
	if out.MaxLifetime <= 0 {
		out.MaxLifetime = DefaultTokenMaxLifetime
	}
	if out.ExpiryTime <= 0 {
		out.ExpiryTime = DefaultTokenExpiryTime
	}
	if out.CheckInterval <= 0 {
		out.CheckInterval = DefaultTokenCheckInterval
	}
	return out
}

// token is one live token of a snapshot. Shared by the snapshots that
// hold the same record; creds is filled on its first login per mechanism.
type token struct {
	bridge.TokenRecord
	hmac  []byte
	creds [3]atomic.Pointer[scram.Credential] // by scram.Mechanism
}

// expired is Kafka's test: past its max or its expiry time.
func (t *token) expired(nowMs int64) bool { return t.Max < nowMs || t.Expiry < nowMs }

// ownerOrRenewer is Kafka's TokenInformation.ownerOrRenewer: the owner,
// the requester or a renewer.
func (t *token) ownerOrRenewer(principal string) bool {
	return t.Requester == principal || t.mayRenew(principal)
}

// mayRenew is Kafka's allowedToRenew: the owner or a renewer (not the
// requester).
func (t *token) mayRenew(principal string) bool {
	return t.Owner == principal || slices.Contains(t.Renewers, principal)
}

// tokenHMAC is Kafka's token HMAC: HMAC-SHA512 keyed by the secret's
// bytes over the id's.
func tokenHMAC(secret []byte, id string) []byte {
	m := hmac.New(sha512.New, secret)
	m.Write([]byte(id))
	return m.Sum(nil)
}

// newTokenID is a random id in the form of Kafka's Uuid.toString
// (16 random bytes, URL-safe base64 without padding, never starting
// with '-').
func newTokenID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if s := base64.RawURLEncoding.EncodeToString(b[:]); s[0] != '-' {
			return s
		}
	}
}

// splitPrincipal splits "Type:name" as Kafka's KafkaPrincipal prints.
func splitPrincipal(p string) (kind, name string) {
	kind, name, _ = strings.Cut(p, ":")
	return kind, name
}

// applyToken applies one token record to the snapshot n being built.
func (n *secState) applyToken(secret []byte, r bridge.TokenRecord) {
	if old, ok := n.tokens[r.ID]; ok {
		delete(n.tokensByHMAC, string(old.hmac))
		delete(n.tokens, r.ID)
	}
	if r.Remove || len(secret) == 0 {
		return
	}
	t := &token{TokenRecord: r, hmac: tokenHMAC(secret, r.ID)}
	n.tokens[r.ID] = t
	n.tokensByHMAC[string(t.hmac)] = t
}

// tokensOn reports whether delegation tokens are configured.
func (s *Security) tokensOn() bool { return s != nil && len(s.tok.Secret) > 0 }

// tokenByHMAC is the live token of hmac in the current snapshot, or nil.
func (s *Security) tokenByHMAC(hmac []byte) *token {
	return s.state.Load().tokensByHMAC[string(hmac)]
}

// tokens calls fn with every token of the current snapshot.
func (s *Security) eachToken(fn func(*token)) {
	for _, t := range s.state.Load().tokens {
		fn(t)
	}
}

// tokenCredential is what a SCRAM login with tokenauth=true checks: the
// SCRAM credential of the token with that id (the base64 HMAC as the
// password, Kafka's minimum iterations), its owner (the principal the
// login becomes) and expiry. ok is false for an unknown or expired token
// or with tokens off. A worker: the first login of a token on this
// gateway costs one PBKDF2.
func (s *Security) tokenCredential(id string, mech scram.Mechanism) (cred scram.Credential, owner string, expiry int64, ok bool) {
	if !s.tokensOn() || mech >= 3 {
		return scram.Credential{}, "", 0, false
	}
	s.maybeRefresh()
	t := s.state.Load().tokens[id]
	if t == nil || t.expired(time.Now().UnixMilli()) {
		return scram.Credential{}, "", 0, false
	}
	if c := t.creds[mech].Load(); c != nil {
		return *c, t.Owner, t.Expiry, true
	}
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	c, err := scram.Derive(mech, base64.StdEncoding.EncodeToString(t.hmac), salt, scram.MinIterations)
	if err != nil {
		return scram.Credential{}, "", 0, false
	}
	if !t.creds[mech].CompareAndSwap(nil, &c) {
		c = *t.creds[mech].Load()
	}
	return c, t.Owner, t.Expiry, true
}

// writeToken appends one token record; the snapshot has it on return.
// The caller holds tokMu, so this gateway's read-check-write of a token
// is whole.
func (s *Security) writeToken(ctx context.Context, r bridge.TokenRecord) error {
	rec, err := bridge.AppendTokenRecord(nil, r)
	if err != nil {
		return err
	}
	return s.write(ctx, [][]byte{rec})
}

// maybeSweep starts one background purge of expired tokens when the last
// one is CheckInterval old, as Kafka's controller sweeps every
// delegation.token.expiry.check.interval.ms: each expired token gets a
// removal record (so restarts and other gateways drop it too). Never
// blocks; any goroutine.
func (s *Security) maybeSweep() {
	if !s.tokensOn() || s.store == nil || time.Since(time.Unix(0, s.lastSweep.Load())) < s.tok.CheckInterval {
		return
	}
	if !s.sweeping.CompareAndSwap(false, true) {
		return
	}
	s.lastSweep.Store(time.Now().UnixNano())
	go func() {
		defer s.sweeping.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.sweep(ctx); err != nil {
			s.log.Warn("expired delegation tokens not purged", "err", err)
		}
	}()
}

// sweep writes a removal record for every expired token. Waits for the
// store under ctx.
func (s *Security) sweep(ctx context.Context) error {
	now := time.Now().UnixMilli()
	var recs [][]byte
	s.eachToken(func(t *token) {
		if t.expired(now) {
			s.log.Info("delegation token expired", "token", t.ID, "owner", t.Owner)
			rec, err := bridge.AppendTokenRecord(nil, bridge.TokenRecord{ID: t.ID, Remove: true})
			if err == nil {
				recs = append(recs, rec)
			}
		}
	})
	if len(recs) == 0 {
		return nil
	}
	return s.write(ctx, recs)
}

// mayUseTokenKeys is Kafka's allowTokenRequests: not over a connection
// authenticated with a token, not over PLAINTEXT, not over SSL without a
// client certificate. Any goroutine.
func (c *Call) mayUseTokenKeys() bool {
	if c.Sasl != nil && c.Sasl.Authenticated() {
		return !c.Sasl.token
	}
	return c.TLSPrincipal != ""
}
