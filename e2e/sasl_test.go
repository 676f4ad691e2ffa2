package e2e

// SASL with real clients: franz-go, kcat and the Java console tools on an
// in-process gateway, and the gateway binary with a users file or, on
// Iggy, Iggy's own users (PLAIN). The exchanges on the wire are in
// sasl_wire_test.go.

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
)

// franz-go with sasl/plain and sasl/scram (SHA-256 and SHA-512) produces
// and consumes; a wrong password and an unknown user are refused with the
// same error and message, neither sooner than the failure delay.
func TestSaslKgo(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withSasl(t))
	for _, mech := range allMechs {
		t.Run(mech, func(t *testing.T) {
			topic := "sasl-kgo-" + strings.ToLower(mech)
			cl := clientWithTopic(t, gw.Addr, topic, 2, kgo.SASL(kgoMech(mech, saslUser, saslPass)))
			want := produceAll(t, cl, testRecords(topic, 20))
			got := consumeN(t, gw.Addr, topic, len(want), consumeWith(kgo.SASL(kgoMech(mech, saslUser, saslPass))))
			sameRecs(t, want, got)

			dWrong, errWrong := kgoLoginErr(t, gw.Addr, mech, saslUser, "wrong")
			dUnknown, errUnknown := kgoLoginErr(t, gw.Addr, mech, "mallory", saslPass)
			for name, err := range map[string]error{"wrong password": errWrong, "unknown user": errUnknown} {
				if !errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Fatalf("%s: got %v, want SASL_AUTHENTICATION_FAILED", name, err)
				}
			}
			if errWrong.Error() != errUnknown.Error() {
				t.Errorf("the refusals differ:\n wrong password: %v\n unknown user:   %v", errWrong, errUnknown)
			}
			if dWrong < saslFailDelay || dUnknown < saslFailDelay {
				t.Errorf("refused after %v (wrong password) and %v (unknown user), want both >= %v", dWrong, dUnknown, saslFailDelay)
			}
		})
	}
	apiVersionsOK(t, gw.Addr)
}

// A client that does not log in gets nothing: its first request after
// ApiVersions closes the connection.
func TestSaslKgoWithoutLogin(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withSasl(t))
	notServed(t, gw.Addr, "Metadata without logging in was answered")
}

// kcat (librdkafka) with security.protocol=SASL_PLAINTEXT and each
// mechanism produces and consumes; a wrong password fails.
func TestSaslKcat(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t, withSasl(t))
	for _, mech := range allMechs {
		t.Run(mech, func(t *testing.T) {
			topic := "sasl-kcat-" + strings.ToLower(mech)
			auth := func(pass string) []string {
				return []string{"-b", gw.Addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mech,
					"-X", "sasl.username=" + saslUser, "-X", "sasl.password=" + pass}
			}
			kcatRoundTrip(t, kcat, topic, auth(saslPass))
			kcatListRefused(t, kcat, "with a wrong password", "Authentication failed", auth("wrong")...)
		})
	}
}

// The Java console producer and consumer log in with a JAAS config
// (sasl.jaas.config) for each mechanism.
func TestSaslJava(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t, withSasl(t))
	for _, mech := range allMechs {
		t.Run(mech, func(t *testing.T) {
			module := scramLogin
			if mech == handlers.MechPlain {
				module = plainLogin
			}
			javaConsoleRoundTrip(t, gw.Addr, "sasl-java-"+strings.ToLower(mech), "sasl",
				"security.protocol=SASL_PLAINTEXT\nsasl.mechanism="+mech+"\n"+jaasConfig(module, saslUser, saslPass))
		})
	}
}

// The gateway binary with --sasl-mechanisms and a users file written by
// `iggy-kafka-gateway sasl-user add` (password on stdin): franz-go logs in
// with SCRAM-SHA-512 and produces; a client that does not log in is
// refused.
func TestSaslBinaryUsersFile(t *testing.T) {
	t.Parallel()
	bin := gatewayBinary(t)
	users := filepath.Join(t.TempDir(), "users")
	if out, errOut, err := runCmd(t, 30*time.Second, "hunter2\n", bin, "sasl-user", "add", "--file", users, "carol"); err != nil {
		t.Fatalf("sasl-user add: %v\n%s%s", err, out, errOut)
	}
	gw := spawnGateway(t, t.TempDir(), "--sasl-mechanisms=SCRAM-SHA-512,SCRAM-SHA-256", "--sasl-users-file="+users)
	cl := clientWithTopic(t, gw.Addr, "sasl-bin", 1, kgo.SASL(kgoMech(handlers.MechScramSHA512, "carol", "hunter2")))
	produceAll(t, cl, testRecords("sasl-bin", 5))
	if _, err := kgoLoginErr(t, gw.Addr, handlers.MechScramSHA256, "carol", "hunter3"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a wrong password: %v", err)
	}
	w := dialWire(t, gw.Addr)
	w.write(frameOf(kmsg.NewPtrMetadataRequest(), 9, 1))
	w.expectClosed("Metadata before authentication")
	if !strings.Contains(gw.Log(), "SASL on") {
		t.Errorf("the startup log does not say SASL is on")
	}
}

// On the Iggy backend PLAIN is checked by logging in to Iggy as that user:
// a user created with the iggy CLI logs in through franz-go and produces; a
// wrong password and an unknown user get the same refusal.
func TestSaslIggyPlain(t *testing.T) {
	t.Parallel()
	realServerTest(t)
	rb := newRealBackend(t)
	cli := newIggyCLI(t, rb.addr)
	sfx := userSuffix()
	user, pass := "kafka-sasl-"+sfx, "pw-"+sfx
	cli.createUser(user, pass, "-g", "manage_topics") // manage_topics: create, send, poll (Iggy permissions apply)

	gw := spawnGateway(t, t.TempDir(), "--backend=iggy", "--iggy-addr="+rb.addr, "--stream="+rb.stream,
		"--iggy-state-stream="+rb.state, "--sasl-mechanisms=PLAIN")
	cl := clientWithTopic(t, gw.Addr, "sasl-iggy", 1, kgo.SASL(kgoMech(handlers.MechPlain, user, pass)))
	produceAll(t, cl, testRecords("sasl-iggy", 5))

	_, errWrong := kgoLoginErr(t, gw.Addr, handlers.MechPlain, user, "wrong-pw")
	_, errUnknown := kgoLoginErr(t, gw.Addr, handlers.MechPlain, "nobody-"+sfx, pass)
	if !errors.Is(errWrong, kerr.SaslAuthenticationFailed) || !errors.Is(errUnknown, kerr.SaslAuthenticationFailed) ||
		errWrong.Error() != errUnknown.Error() {
		t.Fatalf("refusals: wrong password %v; unknown user %v", errWrong, errUnknown)
	}
	// A second client of the same user is served from the success cache
	// or a fresh login alike.
	cl2 := newClient(t, gw.Addr, kgo.SASL(kgoMech(handlers.MechPlain, user, pass)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl2.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
