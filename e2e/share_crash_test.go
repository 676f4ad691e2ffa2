package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// Crash tests of share groups (issue 28, durable state): franz-go share
// consumers acknowledge records while the gateway binary is killed
// (SIGKILL) or stopped (SIGTERM) and started again on the same data. An
// acknowledgement the gateway answered is durable: an accepted or rejected
// record is never delivered again, a released one is, and so is every
// record whose acknowledgement was not answered.

// onShareBackends runs fn as subtest "embedded" on the pass's backend (the
// embedded store in the default pass, the one .ci/run names in the others)
// and as "iggy-server" on the real Iggy server (default pass only); args
// are the gateway flags of the backend, none for the pass's own.
func onShareBackends(t *testing.T, fn func(t *testing.T, args ...string)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		fn(t)
	})
	t.Run("iggy-server", func(t *testing.T) {
		t.Parallel()
		realServerTest(t)
		fn(t, realBackendFor(t).gatewayArgs()...)
	})
}

// setGroupConfigs sets configs (name, value pairs) of group with
// IncrementalAlterConfigs on the GROUP resource.
func setGroupConfigs(t testing.TB, cl *kgo.Client, group string, kv ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(adminCtx(t), cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs %s: %v", group, err)
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("IncrementalAlterConfigs %s: code %d %v", group, r.ErrorCode, r.ErrorMessage)
		}
	}
}

// shareStartsAt is nil once the share-partition start offset of every
// partition of topic in group is at the partition's end: every record is
// acknowledged.
func shareStartsAt(adm *kadm.Client, group, topic string, ends map[int32]int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	described, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return err
	}
	d := described[group]
	if d.Err != nil {
		return d.Err
	}
	for p, end := range ends {
		o, ok := d.Offsets.Lookup(topic, p)
		if !ok || o.Err != nil || o.StartOffset != end {
			return fmt.Errorf("partition %d: share-partition start %+v, want %d", p, o, end)
		}
	}
	return nil
}

// ackWatch collects, for one share consumer, the partitions whose
// acknowledgements came back with an error since the last take.
type ackWatch struct {
	mu     sync.Mutex
	failed map[int32]error
}

func (w *ackWatch) callback(_ *kgo.Client, rs kgo.ShareAckResults) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range rs {
		if r.Err != nil {
			if w.failed == nil {
				w.failed = map[int32]error{}
			}
			w.failed[r.Partition] = r.Err
		}
	}
}

// take returns the partitions failed since the last take and forgets them.
func (w *ackWatch) take() map[int32]error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.failed
	w.failed = nil
	return f
}

// shareConsumer is a franz-go share consumer of topic in group whose
// acknowledgement results go to the returned watch.
func kgoShareConsumer(t testing.TB, addr, group, topic string, opts ...kgo.Opt) (*kgo.Client, *ackWatch) {
	t.Helper()
	w := &ackWatch{}
	cl := newClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ShareGroup(group),
		kgo.ShareAckCallback(w.callback), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	return cl, w
}

// ackAll acknowledges every record of rs with status and flushes; it
// returns the records whose acknowledgement the gateway answered without
// error (the partition's result was clean and the flush completed), and
// an error saying why the others were not.
func ackAll(ctx context.Context, cl *kgo.Client, w *ackWatch, rs []*kgo.Record, status func(*kgo.Record) kgo.AckStatus) ([]*kgo.Record, error) {
	w.take() // earlier results say nothing of these records
	for _, r := range rs {
		r.Ack(status(r))
	}
	fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err := cl.FlushAcks(fctx)
	cancel()
	failed := w.take()
	if err != nil {
		return nil, fmt.Errorf("flushing acknowledgements: %w", err)
	}
	var ok []*kgo.Record
	for _, r := range rs {
		if _, bad := failed[r.Partition]; !bad {
			ok = append(ok, r)
		}
	}
	for p, e := range failed {
		err = fmt.Errorf("partition %d: %w", p, e)
	}
	return ok, err
}

// shareLockMs is the acquisition lock of the crash tests' groups; a
// record's acquisition time is its AcquisitionDeadline less this.
const shareLockMs = 20000

// shareDelivery is one delivery of a value to a consumer.
type shareDelivery struct {
	consumer string
	at       time.Time // when the client read it from a ShareFetch answer
	count    int32
}

// shareFate is what happened to one value.
type shareFate struct {
	deliveries []shareDelivery
	confirmed  time.Time // when its accept was answered without error; zero: not yet
	// unanswered: an accept was sent to the gateway before the kill and
	// not answered; the gateway may or may not have stored it.
	unanswered bool
	// doubtful: an accept sent after the kill was reported failed. The
	// client reports results by partition, not by record, so an older
	// acknowledgement failing against the killed gateway marks a later
	// one of the same partition failed too: the gateway may have stored
	// it.
	doubtful bool
}

