package e2e

// Delegation tokens (KIP-48; docs/SECURITY.md, "Delegation tokens") end to
// end: Kafka's kafka-delegation-tokens tool (DelegationTokenCommand)
// creates, describes, renews and expires a token over SASL_PLAINTEXT
// SCRAM; franz-go and the Java console clients log in with it (SCRAM,
// tokenauth=true) as the token's owner, whose ACLs then apply; a token
// login may not create tokens; an expired token is refused. Tokens are
// kept in the security log: they survive a restart of the gateway binary
// and, on Iggy, are shared by gateways on one server.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/loop"
)

const (
	tokenToolClass = "org.apache.kafka.tools.DelegationTokenCommand"
	e2eTokenSecret = "e2e-delegation-token-secret"
)

// withTokenSecret turns delegation tokens on.
func withTokenSecret() gwOption {
	return func(h *handlers.Config, _ *loop.Config) { h.Tokens.Secret = []byte(e2eTokenSecret) }
}

// tokenAuth is a franz-go SCRAM-SHA-512 login with a delegation token.
func tokenAuth(id string, hmac []byte) kgo.Opt {
	return kgo.SASL(scram.Auth{User: id, Pass: base64.StdEncoding.EncodeToString(hmac), IsToken: true}.AsSha512Mechanism())
}

// tokenLoginErr pings with a fresh client logging in with the token.
func tokenLoginErr(t *testing.T, addr, id string, hmac []byte) error {
	t.Helper()
	cl := newClient(t, addr, tokenAuth(id, hmac), kgo.RequestRetries(0))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// tokenRow finds the token row DelegationTokenCommand prints (TOKENID
// HMAC OWNER REQUESTER RENEWERS ...) and returns its id and base64 HMAC.
func tokenRow(out string) (id, hmac string, fields []string) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 7 && f[0] != "TOKENID" && strings.HasPrefix(f[2], "User:") {
			return f[0], f[1], f
		}
	}
	return "", "", nil
}

func TestDelegationTokensJavaTools(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t, withACLs(t), withTokenSecret(), withAutoCreate(false))
	admin := clientWithTopic(t, gw.Addr, "dt-a", 1, kgo.SASL(kgoMech(handlers.MechScramSHA512, "admin", aclAdminPass)))
	createTopic(t, admin, "dt-b", 1)
	createTopic(t, admin, "dt-j", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// alice may write and read dt-a and dt-j (and join any group), nothing
	// else.
	res, err := kadm.NewClient(admin).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("dt-a", "dt-j").Groups("*").
		Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatalf("CreateACLs: %v", err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateACLs: %+v", r)
		}
	}
	aliceProps := javaSaslProps(t, "alice", aclAlicePass)
	tokens := func(props string, args ...string) string {
		t.Helper()
		out, _ := kafkaTool(t, gw.Addr, tokenToolClass, append([]string{"--command-config", props}, args...)...)
		return out
	}

	// kafka-delegation-tokens --create as alice, admin a renewer.
	out := tokens(aliceProps, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:admin")
	id, hmac64, row := tokenRow(out)
	if id == "" || row[2] != "User:alice" || row[3] != "User:alice" || !strings.Contains(row[4], "User:admin") {
		t.Fatalf("--create printed:\n%s", out)
	}
	hmac, err := base64.StdEncoding.DecodeString(hmac64)
	if err != nil {
		t.Fatalf("HMAC %q: %v", hmac64, err)
	}
	// --describe --owner-principal: alice (owner) and admin (renewer, super
	// user) see it. Without --owner-principal the 4.x tool sends an empty
	// owner list, which Kafka answers with no tokens; so does the gateway.
	for _, props := range []string{aliceProps, javaSaslProps(t, "admin", aclAdminPass)} {
		if out := tokens(props, "--describe", "--owner-principal", "User:alice"); !strings.Contains(out, id) || !strings.Contains(out, "Total number of tokens : 1") {
			t.Fatalf("--describe printed:\n%s", out)
		}
	}
	if out := tokens(aliceProps, "--describe"); !strings.Contains(out, "Total number of tokens : 0") {
		t.Fatalf("--describe without owners printed:\n%s", out)
	}
	// --renew as the renewer.
	if out := tokens(javaSaslProps(t, "admin", aclAdminPass), "--renew", "--hmac", hmac64, "--renew-time-period", "-1"); !strings.Contains(out, "Completed renew operation") {
		t.Fatalf("--renew printed:\n%s", out)
	}

	// franz-go with the token is alice: it writes and reads dt-a, not dt-b.
	tok := tokenAuth(id, hmac)
	tcl := newClient(t, gw.Addr, tok, kgo.RecordRetries(2))
	want := produceAll(t, tcl, testRecords("dt-a", 5))
	sameRecs(t, want, consumeN(t, gw.Addr, "dt-a", 5, consumeWith(tok)))
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	if err := tcl.ProduceSync(pctx, &kgo.Record{Topic: "dt-b", Value: []byte("v")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("token produce to dt-b: %v, want TOPIC_AUTHORIZATION_FAILED (alice's ACLs)", err)
	}
	// A token login may not create tokens.
	if _, err := kadm.NewClient(tcl).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Fatalf("create over a token login: %v", err)
	}

	// The Java console producer and consumer with the token (JAAS
	// tokenauth="true").
	javaConsoleRoundTrip(t, gw.Addr, "dt-j", "token",
		"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
			fmt.Sprintf("sasl.jaas.config=%s required username=\"%s\" password=\"%s\" tokenauth=\"true\";\n", scramLogin, id, hmac64))

	// --expire now: the token is gone and its login refused.
	if out := tokens(aliceProps, "--expire", "--hmac", hmac64, "--expiry-time-period", "-1"); !strings.Contains(out, "Completed expire operation") {
		t.Fatalf("--expire printed:\n%s", out)
	}
	if out := tokens(aliceProps, "--describe", "--owner-principal", "User:alice"); strings.Contains(out, id) {
		t.Fatalf("--describe after --expire:\n%s", out)
	}
	if err := tokenLoginErr(t, gw.Addr, id, hmac); err == nil {
		t.Fatal("login with an expired token succeeded")
	}
}

