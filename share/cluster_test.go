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
// (the gateway's adapter does the same).
type etcdShared struct{ n *cluster.Node }

func (s etcdShared) GetState(ctx context.Context, key string) ([]byte, int64, error) {
	return s.n.GetState(ctx, key)
}

func (s etcdShared) PutState(ctx context.Context, key string, v []byte, ifRev int64) (int64, error) {
	rev, err := s.n.PutState(ctx, key, v, ifRev)
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
	co     [3]*Coordinator
	leader atomic.Int32
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
			Shared:   etcdShared{n},
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
