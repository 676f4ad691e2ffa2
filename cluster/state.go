package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Shared state: small values that several gateways of a cluster read and
// write (today the share groups' share-partition states, package share),
// kept in etcd under Prefix + "state/". Every write is a compare-and-set
// on the key's revision, so a gateway that read an older value cannot
// overwrite a newer one, and is fenced on this gateway's session lease:
// a gateway whose session etcd expired (it is dead to the others, its
// partitions handed over) writes nothing, whatever its clock says.

// ErrStateConflict is a PutState whose key changed since the revision it
// was based on (another gateway or an admin request wrote it), or whose
// session is gone: the caller reads the key again.
var ErrStateConflict = errors.New("cluster: shared state changed since it was read")

// stateCallTimeout bounds one etcd call of the shared state.
const stateCallTimeout = 5 * time.Second

// StateAnyRevision makes PutState unconditional on the key's revision
// (it is still fenced on the session).
const StateAnyRevision int64 = -1

func (n *Node) stateKey(key string) string { return n.opts.Prefix + "state/" + key }

// GetState reads key: its value and revision (nil and 0 when it does not
// exist). Linearizable: it sees every write acknowledged before it. Any
// goroutine.
func (n *Node) GetState(ctx context.Context, key string) ([]byte, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, stateCallTimeout)
	defer cancel()
	r, err := n.cli.Get(ctx, n.stateKey(key))
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: etcd get state: %w", err)
	}
	if len(r.Kvs) == 0 {
		return nil, 0, nil
	}
	return r.Kvs[0].Value, r.Kvs[0].ModRevision, nil
}

// PutState writes value to key (nil deletes it) if the key's revision is
// still ifRev (0: the key does not exist; StateAnyRevision: any) and this
// gateway's session lease still holds its member key. It returns the
// revision of the write; ErrStateConflict when either check failed. Any
// goroutine.
func (n *Node) PutState(ctx context.Context, key string, value []byte, ifRev int64) (int64, error) {
	lease := clientv3.LeaseID(n.lease.Load())
	if lease == 0 || !n.LeaseLive() {
		return 0, ErrStateConflict
	}
	ctx, cancel := context.WithTimeout(ctx, stateCallTimeout)
	defer cancel()
	k := n.stateKey(key)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue(n.memberKey(n.opts.Self.ID)), "=", lease)}
	if ifRev != StateAnyRevision {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", ifRev))
	}
	op := clientv3.OpPut(k, string(value))
	if value == nil {
		op = clientv3.OpDelete(k)
	}
	r, err := n.cli.Txn(ctx).If(cmps...).Then(op).Commit()
	if err != nil {
		return 0, fmt.Errorf("cluster: etcd put state: %w", err)
	}
	if !r.Succeeded {
		return 0, ErrStateConflict
	}
	return r.Header.Revision, nil
}

// ScanState calls fn with every key under prefix that has a value (key
// without the cluster's prefix), in key order. Any goroutine.
func (n *Node) ScanState(ctx context.Context, prefix string, fn func(key string, value []byte, rev int64)) error {
	_, err := n.ScanStateAt(ctx, prefix, fn)
	return err
}

// ScanStateAt is ScanState that also returns the etcd revision the scan
// read at: a key written later has a greater revision. Any goroutine.
func (n *Node) ScanStateAt(ctx context.Context, prefix string, fn func(key string, value []byte, rev int64)) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, stateCallTimeout)
	defer cancel()
	base := n.stateKey("")
	r, err := n.cli.Get(ctx, base+prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("cluster: etcd scan state: %w", err)
	}
	for _, kv := range r.Kvs {
		fn(string(kv.Key[len(base):]), kv.Value, kv.ModRevision)
	}
	return r.Header.Revision, nil
}

// StateEntry is one key of PutStates: its new value, nil to delete it.
type StateEntry struct {
	Key   string
	Value []byte
}

// maxStateOps bounds the operations of one etcd transaction (etcd's
// --max-txn-ops defaults to 128).
const maxStateOps = 100

// PutStates writes entries unconditionally on their revisions, fenced on
// this gateway's session as PutState is, in one etcd transaction per
// maxStateOps entries (in order). ErrStateConflict when the session is
// gone. Any goroutine.
func (n *Node) PutStates(ctx context.Context, entries []StateEntry) error {
	for len(entries) > 0 {
		chunk := entries[:min(len(entries), maxStateOps)]
		entries = entries[len(chunk):]
		lease := clientv3.LeaseID(n.lease.Load())
		if lease == 0 || !n.LeaseLive() {
			return ErrStateConflict
		}
		ops := make([]clientv3.Op, len(chunk))
		for i, e := range chunk {
			if e.Value == nil {
				ops[i] = clientv3.OpDelete(n.stateKey(e.Key))
			} else {
				ops[i] = clientv3.OpPut(n.stateKey(e.Key), string(e.Value))
			}
		}
		cctx, cancel := context.WithTimeout(ctx, stateCallTimeout)
		r, err := n.cli.Txn(cctx).If(clientv3.Compare(clientv3.LeaseValue(n.memberKey(n.opts.Self.ID)), "=", lease)).Then(ops...).Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: etcd put states: %w", err)
		}
		if !r.Succeeded {
			return ErrStateConflict
		}
	}
	return nil
}

// WatchState calls changed, on its own goroutine, after keys under
// prefix were put or deleted (several changes may come as one call), and
// once when the watch starts again after etcd was lost, since changes may
// have been missed meanwhile; the caller reads the keys again. It returns
// when ctx ends or the node closes. Any goroutine.
func (n *Node) WatchState(ctx context.Context, prefix string, changed func()) {
	key := n.stateKey(prefix)
	for ctx.Err() == nil && n.ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(n.ctx, cancel)
		wc := n.cli.Watch(clientv3.WithRequireLeader(wctx), key, clientv3.WithPrefix())
		changed()
		for r := range wc {
			if r.Err() != nil {
				break
			}
			if len(r.Events) > 0 {
				changed()
			}
		}
		stop()
		cancel()
		select {
		case <-ctx.Done():
		case <-n.ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