// describe lists f's deliveries for a failure message.
func (f *shareFate) describe() string {
	var b strings.Builder
	for i, d := range f.deliveries {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s at %s (count %d)", d.consumer, d.at.Format(time.StampMicro), d.count)
	}
	return b.String()
}

// shareLedger tracks every value of a share-group crash test.
type shareLedger struct {
	mu       sync.Mutex
	fates    map[string]*shareFate
	killedAt time.Time // zero until the gateway was killed
	failed   int       // accepts answered with an error or not at all
}

func newShareLedger(values []string) *shareLedger {
	l := &shareLedger{fates: map[string]*shareFate{}}
	for _, v := range values {
		l.fates[v] = &shareFate{}
	}
	return l
}

func (l *shareLedger) confirmedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, f := range l.fates {
		if !f.confirmed.IsZero() {
			n++
		}
	}
	return n
}

// consume runs a share consumer seeded with seeds that accepts every
// record it gets, until ctx ends.
func (l *shareLedger) consume(ctx context.Context, t *testing.T, name string, seeds []string, group, topic string) {
	cl, w := kgoShareConsumer(t, seeds[0], group, topic, kgo.ShareMaxRecords(50), kgo.SeedBrokers(seeds...))
	defer cl.Close()
	accept := func(*kgo.Record) kgo.AckStatus { return kgo.AckAccept }
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rs := cl.PollRecords(pctx, 50).Records()
		cancel()
		if len(rs) == 0 {
			continue
		}
		l.mu.Lock()
		for _, r := range rs {
			f := l.fates[string(r.Value)]
			if f == nil {
				l.mu.Unlock()
				t.Errorf("%s: value %q not produced by the test", name, r.Value)
				return
			}
			at := r.AcquisitionDeadline().Add(-shareLockMs * time.Millisecond)
			f.deliveries = append(f.deliveries, shareDelivery{consumer: name, at: at, count: r.DeliveryCount()})
		}
		l.mu.Unlock()
		sent := time.Now()
		ok, _ := ackAll(ctx, cl, w, rs, accept)
		answered := time.Now()
		l.mu.Lock()
		for _, r := range ok {
			if f := l.fates[string(r.Value)]; f.confirmed.IsZero() {
				f.confirmed = answered
			}
		}
		if len(ok) < len(rs) {
			l.failed += len(rs) - len(ok)
			if !l.killedAt.IsZero() && sent.After(l.killedAt) {
				okSet := map[*kgo.Record]bool{}
				for _, r := range ok {
					okSet[r] = true
				}
				for _, r := range rs {
					if !okSet[r] {
						l.fates[string(r.Value)].doubtful = true
					}
				}
			} else {
				// Sent to the gateway that was (or will be) killed: it may
				// have stored the accept without answering.
				okSet := map[*kgo.Record]bool{}
				for _, r := range ok {
					okSet[r] = true
				}
				for _, r := range rs {
					if !okSet[r] {
						l.fates[string(r.Value)].unanswered = true
					}
				}
			}
		}
		l.mu.Unlock()
	}
}

// settled is nil once every value is delivered and its accept confirmed,
// or sent before the kill and left unanswered, or (once the
// share-partition start offsets passed every record: startsDone) sent
// after it and reported failed by the client's partition-wide results
// without being delivered again: the gateway then holds it accepted, as
// the consumers accept nothing else and no record reaches the delivery
// limit here.
func (l *shareLedger) settled(startsDone bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	open := 0
	example := ""
	for v, f := range l.fates {
		if len(f.deliveries) == 0 || f.confirmed.IsZero() && !f.unanswered && !(startsDone && f.doubtful) {
			if open++; example == "" {
				example = v + ": " + f.describe()
			}
		}
	}
	if open > 0 {
		return fmt.Errorf("%d values not delivered or accepted yet (%s)", open, example)
	}
	return nil
}

