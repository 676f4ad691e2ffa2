package iggy

// The transaction coordinator's state (bridge.TxnStateStore) is a
// state-stream topic, one partition, one message per entry
// (bridge.AppendTxnStateRecord); the latest message of a key wins, a
// deletion removes it. The Store keeps the fold in memory from the first
// TxnStates on.
//
// Compaction: every change adds a message, so the topic would grow with
// every transaction ever run, and a start replays it whole. When the
// topic holds more than twice the live entries (plus txnCompactSlack),
// the live entries are written to a new generation, topic
// TxnStateTopic + "." + n, followed by a record of key txnSealKey (the
// changes made after it are appended after the seal); then the old
// generation is deleted. A start replays the highest sealed
// generation (generation 0, TxnStateTopic itself, needs no seal), and
// deletes the others: a compaction cut short by a crash left an unsealed
// topic, which is ignored, and the generation before it is whole.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/iggy-kafka/gateway/bridge"
)

// TxnStateTopic is the state-stream topic (generation 0) holding the
// transaction state.
const TxnStateTopic = "kafka-txn-state"

// txnSealKey closes a compacted generation. It cannot be a coordinator
// key (those start with a letter and '/').
const txnSealKey = "\x00sealed"

// txnCompactSlack is how many superseded messages a generation may hold
// beyond the live ones before it is compacted.
const txnCompactSlack = 4096

// txnCompactBatch bounds the messages of one send while compacting.
const txnCompactBatch = 512

// txnStates is the Store's fold of the transaction state.
type txnStates struct {
	// gate: puts share it, a compaction holds it alone.
	gate sync.RWMutex

	// slack is txnCompactSlack unless set (tests).
	slack int

	mu      sync.Mutex // guards the fields below
	loaded  bool
	gen     int               // the generation appended to
	live    map[string][]byte // key -> value
	records int               // messages in the current generation
}

func (t *txnStates) compactSlack() int {
	if t.slack > 0 {
		return t.slack
	}
	return txnCompactSlack
}

func txnTopic(gen int) stateTopic {
	name := TxnStateTopic
	if gen > 0 {
		name += "." + strconv.Itoa(gen)
	}
	return stateTopic{name: name, what: "transaction state", resend: true}
}

