package e2e

// Iggy permissions on the real Iggy server (docs/SECURITY.md, "ACLs and
// Iggy permissions"). The gateway's own Iggy user decides what any Kafka
// client can do on Iggy: when Iggy refuses it (status 41, unauthorized) the
// client gets TOPIC_AUTHORIZATION_FAILED, never a generic error, and what
// the user may do still works. A PLAIN client is the Iggy user it logged in
// as, and that user's Iggy permissions bound what it may do beside the ACLs:
// users made with the real server's CLI, per topic and global, checked with
// franz-go and kcat, and a change made in Iggy applies within
// --iggy-permissions-ttl.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
)

func TestIggyPermissionsRefusals(t *testing.T) {
	t.Parallel()
	// A gateway logged in as root makes the streams, the gateway's state
	// topics and a topic with three records.
	rb, cli, root, rootCl := rootGateway(t)
	createTopic(t, rootCl, "perm-t", 1)
	want := produceAll(t, rootCl, testRecords("perm-t", 3))

	// A user that may read and poll everything but send nothing and
	// manage nothing.
	sfx := userSuffix()
	user, pass := "kafka-ro-"+sfx, "pw-"+sfx
	cli.createUser(user, pass, "-g", "read_streams,read_topics,poll_messages")
	ro := spawnGateway(t, t.TempDir(), rb.gatewayArgs("--iggy-username="+user, "--iggy-password="+pass)...)

	// Reading works.
	sameRecs(t, want, consumeN(t, ro.Addr, "perm-t", len(want)))

	// Producing is refused as Kafka refuses an unauthorized write.
	cl := newClient(t, ro.Addr, kgo.DisableIdempotentWrite(), kgo.RecordRetries(2), kgo.MaxBufferedRecords(10))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "perm-t", Value: []byte("no")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce as %s: %v, want TOPIC_AUTHORIZATION_FAILED", user, err)
	}
	// Creating and deleting topics too.
	adm := kadm.NewClient(cl)
	cr, err := adm.CreateTopics(ctx, 1, 1, nil, "perm-new")
	if err != nil {
		t.Fatal(err)
	}
	if r := cr["perm-new"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create topic as %s: %v, want TOPIC_AUTHORIZATION_FAILED", user, r.Err)
	}
	dr, err := adm.DeleteTopics(ctx, "perm-t")
	if err != nil {
		t.Fatal(err)
	}
	if r := dr["perm-t"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("delete topic as %s: %v, want TOPIC_AUTHORIZATION_FAILED", user, r.Err)
	}
	// Nothing was written or removed: root still reads the three records.
	sameRecs(t, want, consumeN(t, root.Addr, "perm-t", len(want)))
	if n := endOffset(t, rootCl, "perm-t"); n != 3 {
		t.Fatalf("perm-t ends at %d, want 3", n)
	}
}

