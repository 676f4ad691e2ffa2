package e2e

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/loop"
)

// withConnLimits sets the loop's connection caps and frame deadline, as
// --max-connections, --max-connections-per-addr and --frame-timeout-ms do.
func withConnLimits(max, perAddr int, frameTimeout time.Duration) gwOption {
	return func(_ *handlers.Config, l *loop.Config) {
		l.MaxConnections, l.MaxConnectionsPerAddr, l.FrameTimeout = max, perAddr, frameTimeout
	}
}

// Slowloris: one host opens more connections than its share and leaves a
// half-sent request on each. Its connections beyond the per-address cap are
// refused, the ones it got are closed FrameTimeout after their first byte,
// the refusals are logged once, and a franz-go client on another address
// creates a topic, produces and consumes while they are open.
func TestSlowlorisOtherClientsStillConnect(t *testing.T) {
	// Serial: timed against an 8 s frame timeout that a loaded neighbour would eat into.
	const (
		maxConns = 24
		perAddr  = 8
		// Long enough that the client below finishes well inside it even
		// on a loaded machine; the open-count check proves it did.
		frameTimeout = 8 * time.Second
		attackers    = 3 * maxConns // more than every slot of the gateway
	)
	gw := startGateway(t, withConnLimits(maxConns, perAddr, frameTimeout))

	frame := frameOf(produceReq("slow", nil), 9, 7)
	start := time.Now()
	var slow []*wire
	for i := 0; i < attackers; i++ {
		w, err := dialWireFrom(t, "127.0.0.2", gw.Addr)
		if err != nil {
			t.Fatalf("attacker dial %d: %v", i, err)
		}
		// The size prefix and a few header bytes, then nothing.
		_ = w.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = w.c.Write(frame[:9])
		slow = append(slow, w)
	}

	cl := newClient(t, gw.Addr) // from 127.0.0.1
	createTopic(t, cl, "fair", 1)
	want := produceAll(t, cl, testRecords("fair", 20))
	sameRecs(t, want, consumeN(t, gw.Addr, "fair", len(want)))

	// Exactly perAddr attacker connections were admitted and are still
	// open (so the client above ran while they were); the rest were
	// closed at once.
	var openNow []*wire
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range slow {
		wg.Add(1)
		go func(w *wire) {
			defer wg.Done()
			if w.open(300 * time.Millisecond) {
				mu.Lock()
				openNow = append(openNow, w)
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(openNow) != perAddr {
		t.Fatalf("%d slow connections open, want the per-address cap %d", len(openNow), perAddr)
	}
	// They go at the frame timeout (not the 600 s idle timeout).
	for _, w := range openNow {
		if w.open(frameTimeout + 3*time.Second) {
			t.Fatalf("a slow connection is still open %v after its first byte", time.Since(start))
		}
	}
	if took := time.Since(start); took < frameTimeout {
		t.Fatalf("slow connections closed after %v, before the frame timeout %v", took, frameTimeout)
	}
	log := gw.Log.String()
	if n := strings.Count(log, "per-address connection cap"); n != 1 {
		t.Fatalf("%d refusal log lines for %d refusals, want 1 (rate-limited)", n, attackers-perAddr)
	}
	if !strings.Contains(log, "reason=frame_timeout") {
		t.Fatal("no frame_timeout close in the log")
	}
}

// The per-address cap: connections beyond it from 127.0.0.1 are refused
// while 127.0.0.2 still connects, and a closed connection frees its slot.
func TestPerAddrConnectionCap(t *testing.T) {
	t.Parallel()
	const perAddr = 4
	gw := startGateway(t, withConnLimits(64, perAddr, 0))
	var held []*wire
	for i := 0; i < perAddr; i++ {
		w, err := dialWireFrom(t, "127.0.0.1", gw.Addr)
		if err != nil || !w.served() {
			t.Fatalf("connection %d under the cap not served (%v)", i, err)
		}
		held = append(held, w)
	}
	for i := 0; i < 5; i++ {
		w, err := dialWireFrom(t, "127.0.0.1", gw.Addr)
		if err == nil && w.served() {
			t.Fatalf("connection %d over the cap from 127.0.0.1 was served", perAddr+i)
		}
	}
	w2, err := dialWireFrom(t, "127.0.0.2", gw.Addr)
	if err != nil || !w2.served() {
		t.Fatalf("127.0.0.2 refused while 127.0.0.1 was at its cap (%v)", err)
	}
	cl := clientWithTopic(t, gw.Addr, "peraddr", 1, kgoDialFrom("127.0.0.3"))
	produceAll(t, cl, testRecords("peraddr", 5))

	held[0].c.Close()
	await.Until(t, 5*time.Second, func() error {
		w, err := dialWireFrom(t, "127.0.0.1", gw.Addr)
		if err != nil {
			return err
		}
		if !w.served() {
			return errors.New("slot not given back yet")
		}
		return nil
	})
}

// kgoDialFrom makes a franz-go client connect from local address src.
func kgoDialFrom(src string) kgo.Opt {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return kgo.Dialer(d.DialContext)
}
