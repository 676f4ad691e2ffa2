package txn

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// AbortExpired aborts every transaction open longer than its timeout, as
// Kafka's coordinator does: the epoch is bumped first, so the producer
// that left it is fenced, and the abort markers carry the new epoch. It
// also finishes prepared transactions whose markers failed, and forgets
// ids idle past IDExpiry in a complete state. It returns how many
// transactions it aborted.
func (co *Coordinator) AbortExpired(ctx context.Context) int {
	now := co.nowMs()
	co.mu.Lock()
	es := make([]*txnEntry, 0, len(co.ids))
	for _, e := range co.ids {
		es = append(es, e)
	}
	co.mu.Unlock()
	n := 0
	for _, e := range es {
		e.mu.Lock()
		switch {
		case e.gone:
		case e.state == Ongoing && e.startMs >= 0 && now-e.startMs > int64(e.timeoutMs):
			if co.bump(e) == 0 {
				if err := co.finish(ctx, e, false); err != nil {
					co.o.Log.Warn("txn: aborting a timed-out transaction failed; retried", "transactional_id", e.id, "err", err)
				} else {
					n++
				}
			}
		case (e.state == PrepareCommit || e.state == PrepareAbort) && now-e.updateMs > int64(e.timeoutMs):
			// Its markers failed and no EndTxn retried them within the
			// timeout (a timeout abort, or a producer gone): Kafka's
			// coordinator retries markers until they are written.
			if err := co.complete(ctx, e, e.state == PrepareCommit, true); err != nil {
				co.o.Log.Warn("txn: finishing a prepared transaction failed; retried", "transactional_id", e.id, "err", err)
			}
		case (e.state == Empty || e.state == CompleteCommit || e.state == CompleteAbort) &&
			now-e.updateMs > co.o.IDExpiry.Milliseconds():
			co.forget(ctx, e)
		}
		e.mu.Unlock()
	}
	return n
}

// forget removes an idle id. Under e.mu.
func (co *Coordinator) forget(ctx context.Context, e *txnEntry) {
	if err := co.o.Store.PutTxnStates(ctx, deleteEntries(e.id)); err != nil {
		return
	}
	e.gone = true
	co.mu.Lock()
	if co.ids[e.id] == e {
		delete(co.ids, e.id)
	}
	co.mu.Unlock()
}

// Run aborts timed-out transactions every interval until ctx ends (Kafka's
// transaction.abort.timed.out.transaction.cleanup.interval.ms), and every
// PurgeInterval forgets the aborted transactions no reader can reach any
// more (PurgeAborted). Its own goroutine.
func (co *Coordinator) Run(ctx context.Context, interval time.Duration) {
	if co.clustered() {
		go co.runAdopt(ctx)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	lastPurge := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			co.AbortExpired(cctx)
			if time.Since(lastPurge) >= PurgeInterval {
				lastPurge = time.Now()
				co.PurgeAborted(cctx)
			}
			cancel()
		}
	}
}

// PurgeInterval is how often Run purges the aborted transactions below
// their partitions' log start.
const PurgeInterval = time.Minute

// ForgetTopic forgets the aborted transactions of topic's partitions, in
// the index and in the store: the topic was deleted, and one made again
// under its name must not have its offsets read as aborted. Any goroutine.
func (co *Coordinator) ForgetTopic(ctx context.Context, topic string) {
	for _, p := range co.Index.WithAborted() {
		if p.Topic == topic {
			co.dropAborted(ctx, p, math.MaxUint64)
		}
	}
}

// PurgeAborted forgets, in the index and in the store, the aborted
// transactions whose abort marker lies below their partition's log start
// (retention or DeleteRecords removed their records) or whose partition
// no longer exists, so the aborted list does not grow without bound. A
// partition whose log start cannot be read is left for the next purge.
// Any goroutine.
func (co *Coordinator) PurgeAborted(ctx context.Context) {
	for _, p := range co.Index.WithAborted() {
		start, err := co.o.Env.LogStart(ctx, p)
		switch {
		case errors.Is(err, ErrPartitionGone):
			start = math.MaxUint64
		case err != nil:
			continue
		}
		co.dropAborted(ctx, p, start)
	}
}

// dropAborted forgets p's aborted transactions whose marker lies below
// start, in the index and in the store.
func (co *Coordinator) dropAborted(ctx context.Context, p Partition, start uint64) {
	gone := co.Index.DropAbortedBelow(p, start)
	if len(gone) == 0 {
		return
	}
	ents := make([]bridge.TxnStateEntry, len(gone))
	for i, a := range gone {
		ents[i] = bridge.TxnStateEntry{Key: abortedKey(p, a)}
	}
	if err := co.o.Store.PutTxnStates(ctx, ents); err != nil {
		// The index forgot them; the store keeps them until a restart
		// loads them and the next purge drops them again.
		co.o.Log.Warn("txn: purging aborted transactions failed; retried after a restart", "topic", p.Topic, "partition", p.Partition, "err", err)
	}
}
