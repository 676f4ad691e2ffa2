package iggy

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// TestFirstCallAfterServerRestart: every pooled connection is broken by a
// restart of the real server while idle; the very first calls afterwards,
// a send among them, succeed (the dead connections are found before use
// and replaced), and none of them is stored twice.
func TestFirstCallAfterServerRestart(t *testing.T) {
	// Serial: it kills and restarts a server and must see it back on the port it freed.
	for _, how := range []string{"sigterm", "sigkill"} {
		t.Run(how, func(t *testing.T) {
			srv := iggyreal.StartPrivate(t)
			opts := testOptions(srv.Addr())
			opts.CallTimeout = 10 * time.Second
			st, err := Open(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			if _, err := st.CreateTopic(ctx, "kafka", "t", 2); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Append(ctx, "kafka", "t", 0, testBatch(t, "a", 0, 3)); err != nil {
				t.Fatal(err)
			}
			if how == "sigterm" {
				if !srv.Stop(20 * time.Second) {
					t.Fatal("server did not stop on SIGTERM")
				}
			} else {
				srv.Kill()
			}
			if err := srv.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * idleProbeAfter) // idle long enough to be probed
			base, err := st.Append(ctx, "kafka", "t", 0, testBatch(t, "b", 3, 1))
			if err != nil {
				t.Fatalf("first send after the restart: %v", err)
			}
			if base != 3 {
				t.Fatalf("first send after the restart stored at %d, want 3 (acknowledged data lost?)", base)
			}
			for range 6 { // more calls than connections: each is used once
				if _, err := st.Topic(ctx, "kafka", "t"); err != nil {
					t.Fatalf("read after the restart: %v", err)
				}
			}
			got := pollAll(t, st, "kafka", "t", 0, 0, 1<<20)
			if len(got.payloads) != 4 || got.payloads[3] != "b-3" {
				t.Fatalf("after the restart the partition holds %q", got.payloads)
			}
		})
	}
}

// TestKeepaliveFindsDeadConnections: with no traffic at all, the pool
// notices a server restart by itself and every slot comes back up.
func TestKeepaliveFindsDeadConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.KeepaliveInterval = 50 * time.Millisecond })
	e.srv.DropConnections()
	await.Until(t, 5*time.Second, func() error {
		down := 0
		for _, s := range e.store.c.pool.slots {
			s.sem <- struct{}{}
			if s.c == nil || s.c.peerClosed() {
				down++
			}
			<-s.sem
		}
		if down > 0 {
			return fmt.Errorf("%d connections still dead after the drop", down)
		}
		return nil
	})
}

// TestRetryOnFreshConnection: right after the server dropped every
// connection (too soon for the idle probe), a read is answered on a fresh
// connection, but a send is not repeated by the client: its outcome is
// unknown, so it fails with bridge.ErrUnavailable and the Kafka client's
// retry (checked by the idempotence layer) decides.
func TestRetryOnFreshConnection(t *testing.T) {
	// Serial: the send must follow the drop within idleProbeAfter, which a loaded run can miss.
	e := newEnv(t, func(o *Options) { o.PoolSize = 1 })
	ctx := context.Background()
	if _, err := e.store.CreateTopic(ctx, "kafka", "t", 1); err != nil {
		t.Fatal(err)
	}
	e.srv.DropConnections()
	if _, err := e.store.Topic(ctx, "kafka", "t"); err != nil {
		t.Fatalf("read after the server dropped the connection: %v", err)
	}
	e.srv.DropConnections()
	if _, err := e.store.Append(ctx, "kafka", "t", 0, testBatch(t, "a", 0, 1)); !errors.Is(err, bridge.ErrUnavailable) {
		t.Fatalf("send on a dropped connection: %v, want bridge.ErrUnavailable", err)
	}
	if st, err := e.store.Partition(ctx, "kafka", "t", 0); err != nil || st.Next != 0 {
		t.Fatalf("partition after the failed send: %+v %v", st, err)
	}
}