// txnGeneration reads a state-stream topic name as a generation.
func txnGeneration(name string) (int, bool) {
	if name == TxnStateTopic {
		return 0, true
	}
	rest, ok := strings.CutPrefix(name, TxnStateTopic+".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// PutTxnStatesLazy implements bridge.TxnStateStore: a send is a send, as
// durable as PutTxnStates. Any goroutine.
func (s *Store) PutTxnStatesLazy(ctx context.Context, entries []bridge.TxnStateEntry) error {
	return s.PutTxnStates(ctx, entries)
}

// PutTxnStates implements bridge.TxnStateStore: the entries as one batch,
// durable as the server's fsync setting makes a send. A resent batch reads
// as once: the last write of a key wins. Any goroutine.
func (s *Store) PutTxnStates(ctx context.Context, entries []bridge.TxnStateEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.loadTxnStates(ctx); err != nil {
		return err
	}
	t := &s.txn
	t.gate.RLock()
	t.mu.Lock()
	topic := txnTopic(t.gen)
	t.mu.Unlock()
	msgs := make([]stateMsg, len(entries))
	for i, e := range entries {
		msgs[i].payload = bridge.AppendTxnStateRecord(nil, e)
		_, _ = rand.Read(msgs[i].id[:])
	}
	_, err := s.appendState(ctx, &topic, msgs...)
	compact := false
	if err == nil {
		t.mu.Lock()
		for _, e := range entries {
			if e.Value == nil {
				delete(t.live, e.Key)
			} else {
				t.live[e.Key] = append([]byte(nil), e.Value...)
			}
		}
		t.records += len(entries)
		compact = t.records > 2*len(t.live)+t.compactSlack()
		t.mu.Unlock()
	}
	t.gate.RUnlock()
	if compact {
		if cerr := s.compactTxnStates(ctx); cerr != nil && s.c.opts.Logger != nil {
			s.c.opts.Logger.Warn("iggy: compacting the transaction state failed; retried after more changes", "err", cerr)
		}
	}
	return err
}

// TxnStates implements bridge.TxnStateStore: the fold of the current
// generation, read from the server on the first call. Any goroutine.
func (s *Store) TxnStates(ctx context.Context, fn func(key string, value []byte)) error {
	if err := s.loadTxnStates(ctx); err != nil {
		return err
	}
	t := &s.txn
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, v := range t.live {
		fn(k, v)
	}
	return nil
}

// loadTxnStates replays the highest sealed generation once, and deletes
// the other generations.
func (s *Store) loadTxnStates(ctx context.Context) error {
	t := &s.txn
	t.mu.Lock()
	loaded := t.loaded
	t.mu.Unlock()
	if loaded {
		// Every put asks: the gate is not taken alone once loaded, so puts
		// in flight never wait for each other here.
		return nil
	}
	t.gate.Lock()
	defer t.gate.Unlock()
	t.mu.Lock()
	loaded = t.loaded
	t.mu.Unlock()
	if loaded {
		return nil // another caller loaded it meanwhile
	}
	topics, err := s.Topics(ctx, s.c.opts.StateStream)
	if err != nil && !errors.Is(err, ErrStreamNotFound) && !errors.Is(err, bridge.ErrTopicNotFound) {
		return fmt.Errorf("iggy: listing the transaction state: %w", err)
	}
	var gens []int
	for _, ti := range topics {
		if g, ok := txnGeneration(ti.Name); ok {
			gens = append(gens, g)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(gens)))
	if len(gens) == 0 {
		gens = []int{0}
	}
	chosen := -1
	var live map[string][]byte
	records := 0
	for _, g := range gens {
		topic := txnTopic(g)
		m, n, sealed, err := s.replayTxnStates(ctx, &topic)
		if err != nil {
			return err
		}
		if g == 0 || sealed {
			chosen, live, records = g, m, n
			break
		}
	}
	if chosen < 0 {
		// Only unsealed compactions: generation 0 was deleted after a
		// sealed one that is gone too; start empty rather than guess.
		chosen, live = gens[0]+1, map[string][]byte{}
	}
	for _, g := range gens {
		if g != chosen {
			topic := txnTopic(g)
			if err := s.DeleteTopic(ctx, s.c.opts.StateStream, topic.name); err != nil && !errors.Is(err, bridge.ErrTopicNotFound) {
				return fmt.Errorf("iggy: deleting an old transaction state generation: %w", err)
			}
		}
	}
	t.mu.Lock()
	t.loaded, t.gen, t.live, t.records = true, chosen, live, records
	t.mu.Unlock()
	return nil
}

// replayTxnStates folds one generation: its live entries, its message
// count, and whether it holds the seal (changes made after the compaction
// follow it). A record this build cannot
// read is skipped.
func (s *Store) replayTxnStates(ctx context.Context, topic *stateTopic) (map[string][]byte, int, bool, error) {
	live := map[string][]byte{}
	n, sealed := 0, false
	_, err := s.replayState(ctx, topic, 0, func(p []byte) {
		n++
		k, v, err := bridge.ParseTxnStateRecord(p)
		if err != nil {
			return
		}
		if k == txnSealKey {
			sealed = true // the changes after it were appended once it was whole
			return
		}
		if v == nil {
			delete(live, k)
			return
		}
		live[k] = append([]byte(nil), v...)
	})
	return live, n, sealed, err
}

// compactTxnStates writes the live entries to the next generation, seals
// it, switches to it and deletes the old one. Puts wait meanwhile.
func (s *Store) compactTxnStates(ctx context.Context) error {
	t := &s.txn
	t.gate.Lock()
	defer t.gate.Unlock()
	t.mu.Lock()
	if t.records <= 2*len(t.live)+t.compactSlack() {
		t.mu.Unlock()
		return nil // another compaction came first
	}
	old, next := t.gen, t.gen+1
	keys := make([]string, 0, len(t.live))
	for k := range t.live {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	values := make([][]byte, len(keys))
	for i, k := range keys {
		values[i] = t.live[k]
	}
	t.mu.Unlock()
	topic := txnTopic(next)
	for at := 0; at < len(keys); at += txnCompactBatch {
		end := min(at+txnCompactBatch, len(keys))
		msgs := make([]stateMsg, 0, end-at)
		for i := at; i < end; i++ {
			m := stateMsg{payload: bridge.AppendTxnStateRecord(nil, bridge.TxnStateEntry{Key: keys[i], Value: values[i]})}
			_, _ = rand.Read(m.id[:])
			msgs = append(msgs, m)
		}
		if _, err := s.appendState(ctx, &topic, msgs...); err != nil {
			return err
		}
	}
	seal := stateMsg{payload: bridge.AppendTxnStateRecord(nil, bridge.TxnStateEntry{Key: txnSealKey, Value: []byte{}})}
	_, _ = rand.Read(seal.id[:])
	if _, err := s.appendState(ctx, &topic, seal); err != nil {
		return err
	}
	t.mu.Lock()
	t.gen, t.records = next, len(keys)+1
	t.mu.Unlock()
	oldTopic := txnTopic(old)
	if err := s.DeleteTopic(ctx, s.c.opts.StateStream, oldTopic.name); err != nil && !errors.Is(err, bridge.ErrTopicNotFound) {
		return fmt.Errorf("deleting generation %d: %w", old, err)
	}
	return nil
}
