package handlers

// Transactions in cluster mode (docs/TRANSACTIONS.md, "Cluster mode"):
// each transactional id is coordinated by the gateway the group placement
// names for it, and its state is kept in the cluster's etcd, so the
// gateway it moves to loads it there (txn/cluster.go).

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"

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

// TxnOffsetCommit in cluster mode: a client sends it to its group's
// coordinator, which checks the membership; the offsets are then the
// transaction's, kept by the transaction's coordinator with its state and
// applied at its commit. When that is another gateway, the group's
// coordinator relays them through etcd (txnoffs/<id>/<group>, each name
// base64url): the transaction's coordinator watches these keys, answers
// each with the code its TxnOffsetCommit check gives, and the relaying
// gateway reads the answer and deletes the key.

// txnOffsPrefix is where relayed TxnOffsetCommits live in the cluster's
// shared state.
const txnOffsPrefix = "txnoffs/"

// offsRelay is one relayed TxnOffsetCommit; answered, code is the
// coordinator's answer.
type offsRelay struct {
	pid                 int64
	epoch               int16
	implicit, fencedOld bool
	group               string
	offs                []txn.Offset
	answered            bool
	code                int16
}

// Stored forms: a request is u8 1, i64 producer id, i16 epoch, u8 flags
// (bit 0 implicit, bit 1 fencedOld), then txn.EncodeGroupOffsets; an
// answer is u8 2, i16 code. Big-endian.
func (r offsRelay) encode() []byte {
	if r.answered {
		return binary.BigEndian.AppendUint16([]byte{2}, uint16(r.code))
	}
	b := binary.BigEndian.AppendUint64([]byte{1}, uint64(r.pid))
	b = binary.BigEndian.AppendUint16(b, uint16(r.epoch))
	f := byte(0)
	if r.implicit {
		f |= 1
	}
	if r.fencedOld {
		f |= 2
	}
	b = append(b, f)
	return append(b, txn.EncodeGroupOffsets(r.group, r.offs)...)
}

func parseOffsRelay(b []byte) (offsRelay, bool) {
	switch {
	case len(b) == 3 && b[0] == 2:
		return offsRelay{answered: true, code: int16(binary.BigEndian.Uint16(b[1:]))}, true
	case len(b) < 12 || b[0] != 1 || b[11] > 3:
		return offsRelay{}, false
	}
	r := offsRelay{pid: int64(binary.BigEndian.Uint64(b[1:])), epoch: int16(binary.BigEndian.Uint16(b[9:])),
		implicit: b[11]&1 != 0, fencedOld: b[11]&2 != 0}
	var err error
	if r.group, r.offs, err = txn.DecodeGroupOffsets(b[12:]); err != nil {
		return offsRelay{}, false
	}
	return r, true
}

func offsKey(id, group string) string {
	return txnOffsPrefix + base64.RawURLEncoding.EncodeToString([]byte(id)) + "/" + base64.RawURLEncoding.EncodeToString([]byte(group))
}

func parseOffsKey(key string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(key, txnOffsPrefix)
	i := strings.IndexByte(rest, '/')
	if !ok || i < 0 {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest[:i])
	return string(b), err == nil
}

// txnCommitOffsets holds a TxnOffsetCommit's offsets for the transaction:
// here when this gateway coordinates the id (or outside cluster mode),
// else through the id's coordinator.
func (c *Call) txnCommitOffsets(id string, r offsRelay) int16 {
	n := c.G.Cfg.Cluster
	if n == nil || n.GroupCode(id) != kerr.NotCoordinator.Code {
		return c.G.Txn.CommitOffsets(c.Ctx, id, r.pid, r.epoch, r.group, r.offs, r.implicit, r.fencedOld)
	}
	key := offsKey(id, r.group)
	rev, err := n.PutState(c.Ctx, key, r.encode(), cluster.StateAnyRevision)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	code := int16(0)
	err = awaitEtcd(c.Ctx, func(ctx context.Context) bool {
		v, at, err := n.GetState(ctx, key)
		if err != nil {
			return false
		}
		if a, ok := parseOffsRelay(v); ok && a.answered {
			_, _ = n.PutState(ctx, key, nil, at)
			code = a.code
			return true
		}
		if v != nil {
			rev = at
		}
		return false
	})
	if err != nil {
		// Withdrawn unless answered meanwhile; the client retries (the
		// offsets merge, so a late answer changes nothing).
		_, _ = n.PutState(context.WithoutCancel(c.Ctx), key, nil, rev)
		return kerr.CoordinatorLoadInProgress.Code
	}
	return code
}

// serveOffsets answers the relayed TxnOffsetCommits of the ids this
// gateway coordinates. txnMarks' goroutine.
func (tm *txnMarks) serveOffsets(ctx context.Context) {
	type req struct {
		key, id string
		r       offsRelay
		rev     int64
	}
	var reqs []req
	err := tm.n.ScanState(ctx, txnOffsPrefix, func(key string, v []byte, rev int64) {
		id, ok := parseOffsKey(key)
		r, ok2 := parseOffsRelay(v)
		if ok && ok2 && !r.answered {
			reqs = append(reqs, req{key, id, r, rev})
		}
	})
	if err != nil {
		tm.g.Log.Warn("cluster: reading relayed TxnOffsetCommits failed; retried", "err", err)
		return
	}
	for _, q := range reqs {
		if tm.n.GroupCode(q.id) != 0 {
			continue // another gateway's, or not servable here yet
		}
		code := tm.g.Txn.CommitOffsets(ctx, q.id, q.r.pid, q.r.epoch, q.r.group, q.r.offs, q.r.implicit, q.r.fencedOld)
		a := offsRelay{answered: true, code: code}
		if _, err := tm.n.PutState(ctx, q.key, a.encode(), q.rev); err != nil && !errors.Is(err, cluster.ErrStateConflict) {
			tm.g.Log.Debug("cluster: answering a relayed TxnOffsetCommit failed", "transactional_id", q.id, "err", err)
		}
	}
}

func (p txnPlacement) Settled() bool { return p.n.Settled() }
