package handlers

// Transactions (docs/TRANSACTIONS.md): the glue between the transaction
// coordinator (package txn) and the rest of the gateway. The coordinator
// keeps each transactional id's state; what it needs of the gateway —
// producer ids, partitions' high watermarks, writing markers, applying
// offsets — is txnEnv, here.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/internal/fetchcache"
	"github.com/iggy-kafka/gateway/txn"
)

// TxnConfig turns transactions on. The zero value refuses them, as the
// gateway always did: FindCoordinator key type 1 answers
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, InitProducerId with a
// transactional id UNSUPPORTED_VERSION, and keys 24-28 are not served.
type TxnConfig struct {
	Enabled bool
	// Version is the transaction.version finalized (KIP-890): 2, the
	// default, lets clients add partitions implicitly and bump the epoch
	// at every EndTxn; 1 (or 0) keeps them on the protocol before it.
	Version int16
	// MaxTimeout caps a producer's transaction.timeout.ms (Kafka's
	// transaction.max.timeout.ms, 15 minutes).
	MaxTimeout time.Duration
	// MaxIDs bounds the transactional ids kept (memory).
	MaxIDs int
	// CheckInterval is how often timed-out transactions are aborted
	// (Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms,
	// 10 s); 0: 1 s.
	CheckInterval time.Duration
}

// txnServed gates the transaction keys (Spec.Gated).
func txnServed(cfg *Config) bool { return cfg.Transactions.Enabled }

// newTxnCoordinator makes g's coordinator; StartTransactions loads it.
func newTxnCoordinator(g *Gateway) *txn.Coordinator {
	t := g.Cfg.Transactions
	if t.MaxTimeout <= 0 {
		t.MaxTimeout = 15 * time.Minute
	}
	o := txn.Options{Store: g.Store, Env: txnEnv{g}, MaxTimeout: t.MaxTimeout, MaxIDs: t.MaxIDs, Log: g.Log}
	if n := g.Cfg.Cluster; n != nil {
		o.Store, o.Placement = clusterTxnState{n}, txnPlacement{n}
	}
	return txn.New(o)
}

// StartTransactions loads the coordinator's state, finishing what a crash
// interrupted, and starts its timeout loop. Before the gateway serves; a
// no-op without transactions.
func (g *Gateway) StartTransactions(ctx context.Context) error {
	if g.Txn == nil {
		return nil
	}
	if err := g.Txn.Load(ctx); err != nil {
		return err
	}
	every := g.Cfg.Transactions.CheckInterval
	if every <= 0 {
		every = time.Second
	}
	runCtx, cancel := context.WithCancel(context.Background())
	g.txnStop = cancel
	go g.Txn.Run(runCtx, every)
	if n := g.Cfg.Cluster; n != nil {
		go g.runTxnMarks(runCtx, n)
	}
	return nil
}

// CloseTransactions stops the timeout loop. Any goroutine; idempotent.
func (g *Gateway) CloseTransactions() {
	if g.txnStop != nil {
		g.txnStop()
	}
}

// txnEnv is what the coordinator needs of the gateway. Any goroutine.
type txnEnv struct{ g *Gateway }

