package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/internal/await"
)

var ctx = context.Background()

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openStore(t testing.TB, dir string, policy SyncPolicy) *Store {
	t.Helper()
	s, err := Open(dir, Options{Sync: policy, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reopenableStore is a store with policy in a fresh directory, reopenable
// (see reopenable).
func reopenableStore(t testing.TB, policy SyncPolicy) (s *Store, reopen func() *Store) {
	t.Helper()
	return reopenable(t, t.TempDir(), func(dir string) *Store { return openStore(t, dir, policy) })
}

// reopenable is the store open makes on dir; reopen closes it (the close
// must succeed) and has open make it again on dir, as a restarted gateway
// does. The store reopen returns is closed when the test ends.
func reopenable(t testing.TB, dir string, open func(dir string) *Store) (s *Store, reopen func() *Store) {
	t.Helper()
	s = open(dir)
	return s, func() *Store {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(dir)
		again := s
		t.Cleanup(func() { _ = again.Close() })
		return again
	}
}

// topicStore is a store in a fresh directory holding topic "t" of parts
// partitions in stream "kafka"; it is closed when the test ends.
func topicStore(t testing.TB, policy SyncPolicy, parts int32) *Store {
	t.Helper()
	s := openStore(t, t.TempDir(), policy)
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.CreateTopic(ctx, "kafka", "t", parts); err != nil {
		t.Fatal(err)
	}
	return s
}

// makeBatch builds a native Iggy batch of n messages whose payloads are
// "<tag>-<i>" and whose origin timestamps are origin, origin+1, ...
func makeBatch(t testing.TB, tag string, n int, origin uint64) []byte {
	t.Helper()
	var bb bridge.IggyBatchBuilder
	buf := bb.Begin(nil, origin)
	var err error
	for i := 0; i < n; i++ {
		buf, err = bb.Append(buf, [16]byte{}, origin+uint64(i), fmt.Appendf(nil, "%s-%d", tag, i), nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	if buf, err = bb.Finish(buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

// polled is one message read back through Poll.
type polled struct {
	offset  uint64
	payload string
}

// pollAll reads every visible message at or after from.
func pollAll(t testing.TB, s *Store, topic string, part int32, from uint64) []polled {
	t.Helper()
	var out []polled
	var perr error
	err := s.Poll(ctx, "kafka", topic, part, from, 1<<30, func(b []byte) bool {
		v, err := bridge.VerifyIggyBatch(b)
		if err != nil {
			perr = err
			return false
		}
		it := bridge.NewIggyMessageIter(v)
		for it.Next() {
			if m := it.Message(); m.Offset >= from {
				out = append(out, polled{m.Offset, string(m.Payload)})
			}
		}
		perr = it.Err()
		return perr == nil
	})
	if err != nil || perr != nil {
		t.Fatal(err, perr)
	}
	return out
}

func TestTopicCatalog(t *testing.T) {
	t.Parallel()
	s := openStore(t, t.TempDir(), SyncAlways)
	defer s.Close()
	a, err := s.CreateTopic(ctx, "kafka", "a", 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateTopic(ctx, "kafka", "b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "other", "a", 1); err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.Partitions != 3 || a.CreatedAt == 0 {
		t.Fatalf("bad infos %+v %+v", a, b)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "a", 1); !errors.Is(err, bridge.ErrTopicExists) {
		t.Fatalf("dup create: %v", err)
	}
	for _, n := range []int32{0, -1, MaxPartitions + 1} {
		if _, err := s.CreateTopic(ctx, "kafka", "bad", n); err == nil {
			t.Fatalf("%d partitions accepted", n)
		}
	}
	list, _ := s.Topics(ctx, "kafka")
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Fatalf("list %+v", list)
	}
	if got, _ := s.Topic(ctx, "kafka", "a"); got != a {
		t.Fatalf("topic %+v want %+v", got, a)
	}
	if err := s.DeleteTopic(ctx, "kafka", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Topic(ctx, "kafka", "a"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("deleted topic: %v", err)
	}
	if err := s.DeleteTopic(ctx, "kafka", "a"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("double delete: %v", err)
	}
	if list, _ := s.Topics(ctx, "missing"); len(list) != 0 {
		t.Fatalf("missing stream lists %v", list)
	}
	if _, err := s.Partition(ctx, "kafka", "b", 1); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Fatalf("partition 1 of 1: %v", err)
	}
	if _, err := s.Append(ctx, "kafka", "nope", 0, makeBatch(t, "x", 1, 1)); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("append to missing topic: %v", err)
	}
}

func TestAppendPollManyBatches(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncNever, 2)
	var want []polled
	for i := 0; i < 200; i++ {
		n := 1 + i%7
		base, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, fmt.Sprint(i), n, 1_000_000))
		if err != nil {
			t.Fatal(err)
		}
		if base != uint64(len(want)) {
			t.Fatalf("batch %d base %d want %d", i, base, len(want))
		}
		for j := 0; j < n; j++ {
			want = append(want, polled{base + uint64(j), fmt.Sprintf("%d-%d", i, j)})
		}
	}
	st, _ := s.Partition(ctx, "kafka", "t", 1)
	if st.Earliest != 0 || st.Next != uint64(len(want)) {
		t.Fatalf("state %+v", st)
	}
	if st, _ := s.Partition(ctx, "kafka", "t", 0); st != (bridge.PartitionState{}) {
		t.Fatalf("empty partition state %+v", st)
	}
	for _, from := range []uint64{0, 1, 5, 13, 400, uint64(len(want)) - 1} {
		got := pollAll(t, s, "t", 1, from)
		if fmt.Sprint(got) != fmt.Sprint(want[from:]) {
			t.Fatalf("poll from %d: got %d messages, first %v", from, len(got), got[:1])
		}
	}
	if got := pollAll(t, s, "t", 1, uint64(len(want))); len(got) != 0 {
		t.Fatalf("poll at hwm returned %d", len(got))
	}
	if got := pollAll(t, s, "t", 0, 0); len(got) != 0 {
		t.Fatalf("empty partition returned %d", len(got))
	}
}

func TestPollStampsBatch(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncNever, 3)
	_, _ = s.Append(ctx, "kafka", "t", 2, makeBatch(t, "a", 2, 5))
	before := nowMicros()
	_, _ = s.Append(ctx, "kafka", "t", 2, makeBatch(t, "b", 3, 5))
	var views []bridge.BatchView
	_ = s.Poll(ctx, "kafka", "t", 2, 2, 1<<20, func(b []byte) bool {
		v, err := bridge.VerifyIggyBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, v)
		return true
	})
	if len(views) != 1 {
		t.Fatalf("got %d batches", len(views))
	}
	v := views[0]
	if v.PartitionID != 2 || v.BaseOffset != 2 || v.Count != 3 || v.BaseTimestamp < before || v.BaseTimestamp > nowMicros() {
		t.Fatalf("stamp %+v", v)
	}
}

func TestPollMaxBytes(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncNever, 1)
	b := makeBatch(t, "x", 4, 1)
	for i := 0; i < 10; i++ {
		if _, err := s.Append(ctx, "kafka", "t", 0, b); err != nil {
			t.Fatal(err)
		}
	}
	count := func(maxBytes int) (n int) {
		_ = s.Poll(ctx, "kafka", "t", 0, 0, maxBytes, func([]byte) bool { n++; return true })
		return n
	}
	for _, c := range []struct{ max, want int }{
		{0, 1}, {1, 1}, {len(b), 1}, {len(b) + 1, 1}, {2*len(b) - 1, 1}, {2 * len(b), 2}, {10 * len(b), 10}, {1 << 30, 10},
	} {
		if got := count(c.max); got != c.want {
			t.Errorf("maxBytes %d: %d batches, want %d", c.max, got, c.want)
		}
	}
	n := 0
	_ = s.Poll(ctx, "kafka", "t", 0, 0, 1<<30, func([]byte) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("fn returning false: %d calls", n)
	}
}

