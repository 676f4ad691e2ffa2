package txn

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// memStore is a bridge.TxnStateStore in memory; fail makes puts fail.
// Lazy writes are kept with what they replaced until the next durable
// one, so crash can lose them as a crash of the embedded store may.
type memStore struct {
	mu   sync.Mutex
	kv   map[string][]byte
	fail bool
	undo []bridge.TxnStateEntry // the values lazy writes replaced, oldest first
}

func (m *memStore) PutTxnStates(_ context.Context, es []bridge.TxnStateEntry) error {
	return m.put(es, false)
}

func (m *memStore) PutTxnStatesLazy(_ context.Context, es []bridge.TxnStateEntry) error {
	return m.put(es, true)
}

func (m *memStore) put(es []bridge.TxnStateEntry, lazy bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("store down")
	}
	if m.kv == nil {
		m.kv = map[string][]byte{}
	}
	if !lazy {
		m.undo = nil // durable now, with every write before it
	}
	for _, e := range es {
		if lazy {
			m.undo = append(m.undo, bridge.TxnStateEntry{Key: e.Key, Value: m.kv[e.Key]})
		}
		if e.Value == nil {
			delete(m.kv, e.Key)
		} else {
			m.kv[e.Key] = append([]byte(nil), e.Value...)
		}
	}
	return nil
}

// crash loses the lazy writes made since the last durable one.
func (m *memStore) crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.undo) - 1; i >= 0; i-- {
		if u := m.undo[i]; u.Value == nil {
			delete(m.kv, u.Key)
		} else {
			m.kv[u.Key] = u.Value
		}
	}
	m.undo = nil
}

func (m *memStore) TxnStates(_ context.Context, fn func(string, []byte)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.kv {
		fn(k, v)
	}
	return nil
}

// marker is one marker fakeEnv wrote.
type marker struct {
	p      Partition
	pid    int64
	epoch  int16
	commit bool
	at     uint64
	coord  int32 // the coordinator epoch it was written with
}

// fakeEnv is partitions as counters: a marker takes the next offset.
type fakeEnv struct {
	mu      sync.Mutex
	next    map[Partition]uint64
	markers []marker
	offsets map[string][]Offset
	pids    int64
	failing bool // WriteMarker fails (the store down)
	// afterMarker runs after each marker is written.
	afterMarker func()
	// start and gone are what LogStart answers.
	start map[Partition]uint64
	gone  map[Partition]bool
}

func newEnv() *fakeEnv {
	return &fakeEnv{next: map[Partition]uint64{}, offsets: map[string][]Offset{}, start: map[Partition]uint64{}, gone: map[Partition]bool{}}
}

func (f *fakeEnv) NewProducerID() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pids++
	return 1000 + f.pids, true
}

func (f *fakeEnv) HighWatermark(_ context.Context, p Partition) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.Topic == "missing" {
		return 0, kerr.UnknownTopicOrPartition
	}
	return f.next[p], nil
}

// append stands for records produced to p: it returns their first offset.
func (f *fakeEnv) append(p Partition, n uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := f.next[p]
	f.next[p] += n
	return at
}

func (f *fakeEnv) WriteMarker(_ context.Context, p Partition, pid int64, epoch int16, coord int32, commit bool) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return 0, errors.New("store down")
	}
	at := f.next[p]
	f.next[p]++
	f.markers = append(f.markers, marker{p, pid, epoch, commit, at, coord})
	if f.afterMarker != nil {
		f.afterMarker()
	}
	return at, nil
}

func (f *fakeEnv) FindMarker(_ context.Context, p Partition, from uint64, pid int64, epoch int16) (uint64, bool, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.markers {
		if m.p == p && m.pid == pid && m.epoch >= epoch && m.at >= from {
			return m.at, m.commit, true, nil
		}
	}
	return 0, false, false, nil
}

