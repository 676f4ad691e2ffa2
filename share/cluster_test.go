package share

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/cluster/clustertest"
)

// etcdShared is a cluster node's shared state as the coordinator's Shared
// (the gateway's adapter does the same); afterGet and afterPut, when set,
// run once between a read or a write and its answer (a test's
// interleaving).
type etcdShared struct {
	n                  *cluster.Node
	afterGet, afterPut *atomic.Pointer[func()]
}

func (s etcdShared) GetState(ctx context.Context, key string) ([]byte, int64, error) {
	v, rev, err := s.n.GetState(ctx, key)
	if s.afterGet != nil {
		if fn := s.afterGet.Swap(nil); fn != nil {
			(*fn)()
		}
	}
	return v, rev, err
}

func (s etcdShared) PutState(ctx context.Context, key string, v []byte, ifRev int64) (int64, error) {
	rev, err := s.n.PutState(ctx, key, v, ifRev)
	if s.afterPut != nil {
		if fn := s.afterPut.Swap(nil); fn != nil {
			(*fn)()
		}
	}
	if errors.Is(err, cluster.ErrStateConflict) {
		err = ErrStateConflict
	}
	return rev, err
}

func (s etcdShared) ScanState(ctx context.Context, prefix string, fn func(string, []byte, int64)) error {
	return s.n.ScanState(ctx, prefix, fn)
}

// clusterPair is two coordinators of one cluster over a real etcd; leader
// says which (1 or 2) leads every partition.
type clusterPair struct {
	co       [3]*Coordinator
	leader   atomic.Int32
	afterGet atomic.Pointer[func()]
	afterPut atomic.Pointer[func()]
}

