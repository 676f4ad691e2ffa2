package handlers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
)

// idemBatch is a batch of n records of producer (pid, epoch) from sequence
// seq; values are "<tag>-<i>".
func idemBatch(pid int64, epoch int16, seq int32, n int, tag string) []byte {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{value: []byte(fmt.Sprintf("%s-%d", tag, i))}
	}
	b := batch(recs...)
	binary.BigEndian.PutUint64(b[hProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[hProducerID+8:], uint16(epoch))
	binary.BigEndian.PutUint32(b[hProducerID+10:], uint32(seq))
	binary.BigEndian.PutUint32(b[hCRC:], crc32.Checksum(b[hAttributes:], castagnoli))
	return b
}

// gatewayAt is a gateway over an embedded store in dir, closed at cleanup
// unless closed earlier through the returned func.
func gatewayAt(tb testing.TB, dir string) (*Gateway, func()) {
	tb.Helper()
	st := openEmbedded(tb, dir)
	return newGatewayOn(tb, st), func() { _ = st.Close() }
}

func produceIdem(tb testing.TB, g *Gateway, topic string, b []byte) kmsg.ProduceResponseTopicPartition {
	tb.Helper()
	return produceOne(tb, g, produceReq(9, topic, 0, b))
}

func hwm(tb testing.TB, g *Gateway, topic string) uint64 {
	tb.Helper()
	st, err := g.Store.Partition(context.Background(), g.Cfg.Stream, topic, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Next
}

func wantProduce(tb testing.TB, p kmsg.ProduceResponseTopicPartition, code int16, base int64) {
	tb.Helper()
	if p.ErrorCode != code || (code == 0 && p.BaseOffset != base) {
		tb.Fatalf("produce: code %d (%v) base %d, want code %d base %d", p.ErrorCode, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, code, base)
	}
}

func TestIdempotentDuplicatesAnsweredWithOriginalOffset(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "dup", 1)
	const pid = 42
	// Seven batches of 2 records: sequences 0,2,...,12 at offsets 0..13.
	for i := 0; i < 7; i++ {
		wantProduce(t, produceIdem(t, g, "dup", idemBatch(pid, 0, int32(2*i), 2, "b")), 0, int64(2*i))
	}
	// Each of the last five is a duplicate: success, original offset.
	for i := 2; i < 7; i++ {
		wantProduce(t, produceIdem(t, g, "dup", idemBatch(pid, 0, int32(2*i), 2, "b")), 0, int64(2*i))
	}
	// Older than the retained five: Kafka answers OUT_OF_ORDER.
	wantProduce(t, produceIdem(t, g, "dup", idemBatch(pid, 0, 2, 2, "b")), kerr.OutOfOrderSequenceNumber.Code, 0)
	// Same first sequence, other length: not a duplicate, not in sequence.
	wantProduce(t, produceIdem(t, g, "dup", idemBatch(pid, 0, 12, 1, "b")), kerr.OutOfOrderSequenceNumber.Code, 0)
	if n := hwm(t, g, "dup"); n != 14 {
		t.Fatalf("stored %d messages, want 14", n)
	}
	// The next sequence goes on; another producer is independent.
	wantProduce(t, produceIdem(t, g, "dup", idemBatch(pid, 0, 14, 1, "b")), 0, 14)
	wantProduce(t, produceIdem(t, g, "dup", idemBatch(pid+1, 0, 0, 1, "c")), 0, 15)
}

func TestIdempotentGapIsOutOfOrder(t *testing.T) {
	// Not parallel: it times the wait for a sequence gap.
	g := newGateway(t)
	createTopic(t, g, "gap", 1)
	wantProduce(t, produceIdem(t, g, "gap", idemBatch(5, 0, 0, 3, "a")), 0, 0)
	start := time.Now()
	wantProduce(t, produceIdem(t, g, "gap", idemBatch(5, 0, 4, 1, "a")), kerr.OutOfOrderSequenceNumber.Code, 0)
	if d := time.Since(start); d < seqGapWait {
		t.Errorf("gap answered after %v, before the %v wait", d, seqGapWait)
	}
	if n := hwm(t, g, "gap"); n != 3 {
		t.Fatalf("stored %d messages, want 3", n)
	}
	wantProduce(t, produceIdem(t, g, "gap", idemBatch(5, 0, 3, 1, "a")), 0, 3)
	// Wrap: after sequence MaxInt32 comes 0.
	wantProduce(t, produceIdem(t, g, "gap", idemBatch(6, 0, math.MaxInt32-1, 2, "w")), 0, 4)
	wantProduce(t, produceIdem(t, g, "gap", idemBatch(6, 0, 0, 2, "w")), 0, 6)
}

