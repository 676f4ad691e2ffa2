package e2e

// The gateway's own Iggy user decides what any Kafka client can do on
// Iggy (docs/SECURITY.md, "ACLs and Iggy permissions"): when Iggy refuses
// it (status 41, unauthorized) the client gets TOPIC_AUTHORIZATION_FAILED,
// never a generic error, and what the user may do still works.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestIggyPermissionsRefusals(t *testing.T) {
	realServerTest(t)
	rb := newRealBackend(t)
	cli := newIggyCLI(t, rb.addr)
	iggyArgs := rb.gatewayArgs()

	// A gateway logged in as root makes the streams, the gateway's state
	// topics and a topic with three records.
	root := spawnGateway(t, t.TempDir(), iggyArgs...)
	rootCl := newClient(t, root.Addr)
	createTopic(t, rootCl, "perm-t", 1)
	want := produceAll(t, rootCl, testRecords("perm-t", 3))

	// A user that may read and poll everything but send nothing and
	// manage nothing.
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	user, pass := "kafka-ro-"+hex.EncodeToString(rnd[:]), "pw-"+hex.EncodeToString(rnd[:])
	cli.run("", "user", "create", "-g", "read_streams,read_topics,poll_messages", user, pass)
	t.Cleanup(func() { cli.run("", "user", "delete", user) })
	ro := spawnGateway(t, t.TempDir(), append(iggyArgs, "--iggy-username="+user, "--iggy-password="+pass)...)

	// Reading works.
	sameRecs(t, want, consumeTLS(t, ro.Addr, "perm-t", len(want)))

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
	sameRecs(t, want, consumeTLS(t, root.Addr, "perm-t", len(want)))
	if n := endOffset(t, rootCl, "perm-t"); n != 3 {
		t.Fatalf("perm-t ends at %d, want 3", n)
	}
}
