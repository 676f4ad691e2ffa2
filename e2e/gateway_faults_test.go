package e2e

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// TestGatewayKillNineOnIggyUnderKgoLoad kills the gateway 5 times under
// the franz-go load; the Iggy server keeps running.
func TestGatewayKillNineOnIggyUnderKgoLoad(t *testing.T) {
	t.Parallel()
	realServerTest(t)
	g := newProxiedGateway(t, 1<<62, t.TempDir(), realBackendFor(t).gatewayArgs()...)
	const parts = 3
	clientWithTopic(t, g.proxy.Addr(), "gw-crash", parts)
	lp := startLoadProducer(t, g.proxy.Addr(), "gw-crash", parts)
	for range faultCycles {
		lp.waitAcked(2000, 90*time.Second)
		g.killAndRestart()
	}
	lp.waitAcked(2000, 90*time.Second)
	acked := lp.finish()
	checkAckedOnceInOrder(t, g.proxy.Addr(), "gw-crash", acked, parts)
	g.cur.Stop()
}

// TestGatewayKillNineOnIggyUnderJavaLoad: the same with the Java producer.
func TestGatewayKillNineOnIggyUnderJavaLoad(t *testing.T) {
	t.Parallel()
	realServerTest(t)
	run := javaIdem(t)
	g := newProxiedGateway(t, 1<<62, t.TempDir(), realBackendFor(t).gatewayArgs()...)
	rb := realBackendFor(t)
	const n, parts = 60000, 2
	clientWithTopic(t, g.proxy.Addr(), "gw-crash-java", parts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := iggy.Open(ctx, iggy.Options{Addr: rb.addr, PoolSize: 1, StateStream: rb.state, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	killUnderJavaLoad(t, run, g.proxy.Addr(), "gw-crash-java", n, parts, st, rb.stream, func(int) { g.killAndRestart() })
	checkExactlyOnce(t, g.proxy.Addr(), "gw-crash-java", n, parts)
	g.cur.Stop()
}