func TestRestartKeepsDataAndOffsets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, policy := range []SyncPolicy{SyncAlways, SyncInterval, SyncNever} {
		s := openStore(t, dir, policy)
		if policy == SyncAlways {
			if _, err := s.CreateTopic(ctx, "kafka", "t", 2); err != nil {
				t.Fatal(err)
			}
		}
		st, _ := s.Partition(ctx, "kafka", "t", 1)
		base, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, policy.String(), 3, 9))
		if err != nil || base != st.Next {
			t.Fatalf("%v: base %d err %v, want %d", policy, base, err, st.Next)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, "x", 1, 1)); !errors.Is(err, bridge.ErrClosed) {
			t.Fatalf("append after close: %v", err)
		}
	}
	s := openStore(t, dir, SyncAlways)
	defer s.Close()
	got := pollAll(t, s, "t", 1, 0)
	want := "[{0 always-0} {1 always-1} {2 always-2} {3 interval-0} {4 interval-1} {5 interval-2} {6 never-0} {7 never-1} {8 never-2}]"
	if fmt.Sprint(got) != want {
		t.Fatalf("after restart: %v", got)
	}
	if st, _ := s.Partition(ctx, "kafka", "t", 1); st.Next != 9 {
		t.Fatalf("next %d", st.Next)
	}
}

