package handlers

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"net/netip"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/iggy-kafka/gateway/bridge"
)

const testTokenSecret = "token-secret-key"

// createTokenReq is a v3 CreateDelegationToken for owner ("" for the
// caller) with renewers ("Type:name").
func createTokenReq(owner string, renewers ...string) *kmsg.CreateDelegationTokenRequest {
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.Version, req.MaxLifetimeMillis = 3, -1
	if owner != "" {
		kind, name := splitPrincipal(owner)
		req.OwnerPrincipalType, req.OwnerPrincipalName = kmsg.StringPtr(kind), kmsg.StringPtr(name)
	}
	for _, r := range renewers {
		rr := kmsg.NewCreateDelegationTokenRequestRenewer()
		rr.PrincipalType, rr.PrincipalName = splitPrincipal(r)
		req.Renewers = append(req.Renewers, rr)
	}
	return req
}

// describeTokensReq is a v3 DescribeDelegationToken of owners (none:
// null, every token).
func describeTokensReq(owners ...string) *kmsg.DescribeDelegationTokenRequest {
	req := kmsg.NewPtrDescribeDelegationTokenRequest()
	req.Version = 3
	for _, o := range owners {
		ro := kmsg.NewDescribeDelegationTokenRequestOwner()
		ro.PrincipalType, ro.PrincipalName = splitPrincipal(o)
		req.Owners = append(req.Owners, ro)
	}
	return req
}

func renewTokenReq(h []byte, period int64) *kmsg.RenewDelegationTokenRequest {
	req := kmsg.NewPtrRenewDelegationTokenRequest()
	req.Version, req.HMAC, req.RenewTimeMillis = 2, h, period
	return req
}

func expireTokenReq(h []byte, period int64) *kmsg.ExpireDelegationTokenRequest {
	req := kmsg.NewPtrExpireDelegationTokenRequest()
	req.Version, req.HMAC, req.ExpiryPeriodMillis = 2, h, period
	return req
}

func withTokens(c *Config) { c.Tokens.Secret = []byte(testTokenSecret) }

// tokensDescribed lists the ids (owner/id) a principal's describe returns.
func tokensDescribed(t *testing.T, g *Gateway, principal string, req *kmsg.DescribeDelegationTokenRequest) []string {
	t.Helper()
	r := doAs(t, g, principal, req).(*kmsg.DescribeDelegationTokenResponse)
	if r.ErrorCode != 0 {
		t.Fatalf("describe as %s: %v", principal, kerr.ErrorForCode(r.ErrorCode))
	}
	var out []string
	for _, d := range r.TokenDetails {
		out = append(out, d.PrincipalName+"/"+d.TokenID)
	}
	return out
}