func (f *fakeEnv) LogStart(_ context.Context, p Partition) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone[p] {
		return 0, ErrPartitionGone
	}
	return f.start[p], nil
}

func (f *fakeEnv) CommitOffsets(_ context.Context, group string, offs []Offset) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offsets[group] = append(f.offsets[group], offs...)
	return nil
}

func newCo(store *memStore, env *fakeEnv, now *time.Time) *Coordinator {
	return New(Options{Store: store, Env: env, MaxTimeout: 15 * time.Minute, Now: func() time.Time { return *now }})
}

// loadedCo is newCo over a new store and environment, loaded.
func loadedCo(t *testing.T, now *time.Time) (*Coordinator, *memStore, *fakeEnv) {
	t.Helper()
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, now)
	if err := co.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return co, store, env
}

var (
	pa = Partition{"a", 0}
	pb = Partition{"b", 1}
)

// TestCommitAbortAndLastStable: the last stable offset holds at a
// transaction's first record until its marker, an abort joins the aborted
// list, offsets apply only on commit.
func TestCommitAbortAndLastStable(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	co, _, env := loadedCo(t, &now)
	init := co.InitProducerID(ctx, "t1", 60000, -1, -1, 5)
	if init.Code != 0 || init.Epoch != 0 {
		t.Fatalf("init: %+v", init)
	}
	pid := init.ProducerID
	env.append(pa, 3) // plain records before
	if code, out := co.AddPartitions(ctx, "t1", pid, 0, []Partition{pa, pb}, false, false); code != 0 || out[pa] != 0 || out[pb] != 0 {
		t.Fatalf("add: %d %v", code, out)
	}
	done := co.Index.BeginFirst(pa, pid)
	first := env.append(pa, 5)
	done(first, true)
	if got := co.Index.LastStable(pa, 8); got != 3 {
		t.Fatalf("LSO during the transaction: %d, want 3", got)
	}
	if code := co.AddGroup(ctx, "t1", pid, 0, "g", false); code != 0 {
		t.Fatal(code)
	}
	if code := co.CommitOffsets(ctx, "t1", pid, 0, "g", []Offset{{Partition: pa, Offset: 42, LeaderEpoch: -1}}, false, false); code != 0 {
		t.Fatal(code)
	}
	if !co.HasPendingOffsets(t.Context(), "g", pa) {
		t.Fatal("pending offsets not reported")
	}
	if r := co.End(ctx, "t1", pid, 0, false, false, false); r.Code != 0 {
		t.Fatalf("abort: %+v", r)
	}
	if len(env.offsets["g"]) != 0 || co.HasPendingOffsets(t.Context(), "g", pa) {
		t.Fatalf("aborted offsets applied: %v", env.offsets)
	}
	if got := co.Index.LastStable(pa, 9); got != 9 {
		t.Fatalf("LSO after the abort: %d, want 9", got)
	}
	ab := co.Index.AbortedIn(nil, pa, 0, 9)
	if len(ab) != 1 || ab[0] != (Aborted{ProducerID: pid, First: 3, Last: 8}) {
		t.Fatalf("aborted: %+v", ab)
	}
	if len(env.markers) != 2 || env.markers[0].commit || env.markers[1].commit {
		t.Fatalf("markers: %+v", env.markers)
	}
	// A retry of the abort answers success and writes nothing.
	if r := co.End(ctx, "t1", pid, 0, false, false, false); r.Code != 0 || len(env.markers) != 2 {
		t.Fatalf("abort retried: %+v, %d markers", r, len(env.markers))
	}
	// Commit of the next transaction applies its offsets.
	if code, _ := co.AddPartitions(ctx, "t1", pid, 0, []Partition{pa}, false, false); code != 0 {
		t.Fatal(code)
	}
	if code := co.AddGroup(ctx, "t1", pid, 0, "g", false); code != 0 {
		t.Fatal(code)
	}
	if code := co.CommitOffsets(ctx, "t1", pid, 0, "g", []Offset{{Partition: pa, Offset: 7, LeaderEpoch: -1}}, false, false); code != 0 {
		t.Fatal(code)
	}
	if r := co.End(ctx, "t1", pid, 0, true, false, false); r.Code != 0 {
		t.Fatalf("commit: %+v", r)
	}
	if o := env.offsets["g"]; len(o) != 1 || o[0].Offset != 7 {
		t.Fatalf("committed offsets: %+v", env.offsets)
	}
	// The other outcome of an ended transaction is INVALID_TXN_STATE.
	if r := co.End(ctx, "t1", pid, 0, false, false, false); r.Code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit: %+v", r)
	}
}

