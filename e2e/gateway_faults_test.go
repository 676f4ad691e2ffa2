package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// gatewayOnSharedIggy spawns gateway binaries on the shared real server
// behind a proxy that never cuts, so clients keep one address while the
// process behind it is replaced.
type gatewayOnSharedIggy struct {
	t     *testing.T
	proxy *faultProxy
	args  []string
	cur   *process
}

func newGatewayOnSharedIggy(t *testing.T) *gatewayOnSharedIggy {
	t.Helper()
	rb := realBackendFor(t)
	g := &gatewayOnSharedIggy{t: t, proxy: newFaultProxy(t, 1<<62)}
	g.args = rb.gatewayArgs("--advertised-port=" + strconv.Itoa(g.proxy.Port()))
	g.start()
	return g
}

func (g *gatewayOnSharedIggy) start() {
	g.cur = spawnGateway(g.t, g.t.TempDir(), g.args...)
	g.proxy.SetUpstream(g.cur.Addr)
}

// killAndRestart kills the gateway process (-9) and starts a new one.
func (g *gatewayOnSharedIggy) killAndRestart() {
	g.cur.Kill()
	g.start()
}

// TestGatewayKillNineOnIggyUnderKgoLoad kills the gateway 5 times under
// the franz-go load; the Iggy server keeps running.
func TestGatewayKillNineOnIggyUnderKgoLoad(t *testing.T) {
	realServerTest(t)
	g := newGatewayOnSharedIggy(t)
	const parts = 3
	createTopic(t, newClient(t, g.proxy.Addr()), "gw-crash", parts)
	lp := startLoadProducer(t, g.proxy.Addr(), "gw-crash", parts)
	for range faultCycles {
		lp.waitAcked(2000, 90*time.Second)
		g.killAndRestart()
	}
	lp.waitAcked(2000, 90*time.Second)
	acked, sent, errs := lp.finish()
	if len(errs) > 0 {
		t.Fatalf("%d of %d records failed, first: %v", len(errs), sent, errs[0])
	}
	checkAckedOnceInOrder(t, g.proxy.Addr(), "gw-crash", acked, parts)
	g.cur.Stop()
}

// TestGatewayKillNineOnIggyUnderJavaLoad: the same with the Java producer.
func TestGatewayKillNineOnIggyUnderJavaLoad(t *testing.T) {
	realServerTest(t)
	run := javaIdem(t)
	g := newGatewayOnSharedIggy(t)
	rb := realBackendFor(t)
	const n, parts = 60000, 2
	createTopic(t, newClient(t, g.proxy.Addr()), "gw-crash-java", parts)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := iggy.Open(ctx, iggy.Options{Addr: rb.addr, PoolSize: 1, StateStream: rb.state, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := func() uint64 {
		var sum uint64
		for p := range int32(parts) {
			if ps, err := st.Partition(context.Background(), rb.stream, "gw-crash-java", p); err == nil {
				sum += ps.Next
			}
		}
		return sum
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(g.proxy.Addr(), "gw-crash-java", n, parts)
	}()
	for cycle := range faultCycles {
		from := stored()
		checkFor(t, 90*time.Second, 10*time.Millisecond, func() error {
			select {
			case <-done:
				return nil
			default:
			}
			if now := stored(); now < from+5000 {
				return fmt.Errorf("%d records stored since the last kill", now-from)
			}
			return nil
		})
		select {
		case <-done:
			t.Fatalf("the producer finished after %d of %d kills: raise n", cycle, faultCycles)
		default:
		}
		g.killAndRestart()
	}
	<-done
	if t.Failed() {
		t.FailNow()
	}
	checkExactlyOnce(t, g.proxy.Addr(), "gw-crash-java", n, parts)
	g.cur.Stop()
}
