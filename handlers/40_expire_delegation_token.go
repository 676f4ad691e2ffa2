// ExpireDelegationToken: v1-2
//
// Behavior:
//   - Kafka's checks, in its order: over a connection authenticated with a
//     delegation token, PLAINTEXT or SSL without a client certificate,
//     DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry -1); without
//     --delegation-token-secret-key DELEGATION_TOKEN_AUTH_DISABLED; no live
//     token of that HMAC DELEGATION_TOKEN_NOT_FOUND; a principal neither
//     the owner nor a renewer DELEGATION_TOKEN_OWNER_MISMATCH.
//   - A negative expiry_time_period_ms removes the token now (the answer's
//     expiry is now), expired or not; otherwise an expired token is
//     DELEGATION_TOKEN_EXPIRED and the new expiry is now + the period,
//     never past the token's max time.
//   - Worker: it writes to the store.
//
// Version notes:
//   - v0 was removed in Kafka 4.0 (KIP-896); v1 is v0; v2 is flexible.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 40, MinVersion: 1, MaxVersion: 2, Handle: typed(expireDelegationToken)})
}

func expireDelegationToken(c *Call, req *kmsg.ExpireDelegationTokenRequest, resp *kmsg.ExpireDelegationTokenResponse) (kmsg.Response, error) {
	resp.ErrorCode, resp.ExpiryTimestamp = changeToken(c, req.HMAC, func(t *token, now int64) (int64, bool, int16) {
		switch {
		case !t.mayRenew(c.Principal()):
			return 0, false, kerr.DelegationTokenOwnerMismatch.Code
		case req.ExpiryPeriodMillis < 0:
			return now, true, 0
		case t.expired(now):
			return 0, false, kerr.DelegationTokenExpired.Code
		}
		return min(t.Max, addMillis(now, req.ExpiryPeriodMillis)), false, 0
	})
	return resp, nil
}