func TestIdempotentEpochs(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "ep", 1)
	wantProduce(t, produceIdem(t, g, "ep", idemBatch(9, 3, 0, 2, "a")), 0, 0)
	// Stale epoch.
	wantProduce(t, produceIdem(t, g, "ep", idemBatch(9, 2, 2, 1, "a")), kerr.InvalidProducerEpoch.Code, 0)
	// A new epoch must start at 0.
	wantProduce(t, produceIdem(t, g, "ep", idemBatch(9, 4, 2, 1, "a")), kerr.OutOfOrderSequenceNumber.Code, 0)
	wantProduce(t, produceIdem(t, g, "ep", idemBatch(9, 4, 0, 1, "a")), 0, 2)
	// The old epoch is now stale, even for what was a duplicate.
	wantProduce(t, produceIdem(t, g, "ep", idemBatch(9, 3, 0, 2, "a")), kerr.InvalidProducerEpoch.Code, 0)
	wantProduce(t, produceIdem(t, g, "ep", idemBatch(9, 4, 0, 1, "a")), 0, 2)
	if n := hwm(t, g, "ep"); n != 3 {
		t.Fatalf("stored %d messages, want 3", n)
	}
	// Missing epoch or sequence with a producer id: refused.
	wantProduce(t, produceIdem(t, g, "ep", idemBatch(9, -1, 0, 1, "a")), kerr.InvalidRecord.Code, 0)
}

func TestIdempotentUnknownProducerAccepted(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "unk", 1)
	// State lost (expired, or beyond the rebuilt tail): Kafka accepts any
	// sequence from a producer it does not know (KIP-360), after our wait
	// for a predecessor in flight.
	wantProduce(t, produceIdem(t, g, "unk", idemBatch(77, 1, 500, 2, "a")), 0, 0)
	wantProduce(t, produceIdem(t, g, "unk", idemBatch(77, 1, 500, 2, "a")), 0, 0)
	wantProduce(t, produceIdem(t, g, "unk", idemBatch(77, 1, 502, 1, "a")), 0, 2)
}

// Five in-flight batches of one producer arrive in reverse order on five
// goroutines (as from five connections): each waits for its predecessor,
// so they are stored in sequence order, exactly once.
func TestIdempotentFiveInFlightOutOfOrder(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "inflight", 1)
	for round, known := range []bool{false, true} {
		base := int32(0)
		if known {
			base = 10
		}
		var wg sync.WaitGroup
		codes := make([]int16, 5)
		offs := make([]int64, 5)
		for i := 4; i >= 0; i-- {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				c := newCall(g, 0, 9)
				resp := roundTrip(t, c, produceReq(9, "inflight", 0, idemBatch(1234, 0, base+int32(2*i), 2, fmt.Sprintf("r%d-b%d", round, i))))
				p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
				codes[i], offs[i] = p.ErrorCode, p.BaseOffset
			}(i)
			// Staggered, so the batches arrive in reverse sequence order:
			// the order is what the test is about.
			time.Sleep(20 * time.Millisecond)
		}
		wg.Wait()
		for i := range 5 {
			if codes[i] != 0 || offs[i] != int64(base)+int64(2*i) {
				t.Fatalf("round %d batch %d: code %d offset %d", round, i, codes[i], offs[i])
			}
		}
	}
	got := fetchAll(t, g, "inflight")
	if len(got) != 20 {
		t.Fatalf("%d records stored, want 20", len(got))
	}
	for i, r := range got {
		if want := fmt.Sprintf("r%d-b%d-%d", i/10, i%10/2, i%2); string(r.value) != want {
			t.Errorf("offset %d: %q want %q", i, r.value, want)
		}
	}
}

