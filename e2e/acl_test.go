package e2e

// Authorization end to end (docs/SECURITY.md, ACLs): Kafka's own tools
// manage ACLs (kafka-acls) and SCRAM users (kafka-configs), and a
// principal allowed to write one topic but not another gets
// TOPIC_AUTHORIZATION_FAILED on the other through franz-go, kcat and the
// Java producer. Under mTLS (docs/SECURITY.md, "Listeners and TLS") a
// client certificate's subject is the principal on an SSL listener, so an
// ACL naming it decides what that client may do; another certificate
// signed by the same CA is another principal and gets nothing.

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
	"github.com/iggy-kafka/gateway/internal/await"
	iscram "github.com/iggy-kafka/gateway/internal/scram"
	"github.com/iggy-kafka/gateway/internal/testcert"
	"github.com/iggy-kafka/gateway/loop"
)

const (
	aclAdminPass = "admin-secret"
	aclAlicePass = "alice-acl-secret"
	aclToolClass = "org.apache.kafka.tools.AclCommand"
)

// withACLs turns SASL on (admin and alice in a users file) and the ACL
// authorizer with User:admin as super user.
func withACLs(t testing.TB) gwOption {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	all := []iscram.Mechanism{iscram.SHA256, iscram.SHA512}
	for _, u := range [][2]string{{"admin", aclAdminPass}, {"alice", aclAlicePass}} {
		if err := iscram.SetUser(path, u[0], u[1], all, iscram.DefaultIterations); err != nil {
			t.Fatal(err)
		}
	}
	users, err := iscram.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := &handlers.SaslConfig{Mechanisms: allMechs, Users: users, FailDelay: saslFailDelay, MaxFailDelay: 4 * saslFailDelay}
	return func(h *handlers.Config, _ *loop.Config) {
		h.Sasl = sc
		h.Authz = handlers.AuthzConfig{Enabled: true, SuperUsers: []string{"User:admin"}}
	}
}

// javaSaslProps writes a client properties file logging in as user with
// SCRAM-SHA-512.
func javaSaslProps(t testing.TB, user, pass string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), user+".properties")
	writeFile(t, p, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+jaasConfig(scramLogin, user, pass))
	return p
}