func TestRecreatedTopicStartsAtZero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncAlways)
	first, _ := s.CreateTopic(ctx, "kafka", "t", 1)
	for i := 0; i < 5; i++ {
		_, _ = s.Append(ctx, "kafka", "t", 0, makeBatch(t, "old", 2, 1))
	}
	if err := s.DeleteTopic(ctx, "kafka", "t"); err != nil {
		t.Fatal(err)
	}
	second, _ := s.CreateTopic(ctx, "kafka", "t", 1)
	if second.ID == first.ID {
		t.Fatal("topic id reused")
	}
	if st, _ := s.Partition(ctx, "kafka", "t", 0); st.Next != 0 {
		t.Fatalf("recreated topic next %d", st.Next)
	}
	base, _ := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "new", 1, 1))
	if base != 0 {
		t.Fatalf("recreated topic base %d", base)
	}
	_ = s.Close()
	s = openStore(t, dir, SyncAlways)
	defer s.Close()
	if got := pollAll(t, s, "t", 0, 0); fmt.Sprint(got) != "[{0 new-0}]" {
		t.Fatalf("after reopen: %v", got)
	}
	third, _ := s.CreateTopic(ctx, "kafka", "u", 1)
	if third.ID <= second.ID {
		t.Fatalf("id counter not persisted: %d after %d", third.ID, second.ID)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncNever, 1)
	if _, found, _ := s.OffsetForTimestamp(ctx, "kafka", "t", 0, 0); found {
		t.Fatal("found in empty partition")
	}
	// Batches with origins 1000.., 2000.., 3000.. (3 messages each).
	for i := 1; i <= 3; i++ {
		_, _ = s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 3, uint64(i)*1000))
	}
	for _, c := range []struct {
		ts    uint64
		want  uint64
		found bool
	}{{0, 0, true}, {1000, 0, true}, {1001, 1, true}, {1003, 3, true}, {2002, 5, true}, {3002, 8, true}, {3003, 0, false}} {
		off, found, err := s.OffsetForTimestamp(ctx, "kafka", "t", 0, c.ts)
		if err != nil || found != c.found || off != c.want {
			t.Errorf("ts %d: %d %v %v, want %d %v", c.ts, off, found, err, c.want, c.found)
		}
	}
	// A message with no origin timestamp counts at its append time.
	before := nowMicros()
	_, _ = s.Append(ctx, "kafka", "t", 0, makeBatch(t, "y", 1, 0))
	if off, found, _ := s.OffsetForTimestamp(ctx, "kafka", "t", 0, before); !found || off != 9 {
		t.Fatalf("origin-less message: %d %v", off, found)
	}
}

