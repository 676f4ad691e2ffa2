package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
)

// idemRecords are n records, record i on partition i%parts with value
// "v-<i>", so each partition's values must read back in increasing i.
func idemRecords(topic string, n, parts int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: []byte("k"), Value: fmt.Appendf(nil, "v-%d", i)}
	}
	return out
}

// checkExactlyOnce consumes topic through addr and fails unless every
// partition holds exactly its records, each once, in produce order.
func checkExactlyOnce(t *testing.T, addr, topic string, n, parts int) {
	t.Helper()
	got := consumeN(t, addr, topic, n, within(60*time.Second))
	// consumeN stops at n; make sure nothing more is stored.
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(300*time.Millisecond))
	total := 0
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		total += fs.NumRecords()
	}
	if total != n || len(got) != n {
		t.Fatalf("%d records stored (first read %d), want exactly %d", total, len(got), n)
	}
	next := make([]int, parts)
	for i := range next {
		next[i] = i
	}
	for _, r := range got {
		want := fmt.Sprintf("v-%d", next[r.Partition])
		if r.Value != want {
			t.Fatalf("partition %d offset %d: %q, want %q (duplicate or reordering)", r.Partition, r.Offset, r.Value, want)
		}
		next[r.Partition] += parts
	}
}

// produceKgo runs a kgo idempotent producer (its default) through
// addr and returns once every record was acknowledged; during, if set, runs
// once a third of the records were acknowledged.
func produceKgo(t *testing.T, addr string, records []*kgo.Record, during func()) {
	t.Helper()
	cl := newClient(t, addr,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2048), // many small batches, several in flight
		kgo.ProducerLinger(time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.ProduceRequestTimeout(10*time.Second),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	var acked atomic.Int64
	third := int64(len(records) / 3)
	reached := make(chan struct{})
	for _, r := range records {
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			if acked.Add(1) == third {
				close(reached)
			}
			wg.Done()
		})
	}
	if during != nil {
		<-reached // mid-run, with batches still in flight
		during()
	}
	wg.Wait()
	if p := failed.Load(); p != nil {
		t.Fatalf("produce: %v", *p)
	}
}

// proxiedInProcess starts an in-process gateway behind a proxy that cuts
// every cutEvery-th Produce (the gateway advertises the proxy) and creates
// topic on it with parts partitions.
func proxiedInProcess(t *testing.T, cutEvery int64, topic string, parts int32) *faultProxy {
	t.Helper()
	proxy := newFaultProxy(t, cutEvery)
	gw := startGateway(t, func(h *handlers.Config, _ *loop.Config) { h.AdvertisedPort = int32(proxy.Port()) })
	proxy.SetUpstream(gw.Addr)
	clientWithTopic(t, gw.Addr, topic, parts)
	return proxy
}

func TestIdempotentKgoThroughFaultyProxy(t *testing.T) {
	t.Parallel()
	const n, parts = 3000, 2
	proxy := proxiedInProcess(t, 7, "idem-kgo", parts)
	produceKgo(t, proxy.Addr(), idemRecords("idem-kgo", n, parts), nil)
	if proxy.cuts.Load() < 3 {
		t.Fatalf("only %d connections cut over %d produce requests: the test did not exercise retries", proxy.cuts.Load(), proxy.produces.Load())
	}
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-kgo", n, parts)
}

// A gateway restart (SIGKILL, then a new process on the same data) in the
// middle of a faulty run: retries that reach the new process are still
// recognised, from the message ids it finds in the store.
func TestIdempotentKgoAcrossGatewayRestart(t *testing.T) {
	// Serial: the proxy gives the gateway 300 ms to store the cut request before the kill.
	g := newProxiedGateway(t, 11, t.TempDir())
	proxy := g.proxy
	const n, parts = 3000, 2
	g.createTopic("idem-restart", parts)
	produceKgo(t, proxy.Addr(), idemRecords("idem-restart", n, parts), func() {
		proxy.pauseOnCut.Store(true)
		select {
		case <-proxy.paused:
		case <-time.After(30 * time.Second):
			t.Fatal("no produce request was cut")
		}
		// The cut request was stored but not acknowledged; its retry
		// reaches only the new process.
		g.killAndRestart()
	})
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-restart", n, parts)
	if !strings.Contains(g.cur.Log(), "verdict=duplicate") {
		t.Errorf("the restarted gateway saw no duplicate batch: the retry path after a restart was not exercised")
	}
}

func TestIdempotentJavaThroughFaultyProxy(t *testing.T) {
	t.Parallel()
	run := javaIdem(t)
	const n, parts = 3000, 2
	proxy := proxiedInProcess(t, 5, "idem-java", parts)
	run(proxy.Addr(), "idem-java", n, parts)
	if t.Failed() {
		t.FailNow()
	}
	if proxy.cuts.Load() < 3 {
		t.Fatalf("only %d connections cut over %d produce requests", proxy.cuts.Load(), proxy.produces.Load())
	}
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-java", n, parts)
}

// The Java producer across a gateway restart right after a cut request.
func TestIdempotentJavaAcrossGatewayRestart(t *testing.T) {
	// Serial: the proxy gives the gateway 300 ms to store the cut request before the kill.
	run := javaIdem(t)
	g := newProxiedGateway(t, 9, t.TempDir())
	proxy := g.proxy
	const n, parts = 20000, 2
	g.createTopic("idem-java-restart", parts)
	proxy.pauseOnCut.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(proxy.Addr(), "idem-java-restart", n, parts)
	}()
	select {
	case <-proxy.paused:
		g.killAndRestart()
	case <-done:
		t.Fatal("the producer finished before any request was cut")
	case <-time.After(60 * time.Second):
		t.Fatal("no produce request was cut")
	}
	<-done
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d produce requests, %d connections cut", proxy.produces.Load(), proxy.cuts.Load())
	checkExactlyOnce(t, proxy.Addr(), "idem-java-restart", n, parts)
	if !strings.Contains(g.cur.Log(), "verdict=duplicate") {
		t.Errorf("the restarted gateway saw no duplicate batch: the retry path after a restart was not exercised")
	}
}
