package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// SIGTERM the gateway binary, start it again on the same data dir: every
// acknowledged record is still there, and the topic keeps its partitions.
func TestRestartKeepsRecords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gw := spawnGateway(t, dir)
	cl := clientWithTopic(t, gw.Addr, "durable", 2)
	want := produceAll(t, cl, testRecords("durable", 400))
	cl.Close()
	gw.Stop()

	gw2 := spawnGateway(t, dir)
	got := consumeN(t, gw2.Addr, "durable", len(want))
	sameRecs(t, want, got)

	// The restarted gateway keeps appending after the old records.
	cl2 := newClient(t, gw2.Addr)
	more := produceAll(t, cl2, testRecords("durable", 50))
	got = consumeN(t, gw2.Addr, "durable", len(want)+len(more))
	sameRecs(t, append(want, more...), got)
	gw2.Stop()
}

// kill -9 under a produce load: every record whose produce promise said
// "stored" before the kill is there after a restart, at its offset (with
// the default --fsync=always an ack means the write was synced).
func TestKillNineKeepsAcknowledged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gw := spawnGateway(t, dir)
	cl := newClient(t, gw.Addr,
		kgo.ProducerLinger(time.Millisecond),
		kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(5*time.Second),
	)
	createTopic(t, cl, "crash", 3)

	var (
		mu    sync.Mutex
		acked []rec
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 200000; i++ {
			r := &kgo.Record{Topic: "crash", Key: fmt.Appendf(nil, "k%d", i%13), Value: fmt.Appendf(nil, "crash value %d", i)}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked = append(acked, recOf(r))
					mu.Unlock()
				}
			})
		}
	}()
	target := 3000
	if slow {
		target = 1000
	}
	await.Until(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < target {
			return fmt.Errorf("%d of %d records acknowledged", len(acked), target)
		}
		return nil
	})
	gw.Kill()
	mu.Lock()
	atKill := len(acked)
	mu.Unlock()
	cancel()
	wg.Wait()
	cl.Close() // fails whatever is still buffered; no more acks can come
	mu.Lock()
	want := append([]rec(nil), acked...)
	mu.Unlock()
	t.Logf("%d records acknowledged when the gateway was killed (%d counted after)", atKill, len(want))

	gw2 := spawnGateway(t, dir)
	// Offsets past the acked ones may hold records whose ack was lost with
	// the process: read everything there is and check the acked subset.
	hwm := map[int32]int64{}
	for _, r := range want {
		if r.Offset+1 > hwm[r.Partition] {
			hwm[r.Partition] = r.Offset + 1
		}
	}
	got := recsOf(consume(t, gw2.Addr, "crash", reached(hwm), within(60*time.Second)))
	byPos := map[[2]int64]rec{}
	for _, r := range got {
		byPos[[2]int64{int64(r.Partition), r.Offset}] = r
	}
	lost := 0
	for _, w := range want {
		g, ok := byPos[[2]int64{int64(w.Partition), w.Offset}]
		if !ok || g != w {
			if lost++; lost <= 5 {
				t.Errorf("acknowledged record %v: after restart found %v (present %v)", w, g, ok)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost or changed by kill -9", lost, len(want))
	}
	gw2.Stop()
}
