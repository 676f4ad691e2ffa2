package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

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
			cl := newClient(t, gw.Addr, kgo.SASL(kgoMech(mech, saslUser, saslPass)))
			createTopic(t, cl, topic, 2)
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
	cl := newClient(t, gw.Addr, kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("Metadata without logging in was answered")
	}
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
			_, errOut, err := runCmd(t, 30*time.Second, "", kcat, append(auth("wrong"), "-L", "-m", "5")...)
			if err == nil {
				t.Fatalf("kcat -L with a wrong password succeeded")
			}
			if !strings.Contains(errOut, "Authentication failed") {
				t.Errorf("kcat with a wrong password: want an authentication failure, got:\n%s", errOut)
			}
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