// TestFencingAndChecks: a second InitProducerId bumps the epoch and aborts
// the open transaction; the old epoch is fenced; unknown producers and
// bad timeouts are refused.
func TestFencingAndChecks(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, &now)
	if r := co.InitProducerID(ctx, "t", 0, -1, -1, 5); r.Code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout 0: %+v", r)
	}
	if r := co.InitProducerID(ctx, "t", int32((16 * time.Minute).Milliseconds()), -1, -1, 5); r.Code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout over the max: %+v", r)
	}
	first := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	pid := first.ProducerID
	if code, _ := co.AddPartitions(ctx, "t", pid, 0, []Partition{pa}, false, false); code != 0 {
		t.Fatal(code)
	}
	done := co.Index.BeginFirst(pa, pid)
	done(env.append(pa, 2), true)
	second := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	if second.Code != 0 || second.ProducerID != pid || second.Epoch <= 0 {
		t.Fatalf("second init: %+v", second)
	}
	if len(env.markers) != 1 || env.markers[0].commit || env.markers[0].epoch <= 0 {
		t.Fatalf("the open transaction was not aborted under a new epoch: %+v", env.markers)
	}
	if r := co.End(ctx, "t", pid, 0, true, false, false); r.Code != kerr.ProducerFenced.Code {
		t.Fatalf("old epoch commit: %+v", r)
	}
	if r := co.End(ctx, "t", pid, 0, true, false, true); r.Code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch commit, old version: %+v", r)
	}
	if code, _ := co.AddPartitions(ctx, "t", pid+1, second.Epoch, []Partition{pa}, false, false); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("another producer id: %d", code)
	}
	if code, _ := co.AddPartitions(ctx, "nobody", 1, 0, []Partition{pa}, false, false); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("unknown id: %d", code)
	}
	// KIP-360: the current pair asks for the next epoch; the previous one
	// (a retry of that bump) gets the same answer.
	third := co.InitProducerID(ctx, "t", 60000, pid, second.Epoch, 5)
	if third.Code != 0 || third.Epoch != second.Epoch+1 {
		t.Fatalf("KIP-360 bump: %+v", third)
	}
	if again := co.InitProducerID(ctx, "t", 60000, pid, second.Epoch, 5); again != third {
		t.Fatalf("retried bump: %+v, want %+v", again, third)
	}
	if stale := co.InitProducerID(ctx, "t", 60000, pid, 0, 5); stale.Code != kerr.ProducerFenced.Code {
		t.Fatalf("stale KIP-360 pair: %+v", stale)
	}
	// A partition that does not exist fails the add; the rest are not
	// attempted and nothing joins.
	code, out := co.AddPartitions(ctx, "t", pid, third.Epoch, []Partition{pa, {"missing", 0}}, false, false)
	if code != 0 || out[pa] != kerr.OperationNotAttempted.Code || out[Partition{"missing", 0}] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("add with a missing partition: %d %v", code, out)
	}
	if in, _ := co.Describe("t"); len(in.Partitions) != 0 || in.State != Empty {
		t.Fatalf("after a failed add: %+v", in)
	}
}