func TestIggyUserPermissions(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	// Root (no SASL) makes topics A and B with two records each.
	rb, cli, _, rootCl := rootGateway(t)
	createTopic(t, rootCl, "perm-a", 1)
	createTopic(t, rootCl, "perm-b", 1)
	wantA := produceAll(t, rootCl, testRecords("perm-a", 2))
	produceAll(t, rootCl, testRecords("perm-b", 2))

	// Iggy's numeric ids, which its per-stream and per-topic permissions
	// name.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ic := dialIggy(ctx, t, rb.addr)
	st, ok, err := ic.GetStream(ctx, iggy.Name(rb.stream))
	if err != nil || !ok {
		t.Fatalf("stream %s: ok=%v err=%v", rb.stream, ok, err)
	}
	ids := map[string]uint32{}
	for _, tp := range st.Topics {
		ids[tp.Name] = tp.ID
	}

	sfx := userSuffix()
	sender, reader, pass := "kafka-snd-"+sfx, "kafka-ro-"+sfx, "pw-"+sfx
	cli.createUser(sender, pass, "-s", fmt.Sprintf("%d#%d:send_messages", st.ID, ids["perm-a"]))
	cli.createUser(reader, pass, "-g", "read_streams,read_topics,poll_messages")

	const ttl = time.Second
	gw := spawnGateway(t, t.TempDir(), rb.gatewayArgs("--sasl-mechanisms=PLAIN", fmt.Sprintf("--iggy-permissions-ttl=%v", ttl))...)
	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, gw.Addr, append([]kgo.Opt{kgo.SASL(kgoMech(handlers.MechPlain, user, pass)),
			kgo.DisableIdempotentWrite(), kgo.RecordRetries(2)}, opts...)...)
	}
	produce := func(user, topic string) error {
		cl := as(user)
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + user)}).FirstErr()
	}

	// The sender may send to A only, with franz-go and with kcat.
	if err := produce(sender, "perm-a"); err != nil {
		t.Fatalf("sender to perm-a: %v", err)
	}
	if err := produce(sender, "perm-b"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("sender to perm-b: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	kcatSasl := []string{"-b", gw.Addr, "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN",
		"-X", "sasl.username=" + sender, "-X", "sasl.password=" + pass}
	if _, errOut, err := runCmd(t, 60*time.Second, "kcat-a\n", kcat, append(kcatSasl, "-P", "-t", "perm-a")...); err != nil {
		t.Fatalf("kcat as sender to perm-a: %v\n%s", err, errOut)
	}
	_, errOut, err := runCmd(t, 60*time.Second, "kcat-b\n", kcat, append(kcatSasl, "-P", "-t", "perm-b")...)
	if err == nil || !strings.Contains(errOut, "Topic authorization failed") {
		t.Fatalf("kcat as sender to perm-b: err=%v, want a topic authorization failure; stderr:\n%s", err, errOut)
	}
	// The sender may not read A (send_messages implies no polling).
	cl := as(sender, kgo.ConsumeTopics("perm-a"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	fs := cl.PollFetches(pctx)
	pcancel()
	if fe := fs.Errors(); len(fe) == 0 || !errors.Is(fe[0].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("sender reading perm-a: %v, want TOPIC_AUTHORIZATION_FAILED", fe)
	}
	cl.Close()

	// The reader consumes but may not produce, create or delete.
	sameRecs(t, wantA, consumeN(t, gw.Addr, "perm-a", len(wantA), consumeWith(kgo.SASL(kgoMech(handlers.MechPlain, reader, pass))))[:len(wantA)])
	if err := produce(reader, "perm-a"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("reader producing: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	adm := kadm.NewClient(as(reader))
	cr, err := adm.CreateTopics(ctx, 1, 1, nil, "perm-new")
	if err != nil {
		t.Fatal(err)
	}
	if r := cr["perm-new"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("reader creating a topic: %v, want TOPIC_AUTHORIZATION_FAILED", r.Err)
	}
	dr, err := adm.DeleteTopics(ctx, "perm-a")
	if err != nil {
		t.Fatal(err)
	}
	if r := dr["perm-a"]; !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("reader deleting a topic: %v, want TOPIC_AUTHORIZATION_FAILED", r.Err)
	}

	// Changes in Iggy apply within the TTL (plus a call): the reader gains
	// send_messages, the sender loses it. Each try is a fresh client.
	cli.run("", "user", "permissions", "-g", "read_streams,read_topics,poll_messages,send_messages", reader)
	cli.run("", "user", "permissions", sender)
	changed := time.Now()
	bound := ttl + 10*time.Second // 10 s: the gateway's --iggy-call-timeout
	if err := await.Poll(bound, ttl/4, func() error {
		errR, errS := produce(reader, "perm-a"), produce(sender, "perm-a")
		if errR == nil && errors.Is(errS, kerr.TopicAuthorizationFailed) {
			return nil
		}
		return fmt.Errorf("reader %v (want success), sender %v (want TOPIC_AUTHORIZATION_FAILED)", errR, errS)
	}); err != nil {
		t.Fatalf("after %v: %v", bound, err)
	}
	t.Logf("permission change applied after %v", time.Since(changed))
	// Nothing refused was written: perm-b holds root's two records, perm-a
	// root's two, the sender's two (franz-go, kcat) and the reader's.
	if n := endOffset(t, rootCl, "perm-b"); n != 2 {
		t.Fatalf("perm-b ends at %d, want 2", n)
	}

	// A gateway whose own Iggy user may not read users cannot keep
	// permissions fresh: it does not start (rather than refuse every
	// PLAIN client a TTL later). The reader has no read_users.
	cmd := exec.Command(gatewayBinary(t), rb.gatewayArgs("--iggy-username="+reader, "--iggy-password="+pass,
		"--sasl-mechanisms=PLAIN", "--bind-addr=127.0.0.1:"+strconv.Itoa(freePort(t)))...)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "read_users") {
		t.Fatalf("gateway as %s: err %v, output:\n%s\nwant exit 1 naming read_users", reader, err, out)
	}
}
