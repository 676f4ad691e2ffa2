package txn

import (
	"context"
	"time"
)

// AbortExpired aborts every transaction open longer than its timeout, as
// Kafka's coordinator does: the epoch is bumped first, so the producer
// that left it is fenced, and the abort markers carry the new epoch. It
// also forgets ids idle past IDExpiry in a complete state. It returns how
// many transactions it aborted.
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
// transaction.abort.timed.out.transaction.cleanup.interval.ms). Its own
// goroutine.
func (co *Coordinator) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			co.AbortExpired(cctx)
			cancel()
		}
	}
}