// TestTimeoutAbortsAndFences: a transaction open past its timeout is
// aborted under a bumped epoch, so its producer is fenced.
func TestTimeoutAbortsAndFences(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, &now)
	r := co.InitProducerID(ctx, "t", 1000, -1, -1, 5)
	if code, _ := co.AddPartitions(ctx, "t", r.ProducerID, r.Epoch, []Partition{pa}, false, false); code != 0 {
		t.Fatal(code)
	}
	co.Index.BeginFirst(pa, r.ProducerID)(env.append(pa, 1), true)
	if n := co.AbortExpired(ctx); n != 0 {
		t.Fatalf("aborted %d before the timeout", n)
	}
	now = now.Add(1500 * time.Millisecond)
	if n := co.AbortExpired(ctx); n != 1 {
		t.Fatalf("aborted %d, want 1", n)
	}
	if got := co.Index.LastStable(pa, 2); got != 2 {
		t.Fatalf("LSO after the timeout: %d", got)
	}
	if e := co.End(ctx, "t", r.ProducerID, r.Epoch, true, false, false); e.Code != kerr.ProducerFenced.Code {
		t.Fatalf("commit after the timeout: %+v", e)
	}
}

// TestRecovery: a restart finishes a transaction stored in PrepareCommit
// (only the markers not yet written), and keeps an Ongoing one's
// partitions unstable from where they were added.
func TestRecovery(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, &now)
	a := co.InitProducerID(ctx, "a", 60000, -1, -1, 5)
	b := co.InitProducerID(ctx, "b", 60000, -1, -1, 5)
	env.append(pa, 10)
	if code, _ := co.AddPartitions(ctx, "a", a.ProducerID, 0, []Partition{pa, pb}, false, false); code != 0 {
		t.Fatal(code)
	}
	if code, _ := co.AddPartitions(ctx, "b", b.ProducerID, 0, []Partition{pa}, false, false); code != 0 {
		t.Fatal(code)
	}
	if code := co.AddGroup(ctx, "a", a.ProducerID, 0, "g", false); code != 0 {
		t.Fatal(code)
	}
	if code := co.CommitOffsets(ctx, "a", a.ProducerID, 0, "g", []Offset{{Partition: pa, Offset: 5, LeaderEpoch: -1}}, false, false); code != 0 {
		t.Fatal(code)
	}
	env.append(pa, 4)
	// "a" reached PrepareCommit and wrote its marker on pa only: as a
	// crash in the middle of complete would leave it.
	e, _ := co.entry("a", false)
	e.state = PrepareCommit
	if err := co.save(ctx, e, false); err != nil {
		t.Fatal(err)
	}
	e.mu.Unlock()
	if _, err := env.WriteMarker(ctx, pa, a.ProducerID, 0, 0, true); err != nil {
		t.Fatal(err)
	}

	co2 := newCo(store, env, &now)
	if err := co2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	var onA []marker
	for _, m := range env.markers {
		if m.pid == a.ProducerID {
			onA = append(onA, m)
		}
	}
	sort.Slice(onA, func(i, j int) bool { return onA[i].p.Topic < onA[j].p.Topic })
	if len(onA) != 2 || onA[0].p != pa || onA[1].p != pb || !onA[1].commit {
		t.Fatalf("markers of a after the restart: %+v", onA)
	}
	if in, _ := co2.Describe("a"); in.State != CompleteCommit {
		t.Fatalf("a after the restart: %+v", in)
	}
	if o := env.offsets["g"]; len(o) != 1 || o[0].Offset != 5 {
		t.Fatalf("a's offsets: %+v", env.offsets)
	}
	// "b" is still open: pa is unstable from where b added it (10).
	if got := co2.Index.LastStable(pa, 100); got != 10 {
		t.Fatalf("LSO of pa with b open: %d, want 10", got)
	}
	if r := co2.End(ctx, "b", b.ProducerID, 0, false, false, false); r.Code != 0 {
		t.Fatalf("abort b: %+v", r)
	}
	if got := co2.Index.LastStable(pa, 100); got != 100 {
		t.Fatalf("LSO after b: %d", got)
	}
	// The aborted entry is stored: a third start knows it.
	co3 := newCo(store, env, &now)
	if err := co3.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if ab := co3.Index.AbortedIn(nil, pa, 0, 100); len(ab) != 1 || ab[0].ProducerID != b.ProducerID || ab[0].First != 10 {
		t.Fatalf("aborted after restart: %+v", ab)
	}
}