// Tokens off (no secret), and the connections Kafka refuses token
// requests on (PLAINTEXT, SSL without a certificate, a token login).
func TestDelegationTokensRefused(t *testing.T) {
	t.Parallel()
	off := newGateway(t)
	if r := doAs(t, off, "User:alice", createTokenReq("")).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code ||
		r.PrincipalName != "alice" || r.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("create without a secret: %+v", r)
	}
	if r := doAs(t, off, "User:alice", renewTokenReq([]byte("x"), 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("renew without a secret: %+v", r)
	}
	if r := doAs(t, off, "User:alice", expireTokenReq([]byte("x"), 0)).(*kmsg.ExpireDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("expire without a secret: %+v", r)
	}
	if r := doAs(t, off, "User:alice", describeTokensReq()).(*kmsg.DescribeDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("describe without a secret: %+v", r)
	}

	g := newGateway(t, withTokens)
	plain := func(req kmsg.Request) kmsg.Response { // PLAINTEXT, or SSL without a client certificate
		return roundTrip(t, newCall(g, req.Key(), req.GetVersion()), req)
	}
	if r := plain(createTokenReq("")).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code ||
		r.IssueTimestamp != -1 || r.MaxTimestamp != -1 || r.PrincipalName != "ANONYMOUS" {
		t.Fatalf("create over PLAINTEXT: %+v", r)
	}
	if r := plain(renewTokenReq([]byte("x"), 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || r.ExpiryTimestamp != -1 {
		t.Fatalf("renew over PLAINTEXT: %+v", r)
	}
	if r := plain(expireTokenReq([]byte("x"), 0)).(*kmsg.ExpireDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || r.ExpiryTimestamp != -1 {
		t.Fatalf("expire over PLAINTEXT: %+v", r)
	}
	if r := plain(describeTokensReq()).(*kmsg.DescribeDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("describe over PLAINTEXT: %+v", r)
	}
	// An mTLS principal may.
	c := newCall(g, 38, 3)
	c.TLSPrincipal = "CN=app"
	if r := roundTrip(t, c, createTokenReq("")).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != 0 || r.PrincipalName != "CN=app" {
		t.Fatalf("create over mTLS: %+v", r)
	}
	// A connection logged in with a token may not.
	c = asUser(newCall(g, 38, 3), "User:alice")
	c.Sasl.token = true
	if r := roundTrip(t, c, createTokenReq("")).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over a token login: %+v", r)
	}
	// A renewer that is not a User.
	if r := doAs(t, g, "User:alice", createTokenReq("", "Group:g")).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.InvalidPrincipalType.Code {
		t.Fatalf("create with a Group renewer: %+v", r)
	}
}

// Create, renew, expire and describe as Kafka's controller computes them,
// kept in the security log across a restart.
func TestDelegationTokenLifecycle(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withTokens, withAuthz)
	before := time.Now().UnixMilli()
	cr := doAs(t, g, "User:alice", createTokenReq("", "User:carol")).(*kmsg.CreateDelegationTokenResponse)
	if cr.ErrorCode != 0 || cr.PrincipalType != "User" || cr.PrincipalName != "alice" || cr.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("create: %+v", cr)
	}
	m := hmac.New(sha512.New, []byte(testTokenSecret))
	m.Write([]byte(cr.TokenID))
	if !bytes.Equal(cr.HMAC, m.Sum(nil)) || len(cr.TokenID) != 22 {
		t.Fatalf("token %q hmac %x: want HMAC-SHA512(secret, id)", cr.TokenID, cr.HMAC)
	}
	if cr.IssueTimestamp < before || cr.ExpiryTimestamp != cr.IssueTimestamp+DefaultTokenExpiryTime.Milliseconds() ||
		cr.MaxTimestamp != cr.IssueTimestamp+DefaultTokenMaxLifetime.Milliseconds() {
		t.Fatalf("times: %+v", cr)
	}
	// A shorter max lifetime cuts both.
	short := createTokenReq("")
	short.MaxLifetimeMillis = 60000
	sr := doAs(t, g, "User:bob", short).(*kmsg.CreateDelegationTokenResponse)
	if sr.ErrorCode != 0 || sr.MaxTimestamp != sr.IssueTimestamp+60000 || sr.ExpiryTimestamp != sr.MaxTimestamp {
		t.Fatalf("create with max_lifetime_ms 60000: %+v", sr)
	}

	// Renew: the owner and the renewers only; never past the max.
	if r := doAs(t, g, "User:bob", renewTokenReq(cr.HMAC, 1000)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("renew by bob: %+v", r)
	}
	r := doAs(t, g, "User:carol", renewTokenReq(cr.HMAC, 1000)).(*kmsg.RenewDelegationTokenResponse)
	if r.ErrorCode != 0 || r.ExpiryTimestamp < before+1000 || r.ExpiryTimestamp > time.Now().UnixMilli()+1000 {
		t.Fatalf("renew by the renewer: %+v", r)
	}
	if r := doAs(t, g, "User:bob", renewTokenReq(sr.HMAC, 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != 0 || r.ExpiryTimestamp != sr.MaxTimestamp {
		t.Fatalf("renew past the max: %+v, want %d", r, sr.MaxTimestamp)
	}
	if r := doAs(t, g, "User:alice", renewTokenReq([]byte("no such hmac"), 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renew of an unknown hmac: %+v", r)
	}

	// Describe: own tokens (owner, requester, renewer), others by ACL.
	aliceTok, bobTok := "alice/"+cr.TokenID, "bob/"+sr.TokenID
	if got := tokensDescribed(t, g, "User:alice", describeTokensReq()); len(got) != 1 || got[0] != aliceTok {
		t.Fatalf("alice describes %v", got)
	}
	if got := tokensDescribed(t, g, "User:carol", describeTokensReq()); len(got) != 1 || got[0] != aliceTok {
		t.Fatalf("carol (a renewer) describes %v", got)
	}
	if got := tokensDescribed(t, g, "User:dave", describeTokensReq()); len(got) != 0 {
		t.Fatalf("dave describes %v", got)
	}
	if got := tokensDescribed(t, g, "User:admin", describeTokensReq()); len(got) != 2 {
		t.Fatalf("admin (super user) describes %v", got)
	}
	if got := tokensDescribed(t, g, "User:admin", describeTokensReq("User:carol")); len(got) != 1 || got[0] != aliceTok {
		t.Fatalf("admin describes carol's %v", got)
	}
	empty := describeTokensReq()
	empty.Owners = []kmsg.DescribeDelegationTokenRequestOwner{}
	if got := tokensDescribed(t, g, "User:admin", empty); len(got) != 0 {
		t.Fatalf("empty owners: %v", got)
	}
	grant(t, g, acl(int8(kmsg.ACLResourceTypeUser), ptLit, "User:bob", "User:dave", "*", int8(kmsg.ACLOperationDescribeTokens), allow))
	if got := tokensDescribed(t, g, "User:dave", describeTokensReq()); len(got) != 1 || got[0] != bobTok {
		t.Fatalf("dave with DESCRIBE_TOKENS on User:bob describes %v", got)
	}
	grant(t, g, acl(int8(kmsg.ACLResourceTypeDelegationToken), ptLit, cr.TokenID, "User:erin", "*", opDesc, allow))
	if got := tokensDescribed(t, g, "User:erin", describeTokensReq()); len(got) != 1 || got[0] != aliceTok {
		t.Fatalf("erin with DESCRIBE on the token describes %v", got)
	}
	if dr := doAs(t, g, "User:alice", describeTokensReq()).(*kmsg.DescribeDelegationTokenResponse); len(dr.TokenDetails) != 1 ||
		!bytes.Equal(dr.TokenDetails[0].HMAC, cr.HMAC) || len(dr.TokenDetails[0].Renewers) != 1 ||
		dr.TokenDetails[0].Renewers[0].PrincipalName != "carol" || dr.TokenDetails[0].ExpiryTimestamp != r.ExpiryTimestamp {
		t.Fatalf("describe detail: %+v", dr.TokenDetails)
	}

	// A token for another owner (KIP-373) needs CREATE_TOKENS on its USER.
	if r := doAs(t, g, "User:frank", createTokenReq("User:alice")).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenAuthorizationFailed.Code ||
		r.PrincipalName != "alice" || r.TokenRequesterPrincipalName != "frank" {
		t.Fatalf("frank creates for alice: %+v", r)
	}
	grant(t, g, acl(int8(kmsg.ACLResourceTypeUser), ptLit, "User:alice", "User:frank", "*", int8(kmsg.ACLOperationCreateTokens), allow))
	fr := doAs(t, g, "User:frank", createTokenReq("User:alice")).(*kmsg.CreateDelegationTokenResponse)
	if fr.ErrorCode != 0 || fr.PrincipalName != "alice" || fr.TokenRequesterPrincipalName != "frank" {
		t.Fatalf("frank with CREATE_TOKENS creates for alice: %+v", fr)
	}
	// The requester describes it but may not renew it.
	if got := tokensDescribed(t, g, "User:frank", describeTokensReq()); len(got) != 1 || got[0] != "alice/"+fr.TokenID {
		t.Fatalf("frank describes %v", got)
	}
	if r := doAs(t, g, "User:frank", renewTokenReq(fr.HMAC, 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("renew by the requester: %+v", r)
	}

	// Restart: a new Security over the same store has the tokens.
	s2 := newSecurity(g.Cfg, g.Store, g.Log)
	if t2 := s2.tokenByHMAC(cr.HMAC); t2 == nil || t2.Expiry != r.ExpiryTimestamp || t2.Owner != "User:alice" {
		t.Fatalf("after restart: %+v", t2)
	}

	// Expire: owner or renewer; a negative period removes it at once.
	if r := doAs(t, g, "User:dave", expireTokenReq(cr.HMAC, -1)).(*kmsg.ExpireDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("expire by dave: %+v", r)
	}
	er := doAs(t, g, "User:alice", expireTokenReq(cr.HMAC, 5000)).(*kmsg.ExpireDelegationTokenResponse)
	if er.ErrorCode != 0 || er.ExpiryTimestamp > time.Now().UnixMilli()+5000 {
		t.Fatalf("expire in 5 s: %+v", er)
	}
	if er := doAs(t, g, "User:alice", expireTokenReq(cr.HMAC, -1)).(*kmsg.ExpireDelegationTokenResponse); er.ErrorCode != 0 {
		t.Fatalf("expire now: %+v", er)
	}
	if r := doAs(t, g, "User:alice", renewTokenReq(cr.HMAC, 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renew after expire: %+v", r)
	}
	if s3 := newSecurity(g.Cfg, g.Store, g.Log); s3.tokenByHMAC(cr.HMAC) != nil {
		t.Fatal("an expired token is back after a restart")
	}
}

// A token past its expiry is DELEGATION_TOKEN_EXPIRED (renew, expire with
// a period) until the purge removes it; then it is not found.
func TestDelegationTokenExpiredAndPurged(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withTokens)
	now := time.Now().UnixMilli()
	rec := bridge.TokenRecord{ID: "expired-token-id", Owner: "User:alice", Requester: "User:alice", Issued: now - 2000, Max: now + 60000, Expiry: now - 1000}
	if err := g.Sec.writeToken(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	h := tokenHMAC([]byte(testTokenSecret), rec.ID)
	if r := doAs(t, g, "User:alice", renewTokenReq(h, 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenExpired.Code {
		t.Fatalf("renew of an expired token: %+v", r)
	}
	if r := doAs(t, g, "User:bob", renewTokenReq(h, 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenExpired.Code {
		t.Fatalf("renew of an expired token by another: %+v (Kafka checks the expiry first)", r)
	}
	if r := doAs(t, g, "User:alice", expireTokenReq(h, 1000)).(*kmsg.ExpireDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenExpired.Code {
		t.Fatalf("expire of an expired token: %+v", r)
	}
	if got := tokensDescribed(t, g, "User:alice", describeTokensReq()); len(got) != 1 {
		t.Fatalf("before the purge: %v", got)
	}
	if _, _, _, ok := g.Sec.tokenCredential(rec.ID, 1); ok {
		t.Fatal("an expired token has a login credential")
	}
	if err := g.Sec.sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := tokensDescribed(t, g, "User:alice", describeTokensReq()); len(got) != 0 {
		t.Fatalf("after the purge: %v", got)
	}
	if r := doAs(t, g, "User:alice", renewTokenReq(h, 0)).(*kmsg.RenewDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renew after the purge: %+v", r)
	}
}

// scramTokenLogin runs a SCRAM-SHA-256 exchange with tokenauth=true as
// franz-go's client does, returning the last answer.
func scramTokenLogin(t *testing.T, g *Gateway, s *SaslConn, id, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if r := handshake(t, g, s, MechScramSHA256, 1); r.ErrorCode != 0 {
		t.Fatalf("handshake: %+v", r)
	}
	sess, first, err := kscram.Auth{User: id, Pass: pass, IsToken: true}.AsSha256Mechanism().Authenticate(context.Background(), "gw")
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := authenticate(t, g, s, first, 1)
	if err != nil || resp.ErrorCode != 0 {
		return resp
	}
	_, final, err := sess.Challenge(resp.SASLAuthBytes)
	if err != nil {
		t.Fatal(err)
	}
	resp, _, _ = authenticate(t, g, s, final, 1)
	return resp
}

// A SCRAM login with a token's id and base64 HMAC is the token's owner,
// marked as a token login; its session ends at the token's expiry.
func TestDelegationTokenLogin(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withTokens, func(c *Config) {
		c.Sasl = &SaslConfig{Mechanisms: []string{MechScramSHA256}, FailDelay: 10 * time.Second, MaxFailDelay: 20 * time.Second}
	})
	cr := doAs(t, g, "User:alice", createTokenReq("")).(*kmsg.CreateDelegationTokenResponse)
	if cr.ErrorCode != 0 {
		t.Fatal(cr)
	}
	pass := base64.StdEncoding.EncodeToString(cr.HMAC)
	s := NewSaslConn(netip.MustParseAddr("127.0.0.1"))
	if r := scramTokenLogin(t, g, s, cr.TokenID, pass); r.ErrorCode != 0 {
		t.Fatalf("token login: %+v", r)
	}
	if !s.Authenticated() || s.Principal() != "User:alice" || !s.token {
		t.Fatalf("principal %q token %v", s.Principal(), s.token)
	}
	if e := s.expires.Load(); e == 0 || e > time.UnixMilli(cr.ExpiryTimestamp).UnixNano() {
		t.Fatalf("session ends %d, token expires %d", e, cr.ExpiryTimestamp)
	}
	// Over that connection the token keys are refused.
	c := saslCall(g, s, 38, 3)
	if r := roundTrip(t, c, createTokenReq("")).(*kmsg.CreateDelegationTokenResponse); r.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over a token login: %+v", r)
	}
	// A wrong HMAC, an unknown id, and the id as a user without
	// tokenauth all fail.
	for _, tc := range []struct{ id, pass string }{{cr.TokenID, pass + "x"}, {"no-such-token", pass}} {
		s := NewSaslConn(netip.MustParseAddr("127.0.0.2"))
		if r := scramTokenLogin(t, g, s, tc.id, tc.pass); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || s.Authenticated() {
			t.Fatalf("login %s: %+v", tc.id, r)
		}
	}
	// Expired now: refused.
	if er := doAs(t, g, "User:alice", expireTokenReq(cr.HMAC, 0)).(*kmsg.ExpireDelegationTokenResponse); er.ErrorCode != 0 {
		t.Fatal(er)
	}
	s = NewSaslConn(netip.MustParseAddr("127.0.0.3"))
	if r := scramTokenLogin(t, g, s, cr.TokenID, pass); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || s.Authenticated() {
		t.Fatalf("login with an expired token: %+v", r)
	}
}

// ACLs on USER and DELEGATION_TOKEN resources can be created (the token
// keys' checks name them).
func TestTokenACLResources(t *testing.T) {
	t.Parallel()
	g := newGateway(t, withAuthz)
	grant(t, g,
		acl(int8(kmsg.ACLResourceTypeUser), ptLit, "User:alice", "User:bob", "*", int8(kmsg.ACLOperationCreateTokens), allow),
		acl(int8(kmsg.ACLResourceTypeDelegationToken), ptLit, "tok", "User:bob", "*", opDesc, allow))
	if !g.Sec.Authorized("User:bob", "1.2.3.4", kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, "User:alice") ||
		g.Sec.Authorized("User:bob", "1.2.3.4", kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, "User:carol") {
		t.Fatal("USER resource ACL not applied")
	}
}
