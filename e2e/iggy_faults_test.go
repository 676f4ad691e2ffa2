package e2e

// Faults on the real Iggy server: its process killed (-9) or stopped
// (SIGTERM) under produce and consume load, and the gateway killed in front
// of it. After each run every acknowledged record must be there exactly
// once, in order per partition, with the default --fsync=always (topics
// created with enforce_fsync and messages_required_to_save=1).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
)

// faultCycles is how many times each test kills its target.
const faultCycles = 5

// loadProducer produces record i of a run to partition i%parts with value
// "v-<i>" until stopped, with franz-go's defaults: acks=all, idempotent,
// retries until the delivery timeout.
type loadProducer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	parts int

	mu     sync.Mutex
	acked  []rec
	errs   []error
	sent   int
	stop   chan struct{}
	wg     sync.WaitGroup
	nacked atomic.Int64
}

func startLoadProducer(t *testing.T, addr, topic string, parts int) *loadProducer {
	t.Helper()
	lp := &loadProducer{t: t, topic: topic, parts: parts, stop: make(chan struct{})}
	lp.cl = newClient(t, addr,
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.ProduceRequestTimeout(15*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MaxBufferedRecords(20000),
	)
	lp.wg.Add(1)
	go lp.run()
	return lp
}

func (lp *loadProducer) run() {
	defer lp.wg.Done()
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-lp.stop:
			return
		default:
		}
		r := &kgo.Record{Topic: lp.topic, Partition: int32(i % lp.parts), Value: fmt.Appendf(nil, "v-%d", i)}
		lp.wg.Add(1)
		lp.mu.Lock()
		lp.sent++
		lp.mu.Unlock()
		lp.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer lp.wg.Done()
			lp.mu.Lock()
			defer lp.mu.Unlock()
			if err != nil {
				lp.errs = append(lp.errs, err)
				return
			}
			lp.acked = append(lp.acked, recOf(r))
			lp.nacked.Add(1)
		})
	}
}

// waitAcked waits until n more records than at the call were acknowledged.
func (lp *loadProducer) waitAcked(n int64, timeout time.Duration) {
	lp.t.Helper()
	target := lp.nacked.Load() + n
	await.Until(lp.t, timeout, func() error {
		if got := lp.nacked.Load(); got < target {
			return fmt.Errorf("%d of %d records acknowledged", got, target)
		}
		return nil
	})
}

// finish stops producing, waits for every outstanding record to be
// acknowledged or failed, fails t if any failed, and returns the
// acknowledged ones.
func (lp *loadProducer) finish() []rec {
	lp.t.Helper()
	close(lp.stop)
	lp.wg.Wait()
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if len(lp.errs) > 0 {
		lp.t.Fatalf("%d of %d records failed, first: %v", len(lp.errs), lp.sent, lp.errs[0])
	}
	return append([]rec(nil), lp.acked...)
}

// checkAckedOnceInOrder reads the whole topic and fails unless every
// acknowledged record is at its acknowledged offset, no value is stored
// twice, and each partition's values rise (produce order).
func checkAckedOnceInOrder(t *testing.T, addr, topic string, acked []rec, parts int) {
	t.Helper()
	hwm := map[int32]int64{}
	for p := range int32(parts) {
		hwm[p] = 0
	}
	for _, r := range acked {
		hwm[r.Partition] = max(hwm[r.Partition], r.Offset+1)
	}
	got := recsOf(consume(t, addr, topic, reached(hwm), within(90*time.Second)))
	seen := map[string]bool{}
	byPos := map[[2]int64]rec{}
	last := map[int32]int{}
	for _, r := range got {
		if seen[r.Value] {
			t.Fatalf("value %q stored twice (partition %d offset %d)", r.Value, r.Partition, r.Offset)
		}
		seen[r.Value] = true
		i, err := strconv.Atoi(strings.TrimPrefix(r.Value, "v-"))
		if err != nil {
			t.Fatalf("unexpected value %q", r.Value)
		}
		if prev, ok := last[r.Partition]; ok && i <= prev {
			t.Fatalf("partition %d: v-%d after v-%d (reordered)", r.Partition, i, prev)
		}
		last[r.Partition] = i
		byPos[[2]int64{int64(r.Partition), r.Offset}] = r
	}
	lost := 0
	for _, w := range acked {
		if g, ok := byPos[[2]int64{int64(w.Partition), w.Offset}]; !ok || g.Value != w.Value {
			if lost++; lost <= 5 {
				t.Errorf("acknowledged %v: found %v (present %v)", w, g, ok)
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged records lost or moved", lost, len(acked))
	}
	t.Logf("%d records read, %d acknowledged, all present once and in order", len(got), len(acked))
}

// TestIggyKillNineUnderKgoLoad kills the Iggy server 5 times under an
// acks=all idempotent franz-go load through the gateway.
func TestIggyKillNineUnderKgoLoad(t *testing.T) {
	// Serial: restarts its Iggy server on the same port, which a neighbour's connection could take meanwhile.
	gw, srv := privateIggyGateway(t)
	const parts = 4
	clientWithTopic(t, gw.Addr, "crash", parts)
	lp := startLoadProducer(t, gw.Addr, "crash", parts)
	for cycle := range faultCycles {
		lp.waitAcked(2000, 90*time.Second)
		srv.Kill()
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond) // down for a moment, as a crash-looping server
		if err := srv.Restart(context.Background()); err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
	}
	lp.waitAcked(2000, 90*time.Second)
	acked := lp.finish()
	checkAckedOnceInOrder(t, gw.Addr, "crash", acked, parts)
}

// TestIggyKillNineUnderJavaLoad: the same with the Java client's
// idempotent producer (acks=all), which must finish without an error and
// leave every record stored exactly once, in order.
func TestIggyKillNineUnderJavaLoad(t *testing.T) {
	// Serial: restarts its Iggy server on the same port, which a neighbour's connection could take meanwhile.
	run := javaIdem(t)
	gw, srv := privateIggyGateway(t)
	const n, parts = 60000, 2
	clientWithTopic(t, gw.Addr, "crash-java", parts)
	killUnderJavaLoad(t, run, gw.Addr, "crash-java", n, parts, gw.Store, gw.Stream, func(cycle int) {
		srv.Kill()
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond) // down for a moment, as a crash-looping server
		if err := srv.Restart(context.Background()); err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
	})
	checkExactlyOnce(t, gw.Addr, "crash-java", n, parts)
}

