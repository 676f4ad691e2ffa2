// CreateDelegationToken: v1-3
//
// Behavior:
//   - Kafka's checks, in its order: over a connection authenticated with a
//     delegation token, PLAINTEXT or SSL without a client certificate,
//     DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; a token for another owner
//     (v3, KIP-373) needs CREATE_TOKENS on that USER, else
//     DELEGATION_TOKEN_AUTHORIZATION_FAILED; a renewer whose principal
//     type is not User is INVALID_PRINCIPAL_TYPE; without
//     --delegation-token-secret-key, DELEGATION_TOKEN_AUTH_DISABLED.
//   - The token lives until now + min(max_lifetime_ms when > 0,
//     --delegation-token-max-lifetime-ms) and expires, unless renewed,
//     --delegation-token-expiry-time-ms after now (not past that). Its id
//     is a random Kafka Uuid string, its HMAC HMAC-SHA512(secret, id).
//   - Kept as a record in the store's security log (docs/SECURITY.md):
//     survives restarts, seen by gateways sharing one Iggy within about a
//     second. A store failure is REQUEST_TIMED_OUT/UNKNOWN_SERVER_ERROR.
//   - Worker: it writes to the store.
//
// Version notes:
//   - v0 was removed in Kafka 4.0 (KIP-896); v1 is v0; v2 is flexible;
//     v3 adds the owner to the request and the requester to the response
//     (KIP-373).

package handlers

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 38, MinVersion: 1, MaxVersion: 3, Handle: typed(createDelegationToken)})
}

func createDelegationToken(c *Call, req *kmsg.CreateDelegationTokenRequest, resp *kmsg.CreateDelegationTokenResponse) (kmsg.Response, error) {
	requester := c.Principal()
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		kind := "User"
		if req.OwnerPrincipalType != nil {
			kind = *req.OwnerPrincipalType
		}
		owner = kind + ":" + *req.OwnerPrincipalName
	}
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(requester)
	refuse := func(code int16) (kmsg.Response, error) {
		resp.ErrorCode = code
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = -1, -1, -1
		resp.HMAC = []byte{}
		return resp, nil
	}
	switch {
	case !c.mayUseTokenKeys():
		return refuse(kerr.DelegationTokenRequestNotAllowed.Code)
	case owner != requester && !c.Authorized(kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, owner):
		return refuse(kerr.DelegationTokenAuthorizationFailed.Code)
	}
	renewers := make([]string, 0, len(req.Renewers))
	for _, r := range req.Renewers {
		if r.PrincipalType != "User" {
			return refuse(kerr.InvalidPrincipalType.Code)
		}
		renewers = append(renewers, r.PrincipalType+":"+r.PrincipalName)
	}
	sec := c.G.Sec
	resp.HMAC = []byte{}
	if !sec.tokensOn() {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	}
	now := time.Now().UnixMilli()
	life := sec.tok.MaxLifetime.Milliseconds()
	if req.MaxLifetimeMillis > 0 {
		life = min(life, req.MaxLifetimeMillis)
	}
	maxTs := addMillis(now, life)
	rec := bridge.TokenRecord{ID: newTokenID(), Owner: owner, Requester: requester, Renewers: renewers,
		Issued: now, Max: maxTs, Expiry: min(maxTs, addMillis(now, sec.tok.ExpiryTime.Milliseconds()))}
	sec.tokMu.Lock()
	err := sec.writeToken(c.Ctx, rec)
	sec.tokMu.Unlock()
	if err != nil {
		resp.ErrorCode, _ = securityErr(err)
		return resp, nil
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = rec.Issued, rec.Expiry, rec.Max
	resp.TokenID = rec.ID
	resp.HMAC = tokenHMAC(sec.tok.Secret, rec.ID)
	return resp, nil
}

// addMillis is now + d without overflowing (Kafka's sum).
func addMillis(now, d int64) int64 {
	if now > 1<<63-1-d {
		return 1<<63 - 1
	}
	return now + d
}
