package handlers

// Transactions in cluster mode (docs/TRANSACTIONS.md, "Cluster mode"):
// each transactional id is coordinated by the gateway the group placement
// names for it, and its state is kept in the cluster's etcd, so the
// gateway it moves to loads it there (txn/cluster.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/txn"
)

// txnStateKeyPrefix is where the transaction state lives in the cluster's
// shared state (beside the share groups' "share/" keys).
const txnStateKeyPrefix = "txn/"

// clusterTxnState is the transaction coordinator's store in cluster mode:
// etcd, fenced on this gateway's session. A write of an id's state (its
// entry, its pending offsets) holds the cluster's write gate and is
// refused (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) unless this
// gateway coordinates the id now, so once a membership change settles no
// gateway writes the state of an id that moved away, and the gateway it
// moved to reads the last state written. Any goroutine.
type clusterTxnState struct{ n *cluster.Node }

var _ bridge.TxnStateGetter = clusterTxnState{}

func (s clusterTxnState) PutTxnStates(ctx context.Context, entries []bridge.TxnStateEntry) error {
	owner, owned := "", false
	for _, e := range entries {
		if id, ok := txn.OwnerOf(e.Key); ok {
			if owned && id != owner {
				// One write is one id's state (txn.stateEntries,
				// deleteEntries): the gate is taken for one.
				return kerr.CoordinatorNotAvailable
			}
			owner, owned = id, true
		}
	}
	if owned {
		if code := s.n.BeginCoordinate(owner); code != 0 {
			return kerr.ErrorForCode(code)
		}
		defer s.n.EndWrite()
	}
	out := make([]cluster.StateEntry, len(entries))
	for i, e := range entries {
		out[i] = cluster.StateEntry{Key: txnStateKeyPrefix + e.Key, Value: e.Value}
	}
	if err := s.n.PutStates(ctx, out); err != nil {
		if err == cluster.ErrStateConflict {
			return kerr.NotCoordinator // the session is gone: others take over
		}
		return err
	}
	return nil
}

// PutTxnStatesLazy is PutTxnStates: etcd has no cheaper write.
func (s clusterTxnState) PutTxnStatesLazy(ctx context.Context, entries []bridge.TxnStateEntry) error {
	return s.PutTxnStates(ctx, entries)
}

func (s clusterTxnState) TxnStates(ctx context.Context, fn func(key string, value []byte)) error {
	return s.n.ScanState(ctx, txnStateKeyPrefix, func(key string, v []byte, _ int64) {
		fn(key[len(txnStateKeyPrefix):], v)
	})
}

func (s clusterTxnState) TxnState(ctx context.Context, key string) ([]byte, error) {
	v, _, err := s.n.GetState(ctx, txnStateKeyPrefix+key)
	return v, err
}

// txnPlacement is the coordinator's view of the cluster: an id is served
// where a group of its name would be (cluster.Node.GroupCode), and the
// coordinator epoch is the view's, which grows on every membership
// change. Any goroutine.
type txnPlacement struct{ n *cluster.Node }

func (p txnPlacement) Code(id string) int16 { return p.n.GroupCode(id) }
func (p txnPlacement) Epoch() int32         { return p.n.View().Epoch() }

func (p txnPlacement) Leads(tp txn.Partition) int {
	switch {
	case !p.n.Leads(tp.Topic, tp.Partition):
		return 0
	case !p.n.Serves(tp.Topic, tp.Partition):
		return -1
	}
	return 1
}
