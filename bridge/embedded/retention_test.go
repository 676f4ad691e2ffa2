package embedded

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
)

// fakeClock is a settable Options.clock.
type fakeClock struct{ us atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.UnixMicro(c.us.Load()) }
func (c *fakeClock) set(us uint64)       { c.us.Store(int64(us)) }
func (c *fakeClock) add(d time.Duration) { c.us.Add(d.Microseconds()) }

// openSwept opens a store whose sweeper does not run by itself (the test
// calls sweep) and whose clock the test sets.
func openSwept(t *testing.T, dir string, c *fakeClock) *Store {
	t.Helper()
	s, err := Open(dir, Options{Sync: SyncAlways, Logger: quietLogger(), RetentionCheckInterval: -1, clock: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sweptNow is openSwept on a fresh directory with its clock set to now,
// where it stays; it is closed when the test ends.
func sweptNow(t *testing.T) *Store {
	t.Helper()
	c := &fakeClock{}
	c.set(uint64(time.Now().UnixMicro()))
	s := openSwept(t, t.TempDir(), c)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func mustSweep(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.sweep(ctx); err != nil {
		t.Fatal(err)
	}
}

func wantState(t *testing.T, s *Store, topic string, part int32, want bridge.PartitionState) {
	t.Helper()
	if st, err := s.Partition(ctx, "kafka", topic, part); err != nil || st != want {
		t.Fatalf("%s/%d: %+v %v, want %+v", topic, part, st, err, want)
	}
}

// TestRetentionTime: the leading batches whose newest record is older
// than retention.ms go, whole, at the next sweep; a batch with one recent
// record stays whole; a compact-only topic keeps everything, compact,delete
// does not; the new start survives a reopen and offsets continue.
func TestRetentionTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var c fakeClock
	const t0 = uint64(1_700_000_000_000_000) // µs
	c.set(t0)
	s, reopen := reopenable(t, dir, func(dir string) *Store { return openSwept(t, dir, &c) })
	old := t0 - 10_000_000 // 10 s before t0
	for _, name := range []string{"del", "compact", "both"} {
		cfg := bridge.TopicConfigs{"retention.ms": "2000"}
		switch name {
		case "compact":
			cfg["cleanup.policy"] = "compact"
		case "both":
			cfg["cleanup.policy"] = "compact,delete"
		}
		if _, err := s.CreateTopicWithConfigs(ctx, "kafka", name, 1, cfg); err != nil {
			t.Fatal(err)
		}
		for _, b := range [][]byte{
			makeBatch(t, "a", 3, old),          // 0-2: expired
			makeBatch(t, "b", 3, old),          // 3-5: expired
			makeBatch(t, "c", 3, t0-1_000_000), // 6-8: 1 s old, kept
			makeBatch(t, "d", 2, t0-2_500_000), // 9-10: older, but after a kept one
		} {
			if _, err := s.Append(ctx, "kafka", name, 0, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	info, _ := s.Topic(ctx, "kafka", "del")
	mustSweep(t, s)
	wantState(t, s, "del", 0, bridge.PartitionState{Earliest: 6, Next: 11})
	wantState(t, s, "both", 0, bridge.PartitionState{Earliest: 6, Next: 11})
	wantState(t, s, "compact", 0, bridge.PartitionState{Earliest: 0, Next: 11})
	if n := rawBatches(t, s, info.ID, 0); n != 2 {
		t.Fatalf("%d batches stored, want 2", n)
	}
	if got := pollAll(t, s, "del", 0, 0); len(got) == 0 || got[0].offset != 6 {
		t.Fatalf("first readable after the sweep: %+v", got)
	}
	mustSweep(t, s) // nothing more expired: nothing changes
	wantState(t, s, "del", 0, bridge.PartitionState{Earliest: 6, Next: 11})

	c.add(3 * time.Second) // now everything is older than 2 s
	mustSweep(t, s)
	wantState(t, s, "del", 0, bridge.PartitionState{Earliest: 11, Next: 11})
	if n := rawBatches(t, s, info.ID, 0); n != 0 {
		t.Fatalf("%d batches left", n)
	}

	s = reopen()
	wantState(t, s, "del", 0, bridge.PartitionState{Earliest: 11, Next: 11})
	if off, err := s.Append(ctx, "kafka", "del", 0, makeBatch(t, "e", 1, t0)); err != nil || off != 11 {
		t.Fatalf("append after expiry: %d %v", off, err)
	}
	// A retention.ms past the epoch deletes nothing (no overflow).
	if err := s.SetTopicConfigs(ctx, "kafka", "del", bridge.TopicConfigs{"retention.ms": "9223372036854775807"}); err != nil {
		t.Fatal(err)
	}
	mustSweep(t, s)
	wantState(t, s, "del", 0, bridge.PartitionState{Earliest: 11, Next: 12})
	// A config change takes effect at the next sweep: no retention, kept.
	if err := s.SetTopicConfigs(ctx, "kafka", "del", bridge.TopicConfigs{"retention.ms": "-1"}); err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour)
	mustSweep(t, s)
	wantState(t, s, "del", 0, bridge.PartitionState{Earliest: 11, Next: 12})
	if err := s.SetTopicConfigs(ctx, "kafka", "del", bridge.TopicConfigs{"retention.ms": "0"}); err != nil {
		t.Fatal(err)
	}
	mustSweep(t, s)
	wantState(t, s, "del", 0, bridge.PartitionState{Earliest: 12, Next: 12})
}

// TestRetentionBytes: per partition, the oldest batches go while the
// batches after them alone still hold retention.bytes (Kafka's rule);
// retention.bytes 0 empties the partition; other partitions are untouched
// by each other's size; a DeleteRecords start inside a batch is kept.
func TestRetentionBytes(t *testing.T) {
	t.Parallel()
	s := sweptNow(t)
	one := len(makeBatch(t, "x", 2, 1)) // every batch below is this size
	if _, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 2, bridge.TopicConfigs{"retention.bytes": "0"}); err != nil {
		t.Fatal(err)
	}
	info, _ := s.Topic(ctx, "kafka", "t")
	for i := 0; i < 5; i++ { // partition 0: offsets 0-9 in 5 batches; partition 1: 1 batch
		if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 2, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, "x", 2, 1)); err != nil {
		t.Fatal(err)
	}
	set := func(n int) {
		t.Helper()
		if err := s.SetTopicConfigs(ctx, "kafka", "t", bridge.TopicConfigs{"retention.bytes": itoa(n)}); err != nil {
			t.Fatal(err)
		}
	}
	set(2*one + 1) // the last two batches are under it: three stay
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 4, Next: 10})
	wantState(t, s, "t", 1, bridge.PartitionState{Earliest: 0, Next: 2})
	if n := rawBatches(t, s, info.ID, 0); n != 3 {
		t.Fatalf("%d batches stored, want 3", n)
	}
	if _, err := s.DeleteRecords(ctx, "kafka", "t", 0, 5); err != nil {
		t.Fatal(err)
	}
	mustSweep(t, s) // still three batches (one straddled): start stays 5
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 5, Next: 10})
	set(2 * one) // exactly two reach it: the third goes
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 6, Next: 10})
	set(0)
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 10, Next: 10})
	wantState(t, s, "t", 1, bridge.PartitionState{Earliest: 2, Next: 2})
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRetentionSweeper: the background sweeper applies retention by
// itself within a few intervals, tells OnTrim, and Close stops it.
func TestRetentionSweeper(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Options{Sync: SyncAlways, Logger: quietLogger(), RetentionCheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	trims := make(chan int32, 16)
	s.OnTrim(func(stream, topic string, part int32) {
		if stream == "kafka" && topic == "t" {
			select {
			case trims <- part:
			default:
			}
		}
	})
	if _, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 1, bridge.TopicConfigs{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	now := uint64(time.Now().UnixMicro())
	if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "old", 2, now-60_000_000)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "new", 2, now)); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-trims:
		if p != 0 {
			t.Fatalf("trim of partition %d", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sweeper did not trim within 10 s")
	}
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 2, Next: 4})
	// The new batch expires a second later, by the real clock.
	await.Until(t, 10*time.Second, func() error {
		if st, _ := s.Partition(ctx, "kafka", "t", 0); st.Earliest != 4 {
			return fmt.Errorf("not expired: %+v", st)
		}
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.retDone:
	default:
		t.Fatal("the sweeper runs on after Close")
	}
}