// TestOffsetForTimestampClamped: a Kafka batch spanning more than an Iggy
// batch's 71.6 minutes is stored with its later records clamped (their
// real time in kafka.ts, docs/MAPPING.md); the search finds them by their
// real time, from the segment's newest time as an append records it, as a
// reopen rebuilds it from the active segment's bytes, and as a sealed
// segment's index keeps it.
func TestOffsetForTimestampClamped(t *testing.T) {
	t.Parallel()
	const base, minute = int64(1_700_000_000_000), int64(60_000)
	dir := t.TempDir()
	s, reopen := reopenable(t, dir, func(dir string) *Store { return openStore(t, dir, SyncNever) })
	var bb codec.BatchBuilder
	kb := bb.Begin(nil, 0, base)
	for i, m := range []int64{0, 1, 80, 85} { // offsets 0..3
		kb = bb.AppendRecord(kb, int32(i), m*minute, nil, []byte("v"), 0)
	}
	rb, _, err := codec.ParseBatch(bb.Finish(kb))
	if err != nil {
		t.Fatal(err)
	}
	clamped, _, err := bridge.EncodeKafkaRecords(nil, &rb, rb.Records, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 1, bridge.TopicConfigs{"segment.bytes": fmt.Sprint(len(clamped))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "kafka", "t", 0, clamped); err != nil {
		t.Fatal(err)
	}
	ms := func(m int64) uint64 { return uint64(base+m) * 1000 }
	check := func(when string, cases ...[3]int64) {
		t.Helper()
		for _, c := range cases {
			off, found, err := s.OffsetForTimestamp(ctx, "kafka", "t", 0, ms(c[0]))
			if err != nil || found != (c[1] >= 0) || found && off != uint64(c[1]) {
				t.Errorf("%s: base%+d ms: %d %v %v, want %d", when, c[0], off, found, err, c[1])
			}
		}
	}
	wide := [][3]int64{{75 * minute, 2}, {80 * minute, 2}, {80*minute + 1, 3}, {85 * minute, 3}}
	check("appended", append(wide, [3]int64{85*minute + 1, -1})...)
	s = reopen()
	check("reopened", append(wide, [3]int64{85*minute + 1, -1})...)
	// A second segment after it, then the first sealed behind it.
	if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 2, ms(90*minute))); err != nil {
		t.Fatal(err)
	}
	check("sealed", append(wide, [3]int64{85*minute + 1, 4})...)
	s = reopen()
	check("sealed and reopened", append(wide, [3]int64{85*minute + 1, 4})...)
}

func TestAppendRejectsBadBatch(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncNever, 1)
	b := makeBatch(t, "x", 2, 1)
	b[len(b)-1] ^= 1 // payload byte: message checksum breaks
	if _, err := s.Append(ctx, "kafka", "t", 0, b); !errors.Is(err, bridge.ErrInvalidBatch) {
		t.Fatalf("corrupt batch: %v", err)
	}
	if _, err := s.Append(ctx, "kafka", "t", 0, b[:100]); !errors.Is(err, bridge.ErrInvalidBatch) {
		t.Fatalf("short batch: %v", err)
	}
	if st, _ := s.Partition(ctx, "kafka", "t", 0); st.Next != 0 {
		t.Fatalf("rejected batch took offsets: %+v", st)
	}
}