// The gateway binary with --delegation-token-secret-key-file: a token
// survives a restart; one past its max lifetime is refused; without the
// secret the keys answer DELEGATION_TOKEN_AUTH_DISABLED.
func TestDelegationTokenBinaryRestart(t *testing.T) {
	t.Parallel()
	bin := gatewayBinary(t)
	users := filepath.Join(t.TempDir(), "users")
	if out, errOut, err := runCmd(t, 30*time.Second, aclAlicePass+"\n", bin, "sasl-user", "add", "--file", users, "alice"); err != nil {
		t.Fatalf("sasl-user add: %v\n%s%s", err, out, errOut)
	}
	secret := filepath.Join(t.TempDir(), "token-secret")
	writeFile(t, secret, e2eTokenSecret+"\n")
	dir := t.TempDir()
	args := []string{"--sasl-mechanisms=SCRAM-SHA-512", "--sasl-users-file=" + users,
		"--delegation-token-secret-key-file=" + secret}
	gw := spawnGateway(t, dir, args...)
	if !strings.Contains(gw.Log(), "delegation tokens on") {
		t.Errorf("the startup log does not say delegation tokens are on:\n%s", tail(gw.Log(), 20))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := kadm.NewClient(newClient(t, gw.Addr, kgo.SASL(kgoMech(handlers.MechScramSHA512, "alice", aclAlicePass))))
	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil {
		t.Fatalf("CreateDelegationToken: %v", err)
	}
	// One that lives 1 ms: expired by the time anyone uses it.
	short, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{MaxLifetime: time.Millisecond})
	if err != nil {
		t.Fatalf("CreateDelegationToken of 1 ms: %v", err)
	}
	if err := tokenLoginErr(t, gw.Addr, tok.TokenID, tok.HMAC); err != nil {
		t.Fatalf("token login: %v", err)
	}
	gw.Stop()
	gw = spawnGateway(t, dir, args...)
	if err := tokenLoginErr(t, gw.Addr, tok.TokenID, tok.HMAC); err != nil {
		t.Fatalf("token login after a restart: %v", err)
	}
	if err := tokenLoginErr(t, gw.Addr, short.TokenID, short.HMAC); err == nil {
		t.Fatal("login with an expired token succeeded")
	}
	gw.Stop()

	// Without the secret the feature is off, as on Kafka.
	gw = spawnGateway(t, dir, args[:2]...)
	alice = kadm.NewClient(newClient(t, gw.Addr, kgo.SASL(kgoMech(handlers.MechScramSHA512, "alice", aclAlicePass))))
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Fatalf("create without a secret: %v", err)
	}
	if err := tokenLoginErr(t, gw.Addr, tok.TokenID, tok.HMAC); err == nil {
		t.Fatal("token login without a secret succeeded")
	}
}

// Two gateways on one Iggy server share tokens: one created through the
// first logs in on the second within about a second, and one expired
// through the second is refused by the first.
func TestDelegationTokenSharedOnIggy(t *testing.T) {
	t.Parallel()
	if !realIggyBackend() {
		t.Skipf("needs two gateways on one Iggy server: %s=iggy-server", backendEnv)
	}
	gw1 := startGateway(t, withACLs(t), withTokenSecret())
	gw2 := startGateway(t, withACLs(t), withTokenSecret())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice1 := kadm.NewClient(newClient(t, gw1.Addr, kgo.SASL(kgoMech(handlers.MechScramSHA512, "alice", aclAlicePass))))
	tok, err := alice1.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil {
		t.Fatalf("CreateDelegationToken on gw1: %v", err)
	}
	if err := await.Poll(15*time.Second, 250*time.Millisecond, func() error {
		return tokenLoginErr(t, gw2.Addr, tok.TokenID, tok.HMAC)
	}); err != nil {
		t.Fatalf("token login on gw2: %v", err)
	}
	alice2 := kadm.NewClient(newClient(t, gw2.Addr, kgo.SASL(kgoMech(handlers.MechScramSHA512, "alice", aclAlicePass))))
	if _, err := alice2.ExpireDelegationToken(ctx, tok.HMAC, -time.Millisecond); err != nil {
		t.Fatalf("ExpireDelegationToken on gw2: %v", err)
	}
	if err := await.Poll(15*time.Second, 250*time.Millisecond, func() error {
		if tokenLoginErr(t, gw1.Addr, tok.TokenID, tok.HMAC) == nil {
			return errors.New("gw1 still accepts the expired token")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
