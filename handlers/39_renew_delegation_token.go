// RenewDelegationToken: v1-2
//
// Behavior:
//   - Kafka's checks, in its order: over a connection authenticated with a
//     delegation token, PLAINTEXT or SSL without a client certificate,
//     DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry -1); without
//     --delegation-token-secret-key DELEGATION_TOKEN_AUTH_DISABLED; no live
//     token of that HMAC DELEGATION_TOKEN_NOT_FOUND; past its expiry or max
//     time DELEGATION_TOKEN_EXPIRED; a principal neither the owner nor a
//     renewer DELEGATION_TOKEN_OWNER_MISMATCH.
//   - The new expiry is now + min(renew_period_ms when > 0,
//     --delegation-token-expiry-time-ms), never past the token's max time;
//     kept in the security log as the token's new state.
//   - Worker: it writes to the store.
//
// Version notes:
//   - v0 was removed in Kafka 4.0 (KIP-896); v1 is v0; v2 is flexible.

package handlers

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 39, MinVersion: 1, MaxVersion: 2, Handle: typed(renewDelegationToken)})
}

func renewDelegationToken(c *Call, req *kmsg.RenewDelegationTokenRequest, resp *kmsg.RenewDelegationTokenResponse) (kmsg.Response, error) {
	resp.ErrorCode, resp.ExpiryTimestamp = changeToken(c, req.HMAC, func(t *token, now int64) (int64, bool, int16) {
		switch {
		case t.expired(now):
			return 0, false, kerr.DelegationTokenExpired.Code
		case !t.mayRenew(c.Principal()):
			return 0, false, kerr.DelegationTokenOwnerMismatch.Code
		}
		life := c.G.Sec.tok.ExpiryTime.Milliseconds()
		if req.RenewTimeMillis > 0 {
			life = min(life, req.RenewTimeMillis)
		}
		return min(t.Max, addMillis(now, life)), false, 0
	})
	return resp, nil
}

// changeToken is what renew and expire share: Kafka's checks up to
// finding the token, then change (under the token lock) says the new
// expiry, whether the token goes, or a code; the new state is written
// before it returns.
// Any error after the not-allowed one answers an expiry of 0, as Kafka's
// controller leaves it.
func changeToken(c *Call, hmac []byte, change func(t *token, now int64) (expiry int64, remove bool, code int16)) (int16, int64) {
	if !c.mayUseTokenKeys() {
		return kerr.DelegationTokenRequestNotAllowed.Code, -1
	}
	sec := c.G.Sec
	if !sec.tokensOn() {
		return kerr.DelegationTokenAuthDisabled.Code, 0
	}
	sec.tokMu.Lock()
	defer sec.tokMu.Unlock()
	t := sec.tokenByHMAC(hmac)
	if t == nil {
		return kerr.DelegationTokenNotFound.Code, 0
	}
	expiry, remove, code := change(t, time.Now().UnixMilli())
	if code != 0 {
		return code, 0
	}
	rec := t.TokenRecord
	rec.Expiry, rec.Remove = expiry, remove
	if err := sec.writeToken(c.Ctx, rec); err != nil {
		code, _ := securityErr(err)
		return code, 0
	}
	return 0, expiry
}