func TestFailedStoreRefusesCalls(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncNever, 1)
	_ = s.fail("test", errors.New("disk on fire"))
	if _, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 1, 1)); !errors.Is(err, bridge.ErrStorage) || !errors.Is(err, bridge.ErrUnavailable) {
		t.Fatalf("append on failed store: %v", err)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "u", 1); !errors.Is(err, bridge.ErrStorage) {
		t.Fatalf("create topic on failed store: %v", err)
	}
	if err := s.Poll(ctx, "kafka", "t", 0, 0, 1<<20, func([]byte) bool { return true }); !errors.Is(err, bridge.ErrStorage) {
		t.Fatalf("poll on failed store: %v", err)
	}
	// What is in memory stays true, so Metadata and ListOffsets answer.
	if _, err := s.Partition(ctx, "kafka", "t", 0); err != nil {
		t.Fatalf("partition on failed store: %v", err)
	}
	if ts, err := s.Topics(ctx, "kafka"); err != nil || len(ts) != 1 {
		t.Fatalf("topics on failed store: %v %v", ts, err)
	}
	if h, _ := s.Health(); h.State != bridge.NeedsRestart || !errors.Is(h.Cause, bridge.ErrStorage) {
		t.Fatalf("health %+v", h)
	}
}

func TestConcurrentAppendsAreGapFree(t *testing.T) {
	t.Parallel()
	s := topicStore(t, SyncAlways, 1)
	const writers, perWriter = 8, 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() { readerErr <- watchGapFree(s, stop) }()
	bases := make(chan [2]uint64, writers*perWriter)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				n := 1 + (w+i)%4
				base, err := s.Append(ctx, "kafka", "t", 0, makeBatch(t, fmt.Sprintf("w%d.%d", w, i), n, 1))
				if err != nil {
					t.Error(err)
					return
				}
				bases <- [2]uint64{base, uint64(n)}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	close(bases)
	covered := map[uint64]bool{}
	total := uint64(0)
	for r := range bases {
		for o := r[0]; o < r[0]+r[1]; o++ {
			if covered[o] {
				t.Fatalf("offset %d handed out twice", o)
			}
			covered[o] = true
		}
		total += r[1]
	}
	got := pollAll(t, s, "t", 0, 0)
	if uint64(len(got)) != total {
		t.Fatalf("polled %d messages, appended %d", len(got), total)
	}
	for i, m := range got {
		if m.offset != uint64(i) {
			t.Fatalf("message %d has offset %d", i, m.offset)
		}
	}
}

// watchGapFree polls while writers run and checks that what Poll shows is
// always a gap-free prefix ending exactly at the reported watermark.
func watchGapFree(s *Store, stop chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		st, err := s.Partition(ctx, "kafka", "t", 0)
		if err != nil {
			return err
		}
		next := uint64(0)
		err = s.Poll(ctx, "kafka", "t", 0, 0, 1<<30, func(b []byte) bool {
			v, _ := bridge.ParseIggyBatch(b)
			if v.BaseOffset != next {
				err = fmt.Errorf("poll shows a gap: batch at %d, expected %d", v.BaseOffset, next)
				return false
			}
			next += uint64(v.Count)
			return true
		})
		if err != nil {
			return err
		}
		if next < st.Next {
			return fmt.Errorf("poll ended at %d below the watermark %d read before it", next, st.Next)
		}
		// Not a wait for a condition: it paces the checks while the
		// writers run.
		time.Sleep(time.Millisecond)
	}
}

func TestSyncIntervalSyncs(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Options{Sync: SyncInterval, SyncInterval: 5 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _ = s.CreateTopic(ctx, "kafka", "t", 1)
	_, _ = s.Append(ctx, "kafka", "t", 0, makeBatch(t, "x", 1, 1))
	await.True(t, 2*time.Second, "the background sync ran", func() bool { return s.dirty.Load() == 0 })
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestParseSyncPolicy(t *testing.T) {
	t.Parallel()
	for _, p := range []SyncPolicy{SyncAlways, SyncInterval, SyncNever} {
		if got, err := ParseSyncPolicy(p.String()); err != nil || got != p {
			t.Fatalf("%v: %v %v", p, got, err)
		}
	}
	if _, err := ParseSyncPolicy("sometimes"); err == nil {
		t.Fatal("accepted a bad policy")
	}
}