func fetchAll(tb testing.TB, g *Gateway, topic string) []fetched {
	tb.Helper()
	resp := do(tb, g, fetchReq(11, topic, 0, 0)).(*kmsg.FetchResponse)
	return readRecords(tb, resp.Topics[0].Partitions[0].RecordBatches)
}

// After a restart the state is rebuilt from the stored message ids: a
// retry is still a duplicate, the next sequence still goes on, a gap is
// still a gap.
func TestIdempotentStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g, closeStore := gatewayAt(t, dir)
	createTopic(t, g, "rs", 1)
	for i := 0; i < 6; i++ {
		wantProduce(t, produceIdem(t, g, "rs", idemBatch(11, 2, int32(3*i), 3, "a")), 0, int64(4*i))
		// Another producer interleaved.
		wantProduce(t, produceIdem(t, g, "rs", idemBatch(12, 0, int32(i), 1, "b")), 0, int64(4*i+3))
	}
	closeStore()

	g2, _ := gatewayAt(t, dir)
	// Offsets: producer 11 batch i at 4i, producer 12 batch i at 4i+3.
	wantProduce(t, produceIdem(t, g2, "rs", idemBatch(11, 2, 15, 3, "a")), 0, 20)
	wantProduce(t, produceIdem(t, g2, "rs", idemBatch(11, 2, 3, 3, "a")), 0, 4)
	wantProduce(t, produceIdem(t, g2, "rs", idemBatch(12, 0, 5, 1, "b")), 0, 23)
	wantProduce(t, produceIdem(t, g2, "rs", idemBatch(11, 1, 18, 1, "a")), kerr.InvalidProducerEpoch.Code, 0)
	if n := hwm(t, g2, "rs"); n != 24 {
		t.Fatalf("stored %d messages, want 24", n)
	}
	wantProduce(t, produceIdem(t, g2, "rs", idemBatch(11, 2, 18, 1, "a")), 0, 24)
	if r := g2.Idem.Rebuilds.Load(); r != 1 {
		t.Errorf("%d rebuilds, want 1 (one partition, once)", r)
	}
}

// flakyStore stores a batch and then reports a failure, as a timed-out
// Iggy send that did land.
type flakyStore struct {
	bridge.Backend
	fail bool
}

func (f *flakyStore) Append(ctx context.Context, stream, topic string, p int32, b []byte) (uint64, error) {
	off, err := f.Backend.Append(ctx, stream, topic, p, b)
	if err == nil && f.fail {
		return 0, fmt.Errorf("%w: lost reply", bridge.ErrUnavailable)
	}
	return off, err
}

// AppendStaged is Append, so Produce's writes go through the failure.
func (f *flakyStore) AppendStaged(ctx context.Context, stream, topic string, p int32, b []byte, _ bridge.Prepared) (uint64, func(context.Context) error, error) {
	off, err := f.Append(ctx, stream, topic, p, b)
	return off, nil, err
}

func TestIdempotentUnknownOutcomeRereadsState(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "uo", 1)
	fs := &flakyStore{Backend: g.Store}
	g.Store = fs
	wantProduce(t, produceIdem(t, g, "uo", idemBatch(3, 0, 0, 2, "a")), 0, 0)
	fs.fail = true
	wantProduce(t, produceIdem(t, g, "uo", idemBatch(3, 0, 2, 2, "a")), kerr.NotLeaderForPartition.Code, 0)
	fs.fail = false
	// The retry finds the batch in the store: no second copy.
	wantProduce(t, produceIdem(t, g, "uo", idemBatch(3, 0, 2, 2, "a")), 0, 2)
	if n := hwm(t, g, "uo"); n != 4 {
		t.Fatalf("stored %d messages, want 4", n)
	}
}

func initPID(tb testing.TB, g *Gateway, version int16, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	tb.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return do(tb, g, req).(*kmsg.InitProducerIDResponse)
}

