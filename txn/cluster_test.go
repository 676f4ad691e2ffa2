package txn

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// leaderOnly is the placement of a gateway that leads every partition
// and coordinates no transactional id, in a settled view.
type leaderOnly struct{}

func (leaderOnly) Code(string) int16   { return kerr.NotCoordinator.Code }
func (leaderOnly) Epoch() int32        { return 7 }
func (leaderOnly) Leads(Partition) int { return 1 }
func (leaderOnly) Settled() bool       { return true }

// TestAdoptHoldsOnlyOpenTransactions: after a membership change a leader
// reads the open transactions of its partitions from their coordinators'
// state. One whose marker is in the log already (written since the state
// was read, or by the previous leader; here an abort after a bump, at a
// later producer epoch) is recorded as ended, its abort in the aborted
// list, and holds nothing; one without a marker holds the last stable
// offset from where it was added; one the leader saw start keeps its own
// first offset.
func TestAdoptHoldsOnlyOpenTransactions(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store, env := &memStore{}, newEnv()
	co := New(Options{Store: store, Env: env, MaxTimeout: time.Minute, Placement: leaderOnly{}, Now: func() time.Time { return now }})
	ongoing := func(id string, pid int64, p Partition, bound uint64) {
		e := &txnEntry{id: id, pid: pid, epoch: 3, lastPid: -1, lastEpoch: -1, state: Ongoing, startMs: 1,
			parts: map[Partition]uint64{p: bound}, groups: map[string]struct{}{}, offsets: map[string][]Offset{}}
		if err := store.PutTxnStates(ctx, stateEntries(e, false)); err != nil {
			t.Fatal(err)
		}
	}
	ended, open, seen := Partition{"ended", 0}, Partition{"open", 0}, Partition{"seen", 0}
	ongoing("e", 11, ended, 3)
	ongoing("o", 12, open, 3)
	ongoing("s", 13, seen, 3)
	env.append(ended, 5) // 0-4; the transaction's first record at 3
	env.append(open, 5)
	env.append(seen, 5)
	if _, err := env.WriteMarker(ctx, ended, 11, 4, 7, false); err != nil { // at 5, epoch bumped
		t.Fatal(err)
	}
	if done := co.Index.BeginFirst(seen, 13); done != nil {
		done(4, true)
	}
	if err := co.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := co.Adopt(ctx); err != nil {
		t.Fatal(err)
	}
	if lso := co.Index.LastStable(ended, 6); lso != 6 {
		t.Errorf("the transaction already marked holds the last stable offset at %d, want 6 (none)", lso)
	}
	if !co.Index.hasAborted(ended, 11, 5) {
		t.Error("its abort is not in the aborted list")
	}
	if lso := co.Index.LastStable(open, 5); lso != 3 {
		t.Errorf("the open transaction: last stable offset %d, want 3 (where it was added)", lso)
	}
	if lso := co.Index.LastStable(seen, 5); lso != 4 {
		t.Errorf("the transaction the leader saw start: last stable offset %d, want 4 (its first batch)", lso)
	}
	if !co.Ready() {
		t.Error("not ready after a successful adoption")
	}
}