// kgoProduceErr produces one record to topic as user and returns the
// produce error.
func kgoProduceErr(t *testing.T, addr, user, pass, topic string) error {
	t.Helper()
	cl := newClient(t, addr, kgo.SASL(kgoMech(handlers.MechScramSHA256, user, pass)), kgo.RecordRetries(2),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(10))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

func TestACLToolsAndEnforcement(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t, withACLs(t), withAutoCreate(false))
	admin := clientWithTopic(t, gw.Addr, "acl-a", 1, kgo.SASL(kgoMech(handlers.MechScramSHA512, "admin", aclAdminPass)))
	createTopic(t, admin, "acl-b", 1)
	adminProps := javaSaslProps(t, "admin", aclAdminPass)
	acls := func(args ...string) (string, error) {
		t.Helper()
		out, errOut, err := javaRun(t, 90*time.Second, "", aclToolClass,
			append([]string{"--bootstrap-server", gw.Addr, "--command-config", adminProps}, args...)...)
		if err != nil {
			return out + errOut, err
		}
		return out, nil
	}

	// Before any ACL alice may do nothing (default deny).
	if err := kgoProduceErr(t, gw.Addr, "alice", aclAlicePass, "acl-a"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without ACLs: %v", err)
	}
	if out, err := acls("--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "acl-a"); err != nil {
		t.Fatalf("kafka-acls --add: %v\n%s", err, out)
	}
	out, err := acls("--list", "--topic", "acl-a")
	if err != nil || !strings.Contains(out, "principal=User:alice") || !strings.Contains(out, "operation=WRITE") ||
		!strings.Contains(out, "permissionType=ALLOW") || !strings.Contains(out, "name=acl-a") {
		t.Fatalf("kafka-acls --list: %v\n%s", err, out)
	}
	// A non-super user cannot manage ACLs.
	aliceProps := javaSaslProps(t, "alice", aclAlicePass)
	if out, errOut, err := javaRun(t, 90*time.Second, "", aclToolClass, "--bootstrap-server", gw.Addr,
		"--command-config", aliceProps, "--list"); err == nil && !strings.Contains(out+errOut, "ClusterAuthorization") {
		t.Fatalf("kafka-acls --list as alice:\n%s\n%s", out, errOut)
	}

	// franz-go.
	if err := kgoProduceErr(t, gw.Addr, "alice", aclAlicePass, "acl-a"); err != nil {
		t.Fatalf("franz-go produce to acl-a: %v", err)
	}
	if err := kgoProduceErr(t, gw.Addr, "alice", aclAlicePass, "acl-b"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("franz-go produce to acl-b: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// kcat (librdkafka).
	{
		kcat := needKcat(t)
		auth := []string{"-b", gw.Addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256",
			"-X", "sasl.username=alice", "-X", "sasl.password=" + aclAlicePass}
		if _, errOut, err := runCmd(t, 60*time.Second, "k1:v1\n", kcat, append(auth, "-P", "-t", "acl-a", "-K:")...); err != nil {
			t.Fatalf("kcat -P acl-a: %v\n%s", err, errOut)
		}
		_, errOut, _ := runCmd(t, 60*time.Second, "k1:v1\n", kcat, append(auth, "-P", "-t", "acl-b", "-K:")...)
		if !strings.Contains(strings.ToLower(errOut), "topic authorization failed") {
			t.Fatalf("kcat -P acl-b: want a topic authorization failure, got:\n%s", errOut)
		}
	}

	// The Java producer (kafka-console-producer).
	produce := func(topic string) (string, error) { return javaProduceOne(t, gw.Addr, topic, aliceProps) }
	if errOut, err := produce("acl-a"); err != nil || strings.Contains(errOut, "ERROR") {
		t.Fatalf("Java producer to acl-a: %v\n%s", err, tail(errOut, 30))
	}
	if errOut, _ := produce("acl-b"); !strings.Contains(errOut, "TopicAuthorizationException") &&
		!strings.Contains(errOut, "Not authorized to access topics") {
		t.Fatalf("Java producer to acl-b: want TopicAuthorizationException, got:\n%s", tail(errOut, 30))
	}

	// The three allowed writes (franz-go, kcat, Java) landed in acl-a and
	// nothing in acl-b.
	if n := endOffset(t, admin, "acl-a"); n != 3 {
		t.Fatalf("acl-a ends at %d, want 3", n)
	}
	if n := endOffset(t, admin, "acl-b"); n != 0 {
		t.Fatalf("acl-b ends at %d, want 0", n)
	}

	if out, err := acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "acl-a"); err != nil {
		t.Fatalf("kafka-acls --remove: %v\n%s", err, out)
	}
	if out, err := acls("--list"); err != nil || strings.Contains(out, "User:alice") {
		t.Fatalf("kafka-acls --list after --remove: %v\n%s", err, out)
	}
	if err := kgoProduceErr(t, gw.Addr, "alice", aclAlicePass, "acl-a"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice after the ACL was removed: %v", err)
	}
}

// kafka-configs adds a SCRAM user (AlterUserScramCredentials), the user
// logs in with it, --describe lists it, and --delete-config removes it.
func TestSCRAMKafkaConfigs(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t, withACLs(t))
	adminProps := javaSaslProps(t, "admin", aclAdminPass)
	configs := func(args ...string) string {
		t.Helper()
		out, _ := kafkaTool(t, gw.Addr, configsClass, append([]string{"--command-config", adminProps}, args...)...)
		return out
	}
	if _, err := kgoLoginErr(t, gw.Addr, handlers.MechScramSHA256, "carol", "carol-secret"); err == nil {
		t.Fatal("carol logged in before she was added")
	}
	configs("--alter", "--entity-type", "users", "--entity-name", "carol",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret],SCRAM-SHA-512=[password=carol-secret]")
	for _, mech := range []string{handlers.MechScramSHA256, handlers.MechScramSHA512, handlers.MechPlain} {
		if _, err := kgoLoginErr(t, gw.Addr, mech, "carol", "carol-secret"); err != nil {
			t.Fatalf("carol %s login after kafka-configs --add-config: %v", mech, err)
		}
	}
	if _, err := kgoLoginErr(t, gw.Addr, handlers.MechScramSHA256, "carol", "wrong"); err == nil {
		t.Fatal("carol logged in with a wrong password")
	}
	out := configs("--describe", "--entity-type", "users", "--entity-name", "carol")
	if !strings.Contains(out, "SCRAM-SHA-256=iterations=8192") || !strings.Contains(out, "SCRAM-SHA-512=iterations=4096") {
		t.Fatalf("kafka-configs --describe users:\n%s", out)
	}
	// The Java client logs in as carol too.
	carolProps := javaSaslProps(t, "carol", "carol-secret")
	kafkaTool(t, gw.Addr, "org.apache.kafka.tools.TopicCommand", "--command-config", carolProps, "--list")
	configs("--alter", "--entity-type", "users", "--entity-name", "carol", "--delete-config", "SCRAM-SHA-512")
	if _, err := kgoLoginErr(t, gw.Addr, handlers.MechScramSHA512, "carol", "carol-secret"); err == nil {
		t.Fatal("carol SCRAM-SHA-512 login after --delete-config")
	}
	if _, err := kgoLoginErr(t, gw.Addr, handlers.MechScramSHA256, "carol", "carol-secret"); err != nil {
		t.Fatalf("carol SCRAM-SHA-256 after deleting only SHA-512: %v", err)
	}
}