// NewProducerID waits, up to txnIDWait, for a durably reserved id: the
// coordinator runs on a worker, so it may (the idempotent path on the
// event loop may not, and answers COORDINATOR_LOAD_IN_PROGRESS at once).
func (e txnEnv) NewProducerID() (int64, bool) {
	deadline := time.Now().Add(txnIDWait)
	for {
		if id, ok := e.g.Producers.Allocate(e.g.Store, e.g.Log); ok || time.Now().After(deadline) {
			return id, ok
		}
		select {
		case <-e.g.Producers.Ready():
			time.Sleep(5 * time.Millisecond) // a block is being reserved
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// txnIDWait bounds how long a transactional InitProducerId waits for a
// reserved producer id before it answers COORDINATOR_LOAD_IN_PROGRESS.
const txnIDWait = 2 * time.Second

// LogStart implements txn.Env: p's first stored offset, ErrPartitionGone
// for a topic or partition that no longer exists.
func (e txnEnv) LogStart(ctx context.Context, p txn.Partition) (uint64, error) {
	g := e.g
	ti, err := g.Store.Topic(ctx, g.Cfg.Stream, p.Topic)
	if errors.Is(err, bridge.ErrTopicNotFound) || err == nil && (p.Partition < 0 || p.Partition >= ti.Partitions) {
		return 0, txn.ErrPartitionGone
	}
	if err != nil {
		return 0, err
	}
	st, err := g.Store.Partition(ctx, g.Cfg.Stream, p.Topic, p.Partition)
	if err != nil {
		return 0, err
	}
	return st.Earliest, nil
}

func (e txnEnv) HighWatermark(ctx context.Context, p txn.Partition) (uint64, error) {
	g := e.g
	ti, err := g.Store.Topic(ctx, g.Cfg.Stream, p.Topic)
	if err == nil && (p.Partition < 0 || p.Partition >= ti.Partitions) {
		err = bridge.ErrPartitionNotFound
	}
	if err != nil {
		return 0, kerr.ErrorForCode(errCode(err, opWrite))
	}
	st, err := g.Store.Partition(ctx, g.Cfg.Stream, p.Topic, p.Partition)
	if err != nil {
		return 0, kerr.ErrorForCode(errCode(err, opWrite))
	}
	return st.Next, nil
}

// WriteMarker appends the marker under the producer's lock of the
// partition's idempotence state, which it moves to the marker's epoch: a
// batch of an older epoch (a producer fenced by a timeout) is refused from
// then on, and none can land between the check and the marker.
func (e txnEnv) WriteMarker(ctx context.Context, p txn.Partition, pid int64, epoch int16, coordEpoch int32, commit bool) (uint64, error) {
	g := e.g
	ti, err := g.Store.Topic(ctx, g.Cfg.Stream, p.Topic)
	if errors.Is(err, bridge.ErrTopicNotFound) || err == nil && p.Partition >= ti.Partitions {
		return 0, txn.ErrPartitionGone
	}
	if err != nil {
		return 0, err
	}
	if n := g.Cfg.Cluster; n != nil {
		// Only the partition's leader writes it (docs/CLUSTER.md).
		if !n.BeginWrite(p.Topic, p.Partition) {
			return 0, kerr.NotLeaderForPartition
		}
		defer n.EndWrite()
	}
	c := &Call{G: g, Ctx: ctx}
	sp, err := g.Idem.producer(c, seqPartKey{topic: ti.Name, id: ti.ID, partition: p.Partition}, pid)
	if err != nil {
		return 0, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.marked && coordEpoch < sp.markEpoch {
		// Kafka's check: a marker from an older coordinator than the last
		// one that marked this producer here (a stale operator's abort).
		return 0, kerr.TransactionCoordinatorFenced
	}
	m := bridge.Marker{ProducerID: pid, Epoch: epoch, Commit: commit, TimestampMs: time.Now().UnixMilli(), CoordinatorEpoch: coordEpoch}
	eb := getBig()
	defer putBig(eb)
	var stats bridge.ProduceStats
	if eb.B, stats, err = g.Format.EncodeMarker(eb.B, m); err != nil {
		return 0, err
	}
	base, durable, err := g.Store.AppendStaged(ctx, g.Cfg.Stream, p.Topic, p.Partition, eb.B, stats.Prepared)
	if err == nil && durable != nil {
		err = durable(ctx)
	}
	if err != nil {
		sp.dirty = true
		sp.wake()
		return 0, err
	}
	sp.marked, sp.markEpoch = true, coordEpoch
	sp.markers.Add(1)
	if epoch > sp.epoch {
		sp.epoch, sp.n = epoch, 0
		sp.wake()
	}
	key := PartitionKey{Topic: p.Topic, Partition: p.Partition}
	g.raiseFetchState(p.Topic, p.Partition, base+1)
	if g.tail != nil {
		kb := codec.AppendTxnMarker(make([]byte, 0, 96), int64(base), m)
		g.tail.Put(fetchcache.Key(key), identityOf(&ti), base, 1, kb)
	}
	if g.Watch != nil {
		g.Watch.Signal(key)
	}
	return base, nil
}

// FindMarker reads p from from to its end, a Poll's worth at a time.
func (e txnEnv) FindMarker(ctx context.Context, p txn.Partition, from uint64, pid int64, epoch int16) (uint64, bool, bool, error) {
	g := e.g
	st, err := g.Store.Partition(ctx, g.Cfg.Stream, p.Topic, p.Partition)
	if errors.Is(err, bridge.ErrTopicNotFound) || errors.Is(err, bridge.ErrPartitionNotFound) {
		return 0, false, true, nil // nothing left to mark
	}
	if err != nil {
		return 0, false, false, err
	}
	var at uint64
	found, commit := false, false
	var scanErr error
	for next := from; !found && next < st.Next; {
		polled := next
		err := g.Store.Poll(ctx, g.Cfg.Stream, p.Topic, p.Partition, polled, 1<<20, func(b []byte) bool {
			if v, err := bridge.ParseIggyBatch(b); err == nil {
				next = max(next, v.BaseOffset+uint64(v.Count))
			}
			scanErr = bridge.ScanProducerRecords(b, func(off uint64, ps bridge.ProducerSeq, control, commits bool) bool {
				if off >= from && control && ps.ProducerID == pid && ps.Epoch >= epoch {
					at, found, commit = off, true, commits
					return false
				}
				return true
			})
			return !found && scanErr == nil
		})
		if err == nil {
			err = scanErr
		}
		if errors.Is(err, bridge.ErrTopicNotFound) || errors.Is(err, bridge.ErrPartitionNotFound) {
			return 0, false, true, nil
		}
		if err != nil {
			return 0, false, false, err
		}
		if next == polled {
			break // nothing more stored
		}
	}
	return at, commit, found, nil
}

func (e txnEnv) CommitOffsets(ctx context.Context, group string, offs []txn.Offset) error {
	now := time.Now().UnixMilli()
	out := make([]bridge.GroupOffset, len(offs))
	for i, o := range offs {
		out[i] = bridge.GroupOffset{Topic: o.Topic, Partition: o.Partition.Partition, CommittedOffset: bridge.CommittedOffset{
			Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTime: now}}
	}
	return e.g.coordinator().ApplyTxnOffsets(ctx, group, out)
}

// fencedOld reports that a request version predates PRODUCER_FENCED
// (KIP-588), so INVALID_PRODUCER_EPOCH is answered instead.
func fencedOld(key, version int16) bool {
	switch key {
	case 24, 25, 26: // AddPartitionsToTxn, AddOffsetsToTxn, EndTxn
		return version < 2
	case 28: // TxnOffsetCommit
		return version < 3
	}
	return false
}
