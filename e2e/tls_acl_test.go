package e2e

// mTLS principals under ACLs (docs/SECURITY.md, "Listeners and TLS"): a
// client certificate's subject is the principal on an SSL listener, so an
// ACL naming it decides what that client may do, through franz-go, kcat
// and the Java producer; another certificate signed by the same CA is
// another principal and gets nothing.

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/testcert"
)

func TestTLSClientCertACL(t *testing.T) {
	t.Parallel()
	needJava(t)
	kcat := needKcat(t)
	var ts tlsSetup
	startGateway(t, withACLs(t), withTLS(t, true, &ts), withAutoCreate(false))
	const topicA, topicB = "mtls-acl-a", "mtls-acl-b"
	principal := "User:" + testcert.ClientSubject

	// The admin logs in with SCRAM over SASL_SSL (a client certificate is
	// required there too; the SASL login is the principal).
	admin := newClient(t, ts.saslSSL, kgo.DialTLSConfig(kgoTLS(t, &ts, true)),
		kgo.SASL(kgoMech(handlers.MechScramSHA512, "admin", aclAdminPass)))
	createTopic(t, admin, topicA, 1)
	createTopic(t, admin, topicB, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(admin).CreateACLs(ctx, kadm.NewACLs().Allow(principal).Topics(topicA).
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("CreateACLs for %s: %v %+v", principal, err, res)
	}

	produce := func(cfg *tls.Config, topic string) error {
		t.Helper()
		cl := newClient(t, ts.ssl, kgo.DialTLSConfig(cfg), kgo.RecordRetries(2), kgo.MaxBufferedRecords(10))
		pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	// franz-go with the client certificate.
	if err := produce(kgoTLS(t, &ts, true), topicA); err != nil {
		t.Fatalf("franz-go as %s to %s: %v", principal, topicA, err)
	}
	if err := produce(kgoTLS(t, &ts, true), topicB); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("franz-go as %s to %s: %v, want TOPIC_AUTHORIZATION_FAILED", principal, topicB, err)
	}
	// Another certificate from the same CA is another principal.
	otherCert, otherKey := testcert.Issue(t, ts.files, "other", pkix.Name{CommonName: "someone-else"}, false)
	other := kgoTLS(t, &ts, false)
	pair, err := tls.LoadX509KeyPair(otherCert, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	other.Certificates = []tls.Certificate{pair}
	if err := produce(other, topicA); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("franz-go as CN=someone-else to %s: %v, want TOPIC_AUTHORIZATION_FAILED", topicA, err)
	}

	// kcat (librdkafka) with the client certificate.
	args := kcatTLS(&ts, "", true)
	if _, errOut, err := runCmd(t, 60*time.Second, "k1:v1\n", kcat, append(args, "-P", "-t", topicA, "-K:")...); err != nil {
		t.Fatalf("kcat -P %s: %v\n%s", topicA, err, errOut)
	}
	_, errOut, _ := runCmd(t, 60*time.Second, "k1:v1\n", kcat, append(args, "-P", "-t", topicB, "-K:")...)
	if !strings.Contains(strings.ToLower(errOut), "topic authorization failed") {
		t.Fatalf("kcat -P %s: want a topic authorization failure, got:\n%s", topicB, errOut)
	}

	// The Java producer with a PEM keystore (KIP-651).
	{
		props := filepath.Join(t.TempDir(), "mtls.properties")
		writeFile(t, props, fmt.Sprintf("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n"+
			"ssl.keystore.type=PEM\nssl.keystore.location=%s\n", ts.files.CA, pemKeystore(t, ts.files)))
		javaProduce := func(topic string) (string, error) {
			_, errOut, err := javaRun(t, 90*time.Second, "java-v\n", "org.apache.kafka.tools.ConsoleProducer",
				"--bootstrap-server", ts.ssl, "--topic", topic, "--producer.config", props,
				"--producer-property", "max.block.ms=15000", "--producer-property", "delivery.timeout.ms=20000",
				"--producer-property", "request.timeout.ms=10000")
			return errOut, err
		}
		if errOut, err := javaProduce(topicA); err != nil || strings.Contains(errOut, "ERROR") {
			t.Fatalf("Java producer to %s: %v\n%s", topicA, err, tail(errOut, 30))
		}
		if errOut, _ := javaProduce(topicB); !strings.Contains(errOut, "TopicAuthorizationException") &&
			!strings.Contains(errOut, "Not authorized to access topics") {
			t.Fatalf("Java producer to %s: want TopicAuthorizationException, got:\n%s", topicB, tail(errOut, 30))
		}
	}

	// Exactly the allowed writes landed.
	if n := endOffset(t, admin, topicA); n != 3 {
		t.Fatalf("%s ends at %d, want 3 (franz-go, kcat, Java)", topicA, n)
	}
	if n := endOffset(t, admin, topicB); n != 0 {
		t.Fatalf("%s ends at %d, want 0", topicB, n)
	}
}

// pemKeystore writes the client certificate and its key into one PEM
// file, the form Java's ssl.keystore.type=PEM reads from a location.
func pemKeystore(t testing.TB, f testcert.Files) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client-keystore.pem")
	key, err := os.ReadFile(f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := os.ReadFile(f.ClientCert)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, string(key)+string(cert))
	return p
}
