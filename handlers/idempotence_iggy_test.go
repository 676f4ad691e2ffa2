package handlers

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// The same state rules over the Iggy backend (bridge/iggy talking to the
// iggytest server): the rebuild reads the partition's tail through Iggy
// polls, and producer-id marks live in the server's state stream.
func TestIdempotentOverIggyStore(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := iggyServer(t)
	open := func() *Gateway {
		st, err := iggy.Open(context.Background(), iggy.Options{Addr: srv.Addr(), PoolSize: 2, CallTimeout: 2 * time.Second, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return newGatewayOn(t, st)
	}
	g := open()
	createTopic(t, g, "iggy-idem", 1)
	first := initPID(t, g, 4, -1, -1)
	if first.ErrorCode != 0 {
		t.Fatalf("init: %+v", first)
	}
	pid := first.ProducerID
	for i := 0; i < 4; i++ {
		wantProduce(t, produceIdem(t, g, "iggy-idem", idemBatch(pid, 0, int32(5*i), 5, "a")), 0, int64(5*i))
	}
	wantProduce(t, produceIdem(t, g, "iggy-idem", idemBatch(pid, 0, 5, 5, "a")), 0, 5)

	// A "restarted" gateway: fresh state and a fresh client.
	g2 := open()
	g2.Producers = NewProducerIDs(7, time.UnixMilli(1))
	wantProduce(t, produceIdem(t, g2, "iggy-idem", idemBatch(pid, 0, 15, 5, "a")), 0, 15)
	wantProduce(t, produceIdem(t, g2, "iggy-idem", idemBatch(pid, 0, 20, 5, "a")), 0, 20)
	if n := hwm(t, g2, "iggy-idem"); n != 25 {
		t.Fatalf("stored %d messages, want 25", n)
	}
	second := initPID(t, g2, 4, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID <= pid {
		t.Fatalf("after restart id %d, before %d", second.ProducerID, pid)
	}
}