// TestRecoveryAnswersRetriedEndV2: a transaction.version 2 commit whose
// markers a crash interrupted is finished by the next start at the bumped
// epoch; the producer's retry of EndTxn (with the epoch it began with) is
// then answered as the retry it is, with the new epoch, as Kafka answers
// it, not INVALID_TXN_STATE.
func TestRecoveryAnswersRetriedEndV2(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, &now)
	r := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	if code := co.CheckWrite(ctx, "t", r.ProducerID, r.Epoch, pa, true); code != 0 {
		t.Fatal(code)
	}
	env.failing = true // the crash: Prepare stored, no marker
	if e := co.End(ctx, "t", r.ProducerID, r.Epoch, true, true, false); e.Code == 0 {
		t.Fatalf("end with the markers failing: %+v", e)
	}
	env.failing = false
	co2 := newCo(store, env, &now)
	if err := co2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(env.markers) != 1 || !env.markers[0].commit || env.markers[0].epoch != r.Epoch+1 {
		t.Fatalf("markers after the restart: %+v, want one commit at epoch %d", env.markers, r.Epoch+1)
	}
	e := co2.End(ctx, "t", r.ProducerID, r.Epoch, true, true, false)
	if e.Code != 0 || e.ProducerID != r.ProducerID || e.Epoch != r.Epoch+1 {
		t.Fatalf("end retried after the restart: %+v, want epoch %d", e, r.Epoch+1)
	}
	// The producer goes on at the new epoch.
	if code := co2.CheckWrite(ctx, "t", e.ProducerID, e.Epoch, pa, true); code != 0 {
		t.Fatalf("next transaction: %d", code)
	}
}

// TestRecoveryKeepsAbortedMarkedBeforeCrash: an abort whose marker was
// written but whose aborted-list entry was not (the crash fell between
// them) is in the aborted list after the restart, and stored: a
// read_committed reader is told to skip its records.
func TestRecoveryKeepsAbortedMarkedBeforeCrash(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, &now)
	r := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	env.append(pa, 3)
	if code, _ := co.AddPartitions(ctx, "t", r.ProducerID, r.Epoch, []Partition{pa}, false, false); code != 0 {
		t.Fatal(code)
	}
	done := co.Index.BeginFirst(pa, r.ProducerID)
	done(env.append(pa, 5), true)
	env.afterMarker = func() { store.fail = true }
	if e := co.End(ctx, "t", r.ProducerID, r.Epoch, false, false, false); e.Code == 0 {
		t.Fatalf("abort with the store failing after the marker: %+v", e)
	}
	env.afterMarker = nil
	store.fail = false
	for range 2 { // the restart, then one more
		co = newCo(store, env, &now)
		if err := co.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if len(env.markers) != 1 {
			t.Fatalf("markers: %+v, want the one written", env.markers)
		}
		ab := co.Index.AbortedIn(nil, pa, 0, 100)
		if len(ab) != 1 || ab[0].ProducerID != r.ProducerID || ab[0].First != 3 || ab[0].Last != 8 {
			t.Fatalf("aborted list after the restart: %+v, want pid %d from 3 to 8", ab, r.ProducerID)
		}
		if lso := co.Index.LastStable(pa, 9); lso != 9 {
			t.Fatalf("last stable offset %d, want 9", lso)
		}
	}
}