// killUnderJavaLoad runs the Java idempotent producer (run, from javaIdem)
// of n records to topic's parts partitions through addr, and calls kill
// faultCycles times, each once another 5000 records are in store (topic in
// stream); it fails if the producer finishes before the last kill, and
// returns when the producer has finished.
func killUnderJavaLoad(t *testing.T, run func(addr, topic string, n, parts int), addr, topic string, n, parts int,
	store bridge.Backend, stream string, kill func(cycle int)) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(addr, topic, n, parts)
	}()
	stored := func() uint64 {
		var sum uint64
		for p := range int32(parts) {
			if st, err := store.Partition(context.Background(), stream, topic, p); err == nil {
				sum += st.Next
			}
		}
		return sum
	}
	for cycle := range faultCycles {
		from := stored()
		await.Until(t, 90*time.Second, func() error {
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
		kill(cycle)
	}
	<-done
	if t.Failed() {
		t.FailNow()
	}
}

// TestIggySigtermMidStream: the Iggy server is stopped cleanly and started
// again while a producer and a consumer run; neither sees an error, and the
// consumer reads every record once, in order.
func TestIggySigtermMidStream(t *testing.T) {
	// Serial: restarts its Iggy server on the same port, which a neighbour's connection could take meanwhile.
	gw, srv := privateIggyGateway(t)
	const parts = 2
	clientWithTopic(t, gw.Addr, "stream", parts)
	lp := startLoadProducer(t, gw.Addr, "stream", parts)

	cons := newClient(t, gw.Addr, kgo.ConsumeTopics("stream"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	var (
		cmu      sync.Mutex
		consumed int
		fetchErr error
		last     = map[int32]int{}
	)
	cctx, ccancel := context.WithCancel(context.Background())
	cdone := make(chan struct{})
	go func() {
		defer close(cdone)
		for cctx.Err() == nil {
			fs := cons.PollFetches(cctx)
			cmu.Lock()
			for _, fe := range fs.Errors() {
				if cctx.Err() == nil && fetchErr == nil {
					fetchErr = fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
				}
			}
			fs.EachRecord(func(r *kgo.Record) {
				i, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "v-"))
				if prev, ok := last[r.Partition]; ok && i <= prev && fetchErr == nil {
					fetchErr = fmt.Errorf("partition %d: v-%d read after v-%d", r.Partition, i, prev)
				}
				last[r.Partition] = i
				consumed++
			})
			cmu.Unlock()
		}
	}()

	for cycle := range 2 {
		lp.waitAcked(3000, 90*time.Second)
		if !srv.Stop(30 * time.Second) {
			t.Fatalf("cycle %d: iggy-server did not exit on SIGTERM", cycle)
		}
		if err := srv.Restart(context.Background()); err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
	}
	lp.waitAcked(3000, 90*time.Second)
	acked := lp.finish()
	await.Until(t, 60*time.Second, func() error {
		cmu.Lock()
		defer cmu.Unlock()
		if fetchErr != nil {
			return nil
		}
		if consumed < len(acked) {
			return fmt.Errorf("consumed %d of %d", consumed, len(acked))
		}
		return nil
	})
	ccancel()
	<-cdone
	cmu.Lock()
	defer cmu.Unlock()
	if fetchErr != nil {
		t.Fatalf("consumer: %v", fetchErr)
	}
	if consumed != len(acked) {
		t.Fatalf("consumer read %d records, %d were acknowledged", consumed, len(acked))
	}
	checkAckedOnceInOrder(t, gw.Addr, "stream", acked, parts)
}