// While the disk is full the sweep deletes nothing (a range delete needs
// WAL space and frees none until compaction); it catches up once writes
// are served again.
func TestRetentionPausedWhileDiskFull(t *testing.T) {
	t.Parallel()
	s := sweptNow(t)
	if _, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 1, bridge.TopicConfigs{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "old", 2, 1)); err != nil {
		t.Fatal(err)
	}
	s.health.diskFull("write", "test", syscall.ENOSPC)
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 0, Next: 2})
	s.health.maybeRecover()
	if h, _ := s.Health(); h.State != bridge.Healthy {
		t.Fatalf("not recovered: %+v", h)
	}
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 2, Next: 2})
}

// The size behind retention.bytes stays the real stored size across a
// reopen, DeleteRecords, retention and new appends.
func TestRetentionBytesAccounting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var c fakeClock
	c.set(uint64(time.Now().UnixMicro()))
	s, reopen := reopenable(t, dir, func(dir string) *Store { return openSwept(t, dir, &c) })
	one := len(makeBatch(t, "x", 2, 1))
	info, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendN := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 2, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The size retention.bytes measures is the live batches' (those
	// ending above the start): retention takes the oldest one exactly
	// when the rest alone still hold the limit.
	check := func(wantBatches int) {
		t.Helper()
		p := s.topics["kafka"]["t"].parts[0]
		if real := liveBytes(t, p); real != int64(wantBatches*one) {
			t.Fatalf("live batches hold %d bytes, want %d batches of %d", real, wantBatches, one)
		}
		start := p.log.Earliest()
		if got, err := p.log.OversizeBefore(int64((wantBatches-1)*one + 1)); err != nil || got != start {
			t.Fatalf("size rule at %d batches + 1 byte moves the start to %d (%v), want %d", wantBatches-1, got, err, start)
		}
		second := liveBases(t, p)[1]
		if got, err := p.log.OversizeBefore(int64((wantBatches - 1) * one)); err != nil || got != second {
			t.Fatalf("size rule at %d batches moves the start to %d (%v), want %d", wantBatches-1, got, err, second)
		}
	}
	_ = info
	appendN(5) // offsets 0-9
	s = reopen()
	appendN(2) // offsets 10-13
	// One batch from before Open goes, the next one straddles.
	if _, err := s.DeleteRecords(ctx, "kafka", "t", 0, 3); err != nil {
		t.Fatal(err)
	}
	check(6)
	if err := s.SetTopicConfigs(ctx, "kafka", "t", bridge.TopicConfigs{"retention.bytes": strconv.Itoa(3*one + 1)}); err != nil {
		t.Fatal(err)
	}
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 6, Next: 14})
	check(4)
	if _, err := s.DeleteRecords(ctx, "kafka", "t", 0, 11); err != nil { // across the Open point
		t.Fatal(err)
	}
	check(2)
	appendN(3)
	check(5)
	mustSweep(t, s)
	wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 12, Next: 20}) // 3 batches alone are under the limit: 4 stay
	check(4)
}
