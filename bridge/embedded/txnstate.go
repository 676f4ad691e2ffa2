package embedded

// The transaction coordinator's state (bridge.TxnStateStore), one key per
// entry:
//
//	'x' key -> value
//
// Under SyncAlways written with pebble.Sync: a transaction's commit is
// acknowledged to the producer once its state is stored, and a crash must
// not forget it. Lazy writes (a transaction's complete state, which its
// synced prepared state rebuilds) are not synced: pebble's log keeps
// writes in order, so the next synced write makes them durable too.
//
// Under SyncNever and SyncInterval, as the segment logs are, written to
// the kernel before the call returns, and synced only as the policy says:
// each write, lazy or not, goes to the journal (txnjournal.go) and to
// pebble unsynced.

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

const prefixTxnState = 'x'

func txnStateKey(key string) []byte {
	k := make([]byte, 0, 1+len(key))
	k = append(k, prefixTxnState)
	return append(k, key...)
}

// PutTxnStates implements bridge.TxnStateStore: one synced batch. Any
// goroutine.
func (s *Store) PutTxnStates(ctx context.Context, entries []bridge.TxnStateEntry) error {
	return s.putTxnStates(ctx, entries, pebble.Sync)
}

// PutTxnStatesLazy implements bridge.TxnStateStore: one batch, not synced.
// Any goroutine.
func (s *Store) PutTxnStatesLazy(ctx context.Context, entries []bridge.TxnStateEntry) error {
	return s.putTxnStates(ctx, entries, pebble.NoSync)
}

func (s *Store) putTxnStates(ctx context.Context, entries []bridge.TxnStateEntry, opts *pebble.WriteOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	ops := make([]journalOp, len(entries))
	for i, e := range entries {
		ops[i] = journalOp{kind: journalSet, key: txnStateKey(e.Key), value: e.Value}
		if e.Value == nil {
			ops[i].kind = journalDelete
		}
	}
	if err := s.commitOps(ops, opts); err != nil {
		return fmt.Errorf("%w: transaction state: %w", bridge.ErrUnavailable, err)
	}
	return nil
}

// TxnStates implements bridge.TxnStateStore. Any goroutine.
func (s *Store) TxnStates(ctx context.Context, fn func(key string, value []byte)) error {
	if err := s.enterRead(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	lo := []byte{prefixTxnState}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return fmt.Errorf("%w: transaction state: %w", bridge.ErrUnavailable, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("%w: transaction state: %w", bridge.ErrUnavailable, err)
		}
		fn(string(it.Key()[1:]), v)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("%w: transaction state: %w", bridge.ErrUnavailable, err)
	}
	return nil
}