// TestStoreFailureKeepsPrepare: a store failure while ending leaves the
// transaction to be finished by a retry.
func TestStoreFailureKeepsPrepare(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, &now)
	r := openTxn(t, co, "t", 60000, pa)
	store.fail = true
	if e := co.End(ctx, "t", r.ProducerID, 0, true, false, false); e.Code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("end with the store down: %+v", e)
	}
	store.fail = false
	if e := co.End(ctx, "t", r.ProducerID, 0, true, false, false); e.Code != 0 {
		t.Fatalf("retried end: %+v", e)
	}
}

// TestMarkerFailureRetried: markers that fail to be written leave the
// transaction prepared, not stuck there: the client's retried EndTxn
// finishes it, and a transaction whose producer is gone (a timeout
// abort) is finished by the timeout loop once its timeout passed again.
func TestMarkerFailureRetried(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := newCo(store, env, &now)
	open := func(id string, p Partition) InitResult {
		t.Helper()
		r := co.InitProducerID(ctx, id, 1000, -1, -1, 5)
		if code, _ := co.AddPartitions(ctx, id, r.ProducerID, r.Epoch, []Partition{p}, false, false); code != 0 {
			t.Fatal(code)
		}
		co.Index.BeginFirst(p, r.ProducerID)(env.append(p, 1), true)
		return r
	}
	r := open("ended", pa)
	env.failing = true
	if e := co.End(ctx, "ended", r.ProducerID, r.Epoch, true, false, false); e.Code == 0 {
		t.Fatalf("end with the markers failing: %+v", e)
	}
	env.failing = false
	if e := co.End(ctx, "ended", r.ProducerID, r.Epoch, true, false, false); e.Code != 0 {
		t.Fatalf("retried end: %+v", e)
	}
	if in, _ := co.Describe("ended"); in.State != CompleteCommit {
		t.Fatalf("after the retried end: %v", in.State)
	}
	if got := co.Index.LastStable(pa, env.next[pa]); got != env.next[pa] {
		t.Fatalf("LSO %d after the retried commit, want %d", got, env.next[pa])
	}

	open("left", pb)
	now = now.Add(1500 * time.Millisecond)
	env.failing = true
	if n := co.AbortExpired(ctx); n != 0 {
		t.Fatalf("aborted %d with the markers failing", n)
	}
	env.failing = false
	co.AbortExpired(ctx)
	now = now.Add(1500 * time.Millisecond)
	co.AbortExpired(ctx)
	if in, _ := co.Describe("left"); in.State != CompleteAbort {
		t.Fatalf("timed-out transaction after the markers came back: %v", in.State)
	}
	if got := co.Index.LastStable(pb, env.next[pb]); got != env.next[pb] {
		t.Fatalf("LSO %d after the abort, want %d", got, env.next[pb])
	}
}

// TestEntryRoundTrip: the stored forms read back.
func TestEntryRoundTrip(t *testing.T) {
	e := &txnEntry{id: "x", pid: 7, epoch: 3, lastPid: 6, lastEpoch: 2, timeoutMs: 900, state: Ongoing, v2: true,
		startMs: 11, updateMs: 12, parts: map[Partition]uint64{pa: 4, pb: 9}, groups: map[string]struct{}{"g": {}}}
	got, err := decodeEntry("x", e.encode())
	if err != nil {
		t.Fatal(err)
	}
	if string(got.encode()) != string(e.encode()) {
		t.Fatalf("round trip: %+v", got)
	}
	offs := map[string][]Offset{"g": {{Partition: pa, Offset: 5, LeaderEpoch: 2, Metadata: "m"}}}
	back, err := decodeOffsets(encodeOffsets(offs))
	if err != nil || back["g"][0] != offs["g"][0] {
		t.Fatalf("offsets round trip: %+v %v", back, err)
	}
	for n := range e.encode() {
		if _, err := decodeEntry("x", e.encode()[:n]); err == nil {
			t.Fatalf("a record cut at %d decoded", n)
		}
	}
}