// verify fails t for each delivery of a value after its accept was
// answered (at most ten are listed), once the run is over; it returns a
// summary of the deliveries around the kill for the log.
func (l *shareLedger) verify(t *testing.T, values []string) string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var again, againUnanswered, deliveredAfter, unansweredOnly, doubtfulOnly, bad, lost int
	for _, v := range values {
		f := l.fates[v]
		before, after := 0, 0
		for _, d := range f.deliveries {
			if !f.confirmed.IsZero() && d.at.After(f.confirmed) {
				if bad++; bad <= 10 {
					t.Errorf("value %s delivered to %s at %v (count %d), after its accept was answered at %v; all its deliveries: %s",
						v, d.consumer, d.at.Format(time.StampMicro), d.count, f.confirmed.Format(time.StampMicro), f.describe())
				}
			}
			if d.at.After(l.killedAt) {
				after++
			} else {
				before++
			}
		}
		if after > 0 {
			deliveredAfter++
			if !f.confirmed.IsZero() && f.confirmed.Before(l.killedAt) {
				lost++ // also counted in bad
			}
			if before > 0 {
				again++
				if f.unanswered {
					againUnanswered++
				}
			}
		}
		switch {
		case f.confirmed.IsZero() && f.unanswered:
			unansweredOnly++ // settled: its accept went unanswered, and it never came back
		case f.confirmed.IsZero():
			doubtfulOnly++ // settled: its accept was reported failed with its partition's, and it never came back
		}
	}
	if bad > 0 {
		t.Errorf("%d deliveries of values whose accept had been answered (%d values answered before the kill delivered after it)", bad, lost)
	}
	if unansweredOnly > 0 {
		t.Logf("%d values whose accept the killed gateway stored without answering (never delivered again)", unansweredOnly)
	}
	if doubtfulOnly > 0 {
		t.Logf("%d values whose accept after the kill the client reported failed with others of its partition, stored by the gateway (never delivered again)", doubtfulOnly)
	}
	return fmt.Sprintf("%d values delivered after the kill, %d of them delivered again (%d with an accept sent and unanswered before the kill); %d accepts failed or unanswered over the run",
		deliveredAfter, again, againUnanswered, l.failed)
}

