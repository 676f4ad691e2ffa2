package e2e

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/internal/await"
)

// TestBinaryReportsWeakIggyTopics: a topic made on the real Iggy server
// without the gateway's storage settings (a native client, an older
// gateway) is named at startup, because Iggy cannot change them later; with
// --iggy-weak-topics=refuse the gateway does not start. Topics the gateway
// creates itself carry the settings of --fsync.
func TestBinaryReportsWeakIggyTopics(t *testing.T) {
	t.Parallel()
	realServerTest(t)
	rb := realBackendFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialIggy(ctx, t, rb.addr)
	if _, err := c.CreateStream(ctx, rb.stream); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, iggy.Name(rb.stream), "made-natively", 1, nil); err != nil {
		t.Fatal(err)
	}
	args := func(extra ...string) []string {
		return rb.gatewayArgs(append([]string{"--bind-addr=127.0.0.1:" + strconv.Itoa(freePort(t))}, extra...)...)
	}

	cmd := exec.Command(gatewayBinary(t), args("--iggy-weak-topics=refuse")...)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "made-natively") ||
		!strings.Contains(string(out), "enforce_fsync=false") {
		t.Fatalf("refuse: err %v, output:\n%s\nwant exit 1 naming the topic and its settings", err, out)
	}

	// Explicit flags (after the suite's backend ones, so they win): this
	// test is about the real server whatever backend the suite runs on.
	p := spawnGateway(t, t.TempDir(), "--backend=iggy", "--iggy-addr="+rb.addr, "--stream="+rb.stream, "--iggy-state-stream="+rb.state)
	await.Until(t, 10*time.Second, func() error {
		if !strings.Contains(p.Log(), "made-natively") {
			return errors.New("no warning naming the weak topic yet")
		}
		return nil
	})
	// A topic the gateway creates keeps the default --fsync=always.
	clientWithTopic(t, p.Addr, "made-by-gateway", 1)
	produceParts(t, p.Addr, "made-by-gateway", 1, 3)
	tp, ok, err := c.GetTopic(ctx, iggy.Name(rb.stream), iggy.Name("made-by-gateway"))
	if err != nil || !ok {
		t.Fatalf("topic made through the gateway: %v %v", ok, err)
	}
	always, _ := iggy.DurabilityFor("always")
	if d, ok := tp.Durability(); !ok || d != always {
		t.Fatalf("topic made through the gateway has %v (known %v), want %v", d, ok, always)
	}
	p.Stop()
}
