package txn

import (
	"context"
	"sort"

	"github.com/iggy-kafka/gateway/bridge"
)

// Info is one transactional id as DescribeTransactions and
// ListTransactions show it.
type Info struct {
	ID         string
	State      State
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	StartMs    int64 // -1 when no transaction is open
	Partitions []Partition
}

func (e *txnEntry) info() Info {
	return Info{ID: e.id, State: e.state, ProducerID: e.pid, Epoch: e.epoch, TimeoutMs: e.timeoutMs,
		StartMs: e.startMs, Partitions: e.sortedParts()}
}

// Here is 0 when this coordinator serves id now, with its state in
// memory (cluster mode loads it); else the code to answer for id. Any
// goroutine.
func (co *Coordinator) Here(ctx context.Context, id string) int16 { return co.loadID(ctx, id) }

// Describe returns id's state; ok is false for an unknown id.
func (co *Coordinator) Describe(id string) (Info, bool) {
	e, _ := co.entry(id, false)
	if e == nil {
		return Info{}, false
	}
	defer e.mu.Unlock()
	return e.info(), true
}

// List returns every id, sorted, for which keep is true.
func (co *Coordinator) List(keep func(Info) bool) []Info {
	co.mu.Lock()
	es := make([]*txnEntry, 0, len(co.ids))
	for _, e := range co.ids {
		es = append(es, e)
	}
	co.mu.Unlock()
	var out []Info
	for _, e := range es {
		e.mu.Lock()
		if !e.gone && e.pid >= 0 {
			if in := e.info(); keep(in) {
				out = append(out, in)
			}
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// deleteEntries are the deletions of id's keys.
func deleteEntries(id string) []bridge.TxnStateEntry {
	return []bridge.TxnStateEntry{{Key: keyTxn + id}, {Key: keyOffsets + id}}
}
