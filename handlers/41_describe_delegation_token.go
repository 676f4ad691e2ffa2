// DescribeDelegationToken: v1-3
//
// Behavior:
//   - Over a connection authenticated with a delegation token, PLAINTEXT or
//     SSL without a client certificate: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
//     without --delegation-token-secret-key: DELEGATION_TOKEN_AUTH_DISABLED.
//   - Owners null: every token; empty: none; else the tokens one of them
//     owns, requested or may renew. Of those, Kafka's filter: a token the
//     caller owns, requested or may renew is listed; another only with
//     DESCRIBE on its DELEGATION_TOKEN (the token id) or DESCRIBE_TOKENS on
//     its owner's USER (with authorization off: every token). Tokens expired
//     but not yet purged (--delegation-token-expiry-check-interval-ms) are
//     listed, as on Kafka. Sorted by issue time, then id.
//   - Any goroutine; runs on a worker (it may re-read the security log).
//
// Version notes:
//   - v0 was removed in Kafka 4.0 (KIP-896); v1 is v0; v2 is flexible;
//     v3 adds each token's requester (KIP-373).

package handlers

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 41, MinVersion: 1, MaxVersion: 3, Handle: typed(describeDelegationToken)})
}

func describeDelegationToken(c *Call, req *kmsg.DescribeDelegationTokenRequest, resp *kmsg.DescribeDelegationTokenResponse) (kmsg.Response, error) {
	resp.TokenDetails = []kmsg.DescribeDelegationTokenResponseTokenDetail{}
	sec := c.G.Sec
	switch {
	case !c.mayUseTokenKeys():
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case !sec.tokensOn():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case req.Owners != nil && len(req.Owners) == 0:
		return resp, nil
	}
	sec.maybeRefresh()
	me := c.Principal()
	var list []*token
	sec.eachToken(func(t *token) {
		if req.Owners != nil && !slices.ContainsFunc(req.Owners, func(o kmsg.DescribeDelegationTokenRequestOwner) bool {
			return t.ownerOrRenewer(o.PrincipalType + ":" + o.PrincipalName)
		}) {
			return
		}
		if t.ownerOrRenewer(me) ||
			c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeDelegationToken, t.ID) ||
			c.Authorized(kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, t.Owner) {
			list = append(list, t)
		}
	})
	slices.SortFunc(list, func(a, b *token) int {
		return cmp.Or(cmp.Compare(a.Issued, b.Issued), cmp.Compare(a.ID, b.ID))
	})
	for _, t := range list {
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = splitPrincipal(t.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.Issued, t.Expiry, t.Max
		d.TokenID, d.HMAC = t.ID, t.hmac
		d.Renewers = make([]kmsg.DescribeDelegationTokenResponseTokenDetailRenewer, 0, len(t.Renewers))
		for _, r := range t.Renewers {
			rr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			rr.PrincipalType, rr.PrincipalName = splitPrincipal(r)
			d.Renewers = append(d.Renewers, rr)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}