// goneEnv answers every marker with ErrPartitionGone.
type goneEnv struct{ *fakeEnv }

func (goneEnv) WriteMarker(context.Context, Partition, int64, int16, int32, bool) (uint64, error) {
	return 0, ErrPartitionGone
}

// TestDeletedPartitionEnds: a transaction whose partition's topic was
// deleted ends without a marker there, and holds no LSO.
func TestDeletedPartitionEnds(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	env := goneEnv{newEnv()}
	co := New(Options{Store: &memStore{}, Env: env, MaxTimeout: time.Minute, Now: func() time.Time { return now }})
	r := openTxn(t, co, "t", 60000, pa)
	co.Index.BeginFirst(pa, r.ProducerID)(3, true)
	if e := co.End(ctx, "t", r.ProducerID, 0, true, false, false); e.Code != 0 {
		t.Fatalf("commit: %+v", e)
	}
	if got := co.Index.LastStable(pa, 9); got != 9 {
		t.Fatalf("LSO: %d", got)
	}
}

// TestV2MarkersCarryTheBump: a v2 EndTxn bumps the epoch before the
// markers, which carry the new epoch (a batch of the old one still in
// flight is then refused by the partition); a v2 end retried with the old
// epoch after its markers failed finishes it.
func TestV2MarkersCarryTheBump(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	env := newEnv()
	co := newCo(&memStore{}, env, &now)
	r := openTxn(t, co, "t", 60000, pa)
	e := co.End(ctx, "t", r.ProducerID, 0, true, true, false)
	if e.Code != 0 || e.Epoch != 1 || len(env.markers) != 1 || env.markers[0].epoch != 1 {
		t.Fatalf("v2 end: %+v, markers %+v", e, env.markers)
	}
	if code, _ := co.AddPartitions(ctx, "t", r.ProducerID, 1, []Partition{pa}, false, false); code != 0 {
		t.Fatal(code)
	}
	env.failing = true
	if e := co.End(ctx, "t", r.ProducerID, 1, false, true, false); e.Code == 0 {
		t.Fatalf("end with markers failing: %+v", e)
	}
	env.failing = false
	if e := co.End(ctx, "t", r.ProducerID, 1, false, true, false); e.Code != 0 || e.Epoch != 2 {
		t.Fatalf("retried v2 end: %+v", e)
	}
	if in, _ := co.Describe("t"); in.State != CompleteAbort || in.Epoch != 2 {
		t.Fatalf("after the retry: %+v", in)
	}
}

// openTxn inits id with timeout ms and adds parts to its transaction.
func openTxn(t *testing.T, co *Coordinator, id string, timeoutMs int32, parts ...Partition) InitResult {
	t.Helper()
	r := co.InitProducerID(context.Background(), id, timeoutMs, -1, -1, 5)
	if r.Code != 0 {
		t.Fatalf("InitProducerId: %+v", r)
	}
	if code, out := co.AddPartitions(context.Background(), id, r.ProducerID, r.Epoch, parts, false, false); code != 0 {
		t.Fatalf("AddPartitions: %d %v", code, out)
	}
	return r
}

