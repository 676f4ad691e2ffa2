package iggy

// The transaction coordinator's state (bridge.TxnStateStore) is the
// state-stream topic TxnStateTopic, one partition, one message per entry
// (bridge.AppendTxnStateRecord); the latest message of a key wins, a
// deletion removes it. TxnStates replays the topic from its start.

import (
	"context"
	"crypto/rand"

	"github.com/iggy-kafka/gateway/bridge"
)

// TxnStateTopic is the state-stream topic holding the transaction state.
const TxnStateTopic = "kafka-txn-state"

var txnState = stateTopic{name: TxnStateTopic, what: "transaction state", resend: true}

// PutTxnStates implements bridge.TxnStateStore: the entries as one batch,
// durable as the server's fsync setting makes a send. A resent batch reads
// as once: the last write of a key wins. Any goroutine.
func (s *Store) PutTxnStates(ctx context.Context, entries []bridge.TxnStateEntry) error {
	if len(entries) == 0 {
		return nil
	}
	msgs := make([]stateMsg, len(entries))
	for i, e := range entries {
		msgs[i].payload = bridge.AppendTxnStateRecord(nil, e)
		_, _ = rand.Read(msgs[i].id[:])
	}
	_, err := s.appendState(ctx, &txnState, msgs...)
	return err
}

// TxnStates implements bridge.TxnStateStore: the fold of the whole topic.
// A record this build cannot read is skipped. Any goroutine.
func (s *Store) TxnStates(ctx context.Context, fn func(key string, value []byte)) error {
	live := make(map[string][]byte)
	if _, err := s.replayState(ctx, &txnState, 0, func(p []byte) {
		k, v, err := bridge.ParseTxnStateRecord(p)
		if err != nil {
			return
		}
		if v == nil {
			delete(live, k)
			return
		}
		live[k] = append([]byte(nil), v...)
	}); err != nil {
		return err
	}
	for k, v := range live {
		fn(k, v)
	}
	return nil
}