// TestShareGroupGatewayKill: two franz-go share consumers accept 3000
// records of a two-partition topic with explicit acknowledgements; after a
// third of the accepts were answered the gateway binary is killed
// (SIGKILL) and started again on the same data behind the same address,
// and the consumers go on. No value whose accept was answered is delivered
// again; every value is delivered, and accepted; the values delivered
// again after the restart are ones whose accept was not answered before
// the kill.
func TestShareGroupGatewayKill(t *testing.T) {
	t.Parallel()
	onShareBackends(t, func(t *testing.T, args ...string) {
		const (
			topic, group = "share-kill", "share-kill-group"
			n, parts     = 3000, 2
		)
		start := time.Now()
		g := newProxiedGateway(t, 1<<62, t.TempDir(), args...)
		addr := g.proxy.Addr()
		prod := clientWithTopic(t, addr, topic, parts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		values, ends := produceShareValues(t, prod, topic, "share-kill", n, parts)
		setGroupConfigs(t, prod, group, "share.auto.offset.reset", "earliest",
			"share.record.lock.duration.ms", strconv.Itoa(shareLockMs))

		l := newShareLedger(values)
		stop := l.startConsumers(context.Background(), t, 2, []string{addr}, group, topic)
		defer stop()

		await.Until(t, 2*time.Minute, func() error {
			if c := l.confirmedCount(); c < n/3 {
				return fmt.Errorf("%d of %d accepts answered", c, n/3)
			}
			return nil
		})
		g.cur.Kill()
		l.mu.Lock()
		l.killedAt = time.Now()
		l.mu.Unlock()
		atKill := l.confirmedCount()
		g.start()

		adm := kadm.NewClient(prod)
		var lastErr error
		if err := await.Poll(3*time.Minute, 200*time.Millisecond, func() error {
			startsErr := shareStartsAt(adm, group, topic, ends)
			if lastErr = l.settled(startsErr == nil); lastErr != nil {
				return lastErr
			}
			lastErr = startsErr
			return lastErr
		}); err != nil {
			t.Fatalf("after the restart: %v", lastErr)
		}
		stop()

		summary := l.verify(t, values)
		t.Logf("%d values; %d accepts answered at the kill; %s; took %v", n, atKill, summary, time.Since(start).Round(time.Millisecond))
		g.cur.Stop()
	})
}

// TestShareGroupGatewayRestartRelease: a share consumer releases a third
// of the records, rejects a third and accepts the rest, every
// acknowledgement answered; the gateway binary stops (SIGTERM) and starts
// again on the same data. A new consumer gets exactly the released records,
// with a delivery count of at least 2, and never a rejected or accepted one.
func TestShareGroupGatewayRestartRelease(t *testing.T) {
	t.Parallel()
	onShareBackends(t, func(t *testing.T, args ...string) {
		const (
			topic, group = "share-release", "share-release-group"
			n            = 30
		)
		start := time.Now()
		g := newProxiedGateway(t, 1<<62, t.TempDir(), args...)
		addr := g.proxy.Addr()
		prod := clientWithTopic(t, addr, topic, 1)
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%02d", i)})
		}
		produceAll(t, prod, recs)
		setGroupConfigs(t, prod, group, "share.auto.offset.reset", "earliest",
			"share.record.lock.duration.ms", "60000")

		// r00, r03, ... are released, r01, r04, ... rejected, the rest
		// accepted; a released record that comes back is released again.
		want := map[string]kgo.AckStatus{}
		for i := range n {
			want[fmt.Sprintf("r%02d", i)] = []kgo.AckStatus{kgo.AckRelease, kgo.AckReject, kgo.AckAccept}[i%3]
		}
		first, w := kgoShareConsumer(t, addr, group, topic)
		done := map[string]bool{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for len(done) < n {
			if ctx.Err() != nil {
				t.Fatalf("the first consumer had %d of %d records acknowledged within a minute", len(done), n)
			}
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			rs := first.PollFetches(pctx).Records()
			pcancel()
			if len(rs) == 0 {
				continue
			}
			if _, err := ackAll(ctx, first, w, rs, func(r *kgo.Record) kgo.AckStatus { return want[string(r.Value)] }); err != nil {
				t.Fatalf("acknowledging %d records: %v", len(rs), err)
			}
			for _, r := range rs {
				if st, known := want[string(r.Value)]; !known || done[string(r.Value)] && st != kgo.AckRelease {
					t.Fatalf("first consumer got %q (delivery %d) again or unknown", r.Value, r.DeliveryCount())
				}
				done[string(r.Value)] = true
			}
		}
		first.Close()

		g.cur.Stop()
		g.start()

		adm := kadm.NewClient(prod)
		second, w2 := kgoShareConsumer(t, addr, group, topic)
		got := map[string]int32{}
		var lastErr error
		if err := await.Poll(time.Minute, 10*time.Millisecond, func() error {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			rs := second.PollFetches(pctx).Records()
			pcancel()
			for _, r := range rs {
				if st := want[string(r.Value)]; st != kgo.AckRelease {
					t.Errorf("after the restart got %q (delivery %d), acknowledged %v before it", r.Value, r.DeliveryCount(), st)
				}
				if _, dup := got[string(r.Value)]; dup {
					t.Errorf("after the restart got %q twice", r.Value)
				}
				got[string(r.Value)] = r.DeliveryCount()
			}
			if len(rs) > 0 {
				if _, err := ackAll(ctx, second, w2, rs, func(*kgo.Record) kgo.AckStatus { return kgo.AckAccept }); err != nil {
					t.Fatalf("accepting %d records: %v", len(rs), err)
				}
			}
			lastErr = shareStartsAt(adm, group, topic, map[int32]int64{0: n})
			return lastErr
		}); err != nil {
			t.Fatalf("after the restart, the second consumer got %v; %v", got, lastErr)
		}
		var released []string
		for v, st := range want {
			if st == kgo.AckRelease {
				released = append(released, v)
			}
		}
		sort.Strings(released)
		for _, v := range released {
			c, ok := got[v]
			switch {
			case !ok:
				t.Errorf("released %s not delivered after the restart", v)
			case c < 2:
				t.Errorf("released %s delivered after the restart with delivery count %d, want >= 2", v, c)
			}
		}
		t.Logf("%d released records delivered again after the restart, delivery counts %v; took %v",
			len(got), got, time.Since(start).Round(time.Millisecond))
		second.Close() // leaves the group while the gateway is there to answer
		g.cur.Stop()
	})
}

// produceShareValues produces n unique values prefix-NNNNN to topic's
// parts partitions, in batches of 25 records per partition in turn (so a
// share fetch acquires a few at a time), and returns them with the
// records each partition got.
func produceShareValues(t *testing.T, cl *kgo.Client, topic, prefix string, n, parts int) ([]string, map[int32]int64) {
	t.Helper()
	values := make([]string, n)
	var recs []*kgo.Record
	ends := map[int32]int64{}
	for i := range values {
		values[i] = fmt.Sprintf("%s-%05d", prefix, i)
		p := int32(i / 25 % parts)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(values[i])})
		ends[p]++
		if len(recs) == 25 || i == n-1 {
			produceAll(t, cl, recs)
			recs = nil
		}
	}
	return values, ends
}

// startConsumers runs n share consumers (a, b, ...) of group on seeds,
// counting in l, until the returned stop (idempotent; also at cleanup)
// or ctx ends. stop waits for them, at most 2 minutes: consume ends
// within its poll and flush timeouts plus the client's leave, and a
// leave that never ends fails the test instead of hanging it.
func (l *shareLedger) startConsumers(ctx context.Context, t *testing.T, n int, seeds []string, group, topic string) (stop func()) {
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range n {
		name := string(rune('a' + i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.consume(cctx, t, name, seeds, group, topic)
		}()
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Errorf("the share consumers did not stop within 2 minutes of being told to")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