// TestPurgeAborted: aborted transactions whose marker lies below the log
// start, or whose partition is gone, leave the index and the store; the
// others stay, and a reload sees only those.
func TestPurgeAborted(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	co, store, env := loadedCo(t, &now)
	pid := co.InitProducerID(ctx, "t1", 60000, -1, -1, 5).ProducerID
	epoch := int16(0)
	abort := func(p Partition) {
		if code, _ := co.AddPartitions(ctx, "t1", pid, epoch, []Partition{p}, false, false); code != 0 {
			t.Fatal(code)
		}
		done := co.Index.BeginFirst(p, pid)
		done(env.append(p, 2), true)
		if r := co.End(ctx, "t1", pid, epoch, false, false, false); r.Code != 0 {
			t.Fatalf("abort: %+v", r)
		}
	}
	abort(pa) // records 0-1, marker 2
	abort(pa) // records 3-4, marker 5
	abort(pb) // records 0-1, marker 2
	if got := co.Index.AbortedIn(nil, pa, 0, 100); len(got) != 2 {
		t.Fatalf("before the purge: %+v", got)
	}
	env.start[pa] = 3 // the first transaction's records and marker are gone
	env.gone[pb] = true
	co.PurgeAborted(ctx)
	if got := co.Index.AbortedIn(nil, pa, 0, 100); len(got) != 1 || got[0].Last != 5 {
		t.Fatalf("pa after the purge: %+v", got)
	}
	if got := co.Index.AbortedIn(nil, pb, 0, 100); len(got) != 0 {
		t.Fatalf("pb after the purge: %+v", got)
	}
	re := newCo(store, env, &now)
	if err := re.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := re.Index.AbortedIn(nil, pa, 0, 100); len(got) != 1 || got[0].Last != 5 {
		t.Fatalf("pa reloaded: %+v", got)
	}
	if got := re.Index.AbortedIn(nil, pb, 0, 100); len(got) != 0 {
		t.Fatalf("pb reloaded: %+v", got)
	}
}

// TestForgetTopic: a deleted topic's aborted transactions leave the index
// and the store; another topic's stay.
func TestForgetTopic(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	co, store, env := loadedCo(t, &now)
	pid := co.InitProducerID(ctx, "t1", 60000, -1, -1, 5).ProducerID
	for _, p := range []Partition{pa, pb} {
		if code, _ := co.AddPartitions(ctx, "t1", pid, 0, []Partition{p}, false, false); code != 0 {
			t.Fatal(code)
		}
		done := co.Index.BeginFirst(p, pid)
		done(env.append(p, 2), true)
		if r := co.End(ctx, "t1", pid, 0, false, false, false); r.Code != 0 {
			t.Fatalf("abort: %+v", r)
		}
	}
	co.ForgetTopic(ctx, pa.Topic)
	re := newCo(store, env, &now)
	if err := re.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Coordinator{co, re} {
		if got := c.Index.AbortedIn(nil, pa, 0, 100); len(got) != 0 {
			t.Fatalf("deleted topic's aborted transactions kept: %+v", got)
		}
		if got := c.Index.AbortedIn(nil, pb, 0, 100); len(got) != 1 {
			t.Fatalf("other topic's aborted transactions: %+v", got)
		}
	}
}

// TestRestartAfterCommitAddsPartitionsAgain: a coordinator started on the
// state a committed transaction left (stored with its partitions, before
// they were dropped in memory) begins the next transaction on the same
// partitions with them in it, so its producer's writes there pass the
// check. (Found in cluster mode, where the gateway an id moves to loads
// it this way.)
func TestRestartAfterCommitAddsPartitionsAgain(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	co, store, env := loadedCo(t, &now)
	init := co.InitProducerID(ctx, "t", 60000, -1, -1, 5)
	pid := init.ProducerID
	if code, _ := co.AddPartitions(ctx, "t", pid, 0, []Partition{pa}, false, false); code != 0 {
		t.Fatal(code)
	}
	if r := co.End(ctx, "t", pid, 0, true, false, false); r.Code != 0 {
		t.Fatalf("commit: %+v", r)
	}
	again := newCo(store, env, &now)
	if err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if in, _ := again.Describe("t"); in.State != CompleteCommit || len(in.Partitions) != 0 {
		t.Fatalf("after the restart: %+v, want CompleteCommit with no partitions", in)
	}
	if code, out := again.AddPartitions(ctx, "t", pid, 0, []Partition{pa}, false, false); code != 0 || out[pa] != 0 {
		t.Fatalf("add after the restart: %d %v", code, out)
	}
	if code := again.CheckWrite(ctx, "t", pid, 0, pa, false); code != 0 {
		t.Fatalf("a write of the next transaction: code %d, want 0", code)
	}
}