// The gateway binary with --authorizer acl and --super-users: ACLs made
// through it are enforced and survive a restart (the store's security
// log).
func TestACLBinaryRestart(t *testing.T) {
	t.Parallel()
	bin := gatewayBinary(t)
	users := filepath.Join(t.TempDir(), "users")
	for _, u := range [][2]string{{"admin", aclAdminPass}, {"alice", aclAlicePass}} {
		if out, errOut, err := runCmd(t, 30*time.Second, u[1]+"\n", bin, "sasl-user", "add", "--file", users, u[0]); err != nil {
			t.Fatalf("sasl-user add: %v\n%s%s", err, out, errOut)
		}
	}
	dir := t.TempDir()
	args := []string{"--sasl-mechanisms=SCRAM-SHA-256", "--sasl-users-file=" + users,
		"--authorizer=acl", "--super-users=User:admin;User:ops"}
	gw := spawnGateway(t, dir, args...)
	if !strings.Contains(gw.Log(), "authorization on") {
		t.Errorf("the startup log does not say authorization is on:\n%s", tail(gw.Log(), 20))
	}
	admin := clientWithTopic(t, gw.Addr, "aclbin-a", 1, kgo.SASL(kgoMech(handlers.MechScramSHA256, "admin", aclAdminPass)))
	createTopic(t, admin, "aclbin-b", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(admin).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("aclbin-a").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	check := func() {
		t.Helper()
		if err := kgoProduceErr(t, gw.Addr, "alice", aclAlicePass, "aclbin-a"); err != nil {
			t.Fatalf("alice to aclbin-a: %v", err)
		}
		if err := kgoProduceErr(t, gw.Addr, "alice", aclAlicePass, "aclbin-b"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("alice to aclbin-b: %v", err)
		}
	}
	check()
	gw.Stop()
	gw = spawnGateway(t, dir, args...)
	check()
}

// Two gateways on one Iggy server share the security log: an ACL and a
// SCRAM user made through one are in force on the other within about a
// second (each re-reads the log at most once a second).
func TestACLSharedByGatewaysOnIggy(t *testing.T) {
	t.Parallel()
	if !realIggyBackend() {
		t.Skipf("needs two gateways on one Iggy server: %s=iggy-server", backendEnv)
	}
	gw1 := startGateway(t, withACLs(t))
	gw2 := startGateway(t, withACLs(t))
	admin := clientWithTopic(t, gw1.Addr, "shared-a", 1, kgo.SASL(kgoMech(handlers.MechScramSHA256, "admin", aclAdminPass)))
	if err := kgoProduceErr(t, gw2.Addr, "alice", aclAlicePass, "shared-a"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice on gw2 before the ACL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(admin)
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("shared-a").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs on gw1: %v %+v", err, res)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha256,
		Iterations: 4096, Password: "dave-secret"}}); err != nil {
		t.Fatalf("AlterUserSCRAMs on gw1: %v", err)
	}
	if err := await.Poll(15*time.Second, 250*time.Millisecond, func() error {
		return kgoProduceErr(t, gw2.Addr, "alice", aclAlicePass, "shared-a")
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 15*time.Second, err)
	}
	if err := await.Poll(15*time.Second, 250*time.Millisecond, func() error {
		_, err := kgoLoginErr(t, gw2.Addr, handlers.MechScramSHA256, "dave", "dave-secret")
		return err
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 15*time.Second, err)
	}
}

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
		javaProduce := func(topic string) (string, error) { return javaProduceOne(t, ts.ssl, topic, props) }
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