func newClusterPair(t *testing.T) *clusterPair {
	t.Helper()
	et := clustertest.StartEtcd(t)
	n, err := cluster.Start(context.Background(), cluster.Options{Endpoints: []string{et.Endpoint}, Prefix: "/share/",
		Self: cluster.Member{ID: 1}, TTL: 10 * time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	cp := &clusterPair{}
	cp.leader.Store(1)
	cfg := bridge.GroupConfigs{CfgAutoOffsetReset: "earliest"}
	for id := int32(1); id <= 2; id++ {
		leads := func(TP) bool { return cp.leader.Load() == id }
		co := New(Options{
			Config:   DefaultConfig(),
			Configs:  func(context.Context, string) (bridge.GroupConfigs, error) { return cfg, nil },
			Shared:   etcdShared{n, &cp.afterGet, &cp.afterPut},
			Leads:    leads,
			Writable: func(tp TP) (func(), bool) { return func() {}, leads(tp) },
			Log:      slog.New(slog.DiscardHandler),
			Sweep:    time.Hour,
		})
		if err := co.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(co.Close)
		cp.co[id] = co
	}
	return cp
}

// move hands every partition to gateway id, as a view change does.
func (cp *clusterPair) move(id int32) {
	cp.leader.Store(id)
	for i := int32(1); i <= 2; i++ {
		cp.co[i].Moved(func(string, int32) bool { return i != id })
	}
}

// fetch is one ShareFetch of tp0 by member on gateway id in its session
// epoch (advanced), acquiring up to 10 of the offsets 0-9: the
// acknowledgement codes and what it acquired.
func (cp *clusterPair) fetch(t *testing.T, id int32, member string, epoch *int32, acks ...Ack) (map[TP]int16, []Acquired, error) {
	t.Helper()
	ctx := context.Background()
	co := cp.co[id]
	res := co.Session(ctx, SessionRequest{Group: "g", Member: member, Epoch: *epoch, Fetch: true,
		Add: []SessionPart{{TP: tp0, TopicID: [16]byte{1}}}, Acks: acks})
	if res.Code != 0 {
		t.Fatalf("session of %s on %d: %v", member, id, kerr.ErrorForCode(res.Code))
	}
	*epoch++
	if _, err := co.FetchFrom(ctx, "g", tp0, [16]byte{1}, func(context.Context) (int64, error) { return 0, nil }); err != nil {
		return res.Acks, nil, err
	}
	lim := co.Settings(ctx, "g").limits()
	lim.MaxRecords = 10
	return res.Acks, co.Acquire("g", member, tp0, []Batch{{Base: 0, Last: 9}}, lim), nil
}

func accepted(first, last int64) Ack {
	return Ack{TP: tp0, First: first, Last: last, Types: []int8{AckAccept}}
}

// A share partition follows its leader through etcd: the new leader
// starts from what the old one had acknowledged, the old one's
// acknowledgements after the move are refused, and a partition that comes
// back reads what was done meanwhile (a member's open session goes on
// with the new state, not the one held before the move).
func TestSharedPartitionFollowsTheLeader(t *testing.T) {
	t.Parallel()
	cp := newClusterPair(t)
	var e1, e2 int32
	if _, got, err := cp.fetch(t, 1, "m1", &e1); err != nil || !slices.Equal(got, []Acquired{acq(0, 9, 1)}) {
		t.Fatalf("m1 on gateway 1 acquired %v (%v)", got, err)
	}
	if acks, _, _ := cp.fetch(t, 1, "m1", &e1, accepted(0, 4)); acks[tp0] != 0 {
		t.Fatalf("m1 accepts 0-4: %v", kerr.ErrorForCode(acks[tp0]))
	}
	if _, _, err := cp.fetch(t, 2, "m2", &e2); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("fetch on the gateway not leading: %v", err)
	}

	cp.move(2)
	e2 = 0
	if _, got, err := cp.fetch(t, 2, "m2", &e2); err != nil || !slices.Equal(got, []Acquired{acq(5, 9, 2)}) {
		t.Fatalf("m2 on the new leader acquired %v (%v), want 5-9 on their second delivery", got, err)
	}
	if acks, _, _ := cp.fetch(t, 1, "m1", &e1, accepted(5, 9)); acks[tp0] != kerr.NotLeaderForPartition.Code {
		t.Fatalf("m1 accepts on the old leader: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(acks[tp0]))
	}
	// m2 accepts 5-7 and closes its session, releasing 8-9.
	if acks, _, _ := cp.fetch(t, 2, "m2", &e2, accepted(5, 7)); acks[tp0] != 0 {
		t.Fatalf("m2 accepts 5-7: %v", kerr.ErrorForCode(acks[tp0]))
	}
	if res := cp.co[2].Session(context.Background(), SessionRequest{Group: "g", Member: "m2", Epoch: -1}); res.Code != 0 {
		t.Fatalf("m2 closes: %v", kerr.ErrorForCode(res.Code))
	}

	// Back to gateway 1: m1's session goes on, and gets 8-9 (its hold on
	// 5-9 went with the move).
	cp.move(1)
	if _, got, err := cp.fetch(t, 1, "m1", &e1); err != nil || !slices.Equal(got, []Acquired{acq(8, 9, 3)}) {
		t.Fatalf("m1 back on gateway 1 acquired %v (%v), want 8-9", got, err)
	}
	if acks, _, _ := cp.fetch(t, 1, "m1", &e1, accepted(8, 9)); acks[tp0] != 0 {
		t.Fatalf("m1 accepts 8-9: %v", kerr.ErrorForCode(acks[tp0]))
	}
	offs, err := cp.co[2].Offsets(context.Background(), "g")
	if err != nil || offs[tp0].Start != 10 {
		t.Fatalf("offsets read from etcd on gateway 2: %+v (%v), want start 10", offs, err)
	}
}

// A partition read again from etcd (after a view change) while this
// gateway writes it keeps what the write brought: an acknowledgement that
// lands between the read and its answer is not undone by the older state
// read, so the records it accepted are not handed out again.
func TestSharedReadAgainKeepsANewerWrite(t *testing.T) {
	t.Parallel()
	cp := newClusterPair(t)
	var e1 int32
	if _, got, err := cp.fetch(t, 1, "m1", &e1); err != nil || !slices.Equal(got, []Acquired{acq(0, 9, 1)}) {
		t.Fatalf("m1 acquired %v (%v)", got, err)
	}
	cp.move(1) // a view change: the partition is read again before its next use
	ackDuringRead := func() {
		res := cp.co[1].Session(context.Background(), SessionRequest{Group: "g", Member: "m1", Epoch: e1,
			Acks: []Ack{accepted(0, 4)}})
		if res.Code != 0 || res.Acks[tp0] != 0 {
			t.Errorf("m1 accepts 0-4 during the read: %v %v", kerr.ErrorForCode(res.Code), kerr.ErrorForCode(res.Acks[tp0]))
		}
		e1++
	}
	cp.afterGet.Store(&ackDuringRead)
	m2 := int32(0)
	if _, got, err := cp.fetch(t, 1, "m2", &m2); err != nil || len(got) != 0 {
		t.Fatalf("m2 acquired %v (%v) while m1 holds 5-9 and 0-4 are accepted", got, err)
	}
	if d := func() string {
		cp.co[1].mu.Lock()
		defer cp.co[1].mu.Unlock()
		return dump(cp.co[1].groups["g"].parts[tp0])
	}(); d != "5-10 q1m1 q1m1 q1m1 q1m1 q1m1" {
		t.Fatalf("after the read: %s", d)
	}
}

// A partition read again while its write is on the wire, after etcd
// took the write and before its answer, is kept: the read sees the new
// revision before the partition knows it, and replacing the partition
// would drop the locks of the records its members hold.
func TestSharedReadAgainDuringAWrite(t *testing.T) {
	t.Parallel()
	cp := newClusterPair(t)
	var e1, e2 int32
	if _, got, err := cp.fetch(t, 1, "m1", &e1); err != nil || !slices.Equal(got, []Acquired{acq(0, 9, 1)}) {
		t.Fatalf("m1 acquired %v (%v)", got, err)
	}
	var during []Acquired
	fetchDuringWrite := func() {
		cp.move(1) // read again before the next use
		var err error
		if _, during, err = cp.fetch(t, 1, "m2", &e2); err != nil {
			t.Errorf("m2's fetch during the write: %v", err)
		}
	}
	cp.afterPut.Store(&fetchDuringWrite)
	if acks, _, _ := cp.fetch(t, 1, "m1", &e1, accepted(0, 4)); acks[tp0] != 0 {
		t.Fatalf("m1 accepts 0-4: %v", kerr.ErrorForCode(acks[tp0]))
	}
	if len(during) != 0 {
		t.Fatalf("m2 acquired %v during the write, while m1 holds 5-9", during)
	}
}
