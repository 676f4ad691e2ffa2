package e2e

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
	cl := newClient(t, gw.Addr, kgo.SASL(kgoMech(handlers.MechScramSHA512, "carol", "hunter2")))
	createTopic(t, cl, "sasl-bin", 1)
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
	cl := newClient(t, gw.Addr, kgo.SASL(kgoMech(handlers.MechPlain, user, pass)))
	createTopic(t, cl, "sasl-iggy", 1)
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
