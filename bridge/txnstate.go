package bridge

import (
	"context"
	"encoding/binary"
	"errors"
)

// TxnStateStore keeps the transaction coordinator's state (package txn,
// docs/TRANSACTIONS.md): small values by key, the last write of a key
// winning. The coordinator reads it whole once, when it starts, and
// writes a few keys per transaction step. Keys and values are opaque here;
// their meaning lives in package txn. Any goroutine.
type TxnStateStore interface {
	// PutTxnStates stores entries, in order, as one write where the store
	// can (the embedded store: one synced batch; Iggy: one send). An
	// entry with a nil Value deletes its key. It must be durable when it
	// returns nil, whatever the store's sync policy: an acknowledged
	// commit must survive a crash.
	PutTxnStates(ctx context.Context, entries []TxnStateEntry) error
	// PutTxnStatesLazy is PutTxnStates for a write a crash may lose: it
	// is read back by this process at once, and durable with the next
	// PutTxnStates (the embedded store's log keeps writes in order) or by
	// the store's own policy. Only for state the coordinator can rebuild
	// from what was durable before it (a transaction's complete state:
	// its prepared state, already durable, finishes it again).
	PutTxnStatesLazy(ctx context.Context, entries []TxnStateEntry) error
	// TxnStates calls fn with every key that has a value, each once, in
	// no promised order. value is valid only during fn.
	TxnStates(ctx context.Context, fn func(key string, value []byte)) error
}

// TxnStateGetter is a TxnStateStore that reads one key, linearizably (the
// cluster's etcd): in cluster mode a coordinator loads a transactional id
// when it is handed the id, not once at start. Any goroutine.
type TxnStateGetter interface {
	// TxnState is key's value, nil when it has none.
	TxnState(ctx context.Context, key string) ([]byte, error)
}

// ShareStateKeyPrefix starts the keys the share-group coordinator (package
// share) keeps in the same store; the transaction coordinator skips them.
const ShareStateKeyPrefix = "share/"

// StreamsStateKeyPrefix starts the keys of the streams groups the group
// coordinator (package group) keeps in the same store.
const StreamsStateKeyPrefix = "streams/"

// TxnStateEntry is one key's new value; nil deletes the key.
type TxnStateEntry struct {
	Key   string
	Value []byte
}

// MaxTxnStateKey bounds a key: it must fit a u16 length in the stores'
// records.
const MaxTxnStateKey = 1 << 15

// ErrTxnStateRecord is a stored transaction-state record that cannot be
// read.
var ErrTxnStateRecord = errors.New("bridge: malformed transaction state record")

// AppendTxnStateRecord appends the self-describing form of e that a store
// without keys keeps (Iggy's state topic, one record per entry):
//
//	u16 BE key length, key, u8 0 (deleted) or 1 (value follows), value
func AppendTxnStateRecord(dst []byte, e TxnStateEntry) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(e.Key)))
	dst = append(dst, e.Key...)
	if e.Value == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return append(dst, e.Value...)
}

// ParseTxnStateRecord reads a record AppendTxnStateRecord wrote; value is
// nil for a deletion and aliases rec otherwise.
func ParseTxnStateRecord(rec []byte) (key string, value []byte, err error) {
	if len(rec) < 3 {
		return "", nil, ErrTxnStateRecord
	}
	n := int(binary.BigEndian.Uint16(rec))
	if len(rec) < 3+n {
		return "", nil, ErrTxnStateRecord
	}
	key = string(rec[2 : 2+n])
	switch rec[2+n] {
	case 0:
		if len(rec) != 3+n {
			return "", nil, ErrTxnStateRecord
		}
		return key, nil, nil
	case 1:
		return key, rec[3+n:], nil
	}
	return "", nil, ErrTxnStateRecord
}
