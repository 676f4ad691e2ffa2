package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
	kcat := needKcat(t)
	gw := startGateway(t, withSasl(t))
	for _, mech := range allMechs {
		t.Run(mech, func(t *testing.T) {
			topic := "sasl-kcat-" + strings.ToLower(mech)
			auth := func(pass string) []string {
				return []string{"-b", gw.Addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mech,
					"-X", "sasl.username=" + saslUser, "-X", "sasl.password=" + pass}
			}
			input, _, values := kcatInput(10)
			_, errOut, err := runCmd(t, 60*time.Second, input, kcat, append(auth(saslPass), "-P", "-t", topic, "-K:")...)
			if err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, errOut)
			}
			out, errOut, err := runCmd(t, 60*time.Second, "", kcat,
				append(auth(saslPass), "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%s\n")...)
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, errOut)
			}
			if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); strings.Join(got, "|") != strings.Join(values, "|") {
				t.Fatalf("kcat consumed %q, want %q", got, values)
			}
			_, errOut, err = runCmd(t, 30*time.Second, "", kcat, append(auth("wrong"), "-L", "-m", "5")...)
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
	needJava(t)
	gw := startGateway(t, withSasl(t))
	for _, mech := range allMechs {
		t.Run(mech, func(t *testing.T) {
			module := "org.apache.kafka.common.security.scram.ScramLoginModule"
			if mech == handlers.MechPlain {
				module = "org.apache.kafka.common.security.plain.PlainLoginModule"
			}
			props := filepath.Join(t.TempDir(), "client.properties")
			writeFile(t, props, fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=%s\n"+
				"sasl.jaas.config=%s required username=\"%s\" password=\"%s\";\n", mech, module, saslUser, javaEscape(saslPass)))
			topic := "sasl-java-" + strings.ToLower(mech)
			const n = 20
			var in strings.Builder
			var want []string
			for i := 0; i < n; i++ {
				v := fmt.Sprintf("java sasl %d", i)
				in.WriteString(v + "\n")
				want = append(want, v)
			}
			_, errOut, err := javaRun(t, 90*time.Second, in.String(), "org.apache.kafka.tools.ConsoleProducer",
				"--bootstrap-server", gw.Addr, "--topic", topic, "--producer.config", props)
			if err != nil || strings.Contains(errOut, "ERROR") {
				t.Fatalf("ConsoleProducer: %v\nstderr: %s", err, errOut)
			}
			out, errOut, err := javaRun(t, 90*time.Second, "", "org.apache.kafka.tools.consumer.ConsoleConsumer",
				"--bootstrap-server", gw.Addr, "--topic", topic, "--from-beginning", "--max-messages", fmt.Sprint(n),
				"--timeout-ms", "30000", "--consumer.config", props)
			if err != nil {
				t.Fatalf("ConsoleConsumer: %v\nstderr: %s", err, errOut)
			}
			if got := strings.TrimSuffix(out, "\n"); got != strings.Join(want, "\n") {
				t.Fatalf("ConsoleConsumer printed:\n%s\nwant:\n%s\nstderr: %s", got, strings.Join(want, "\n"), errOut)
			}
		})
	}
}