func TestInitProducerIDEpochBump(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	r := initPID(t, g, 4, -1, -1)
	if r.ErrorCode != 0 || r.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", r)
	}
	pid := r.ProducerID
	r = initPID(t, g, 4, pid, 0)
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != 1 {
		t.Fatalf("bump: %+v", r)
	}
	// A retry of that bump (its answer lost) gets the same answer.
	if r = initPID(t, g, 4, pid, 0); r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != 1 {
		t.Fatalf("retried bump: %+v", r)
	}
	if r = initPID(t, g, 5, pid, 1); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("second bump: %+v", r)
	}
	// An older epoch asking now is a stale instance: fenced.
	if r = initPID(t, g, 4, pid, 0); r.ErrorCode != kerr.ProducerFenced.Code || r.ProducerID != -1 {
		t.Fatalf("stale bump v4: %+v", r)
	}
	if r = initPID(t, g, 3, pid, 0); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale bump v3: %+v", r)
	}
	// v2 has no such fields: always a fresh id.
	if r = initPID(t, g, 2, -1, -1); r.ErrorCode != 0 || r.ProducerID == pid {
		t.Fatalf("v2: %+v", r)
	}
	// An exhausted epoch gets a fresh id.
	if r = initPID(t, g, 4, 99, math.MaxInt16-1); r.ErrorCode != 0 || r.ProducerID == 99 || r.ProducerEpoch != 0 {
		t.Fatalf("exhausted: %+v", r)
	}
	// Bumped epoch then produces from sequence 0.
	createTopic(t, g, "bump", 1)
	wantProduce(t, produceIdem(t, g, "bump", idemBatch(pid, 1, 0, 1, "a")), 0, 0)
	wantProduce(t, produceIdem(t, g, "bump", idemBatch(pid, 2, 0, 1, "a")), 0, 1)
	wantProduce(t, produceIdem(t, g, "bump", idemBatch(pid, 1, 1, 1, "a")), kerr.InvalidProducerEpoch.Code, 0)
}

// The allocator never reissues an id across restarts, even with a clock
// that stepped back: ids come from above the stored mark.
func TestProducerIDsPersistMark(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g, closeStore := gatewayAt(t, dir)
	g.Producers = NewProducerIDs(7, time.UnixMilli(1_000_000))
	first := initPID(t, g, 4, -1, -1)
	if first.ErrorCode != 0 {
		t.Fatalf("init: %+v", first)
	}
	mark, err := g.Store.(bridge.ProducerIDMarks).LoadProducerIDMark(context.Background(), 7)
	if err != nil || mark <= uint64(first.ProducerID)&(1<<producerCounterBits-1) {
		t.Fatalf("mark %d (%v) not above id %d", mark, err, first.ProducerID)
	}
	closeStore()
	g2, _ := gatewayAt(t, dir)
	g2.Producers = NewProducerIDs(7, time.UnixMilli(5)) // clock went back
	second := initPID(t, g2, 4, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID <= first.ProducerID {
		t.Fatalf("after restart id %d, before %d", second.ProducerID, first.ProducerID)
	}
	if uint64(second.ProducerID)&(1<<producerCounterBits-1) < mark {
		t.Fatalf("id %d below the stored mark %d", second.ProducerID, mark)
	}
	// A burst larger than one block still gets unique ids (some callers
	// may be told to retry while the next block is written).
	seen := map[int64]bool{}
	for len(seen) < producerIDBlock+10 {
		var id int64
		await.True(t, 10*time.Second, "an id issued (the next block written)", func() bool {
			var ok bool
			id, ok = g2.Producers.Allocate(g2.Store, g2.Log)
			return ok
		})
		if seen[id] {
			t.Fatalf("id %d issued twice", id)
		}
		seen[id] = true
	}
}

// A store error while rebuilding is a retriable error, not a guess.
func TestIdempotentRebuildErrorIsRetriable(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "re", 1)
	wantProduce(t, produceIdem(t, g, "re", idemBatch(1, 0, 0, 1, "a")), 0, 0)
	g2 := newGateway(t)
	g2.Store = &pollFails{Backend: g.Store}
	wantProduce(t, produceIdem(t, g2, "re", idemBatch(1, 0, 0, 1, "a")), kerr.NotLeaderForPartition.Code, 0)
	g2.Store = g.Store
	wantProduce(t, produceIdem(t, g2, "re", idemBatch(1, 0, 0, 1, "a")), 0, 0)
}

type pollFails struct{ bridge.Backend }

func (p *pollFails) Poll(context.Context, string, string, int32, uint64, int, func([]byte) bool) error {
	return errors.Join(bridge.ErrUnavailable)
}
