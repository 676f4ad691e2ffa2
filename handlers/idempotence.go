package handlers

// Idempotent producers (docs/IDEMPOTENCE.md): per (topic, partition,
// producer id) the epoch and the last five batches' sequence ranges with
// their base offsets, as a Kafka broker keeps them. The check and the
// append of one (partition, producer) run under that producer's lock, so
// concurrent batches of one producer reach the store one at a time and in
// sequence order. State is rebuilt lazily from the message ids of what the
// store holds (bridge.ParseMessageID), so a retry after a restart is still
// recognised.

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/txn"
)

// Tunables. Kafka keeps five batches per producer (the most a client keeps
// in flight) and forgets a producer after producer.id.expiration.ms (one
// day); the rest bounds the work of a rebuild and of a gap wait.
const (
	retainedBatches = 5
	// producerExpiry is how long an idle producer's state is kept.
	producerExpiry = 24 * time.Hour
	// maxProducersPerPartition caps the state of one partition; past it
	// the least recently used producer is forgotten.
	maxProducersPerPartition = 1 << 14
	// rebuildMessages and rebuildBytes bound the tail of a partition read
	// to rebuild its producer state.
	rebuildMessages = 1 << 16
	rebuildBytes    = 64 << 20
	// seqGapWait is how long a batch whose predecessor has not been stored
	// yet waits for it (it may be in flight on another connection) before
	// it is answered OUT_OF_ORDER_SEQUENCE_NUMBER.
	seqGapWait = 500 * time.Millisecond
)

// Idempotence holds the producer state of every partition. The zero value
// is ready to use, so a Gateway built as a literal gets it too. Any
// goroutine.
type Idempotence struct {
	mu    sync.RWMutex
	parts map[seqPartKey]*seqPartition

	epochMu sync.Mutex
	epochs  map[int64]epochBump // InitProducerId epoch bumps

	// Rebuilds counts partition and producer state rebuilds, for tests.
	Rebuilds atomic.Int64
}

// seqPartKey names a partition; the topic id changes when a topic is
// deleted and made again, which drops the old state.
type seqPartKey struct {
	topic     string
	id        uint32
	partition int32
}

// seqPartition is the producer state of one partition.
type seqPartition struct {
	mu        sync.Mutex // guards loaded and producers; held across the rebuild
	loaded    bool
	producers map[int64]*seqProducer
}

// batchMeta is one stored batch: its sequence range, base offset and max
// timestamp (ms; -1 none), which Kafka answers a duplicate of it with as
// log_append_time, whatever the topic's timestamp type.
type batchMeta struct {
	first, last int32
	base        uint64
	maxTs       int64
}

// seqProducer is one producer's state on one partition. mu is held across
// check and append.
type seqProducer struct {
	mu      sync.Mutex
	epoch   int16 // -1: nothing known (any sequence is accepted)
	n       int   // batches retained, oldest first
	batches [retainedBatches]batchMeta
	// dirty: an append's outcome is unknown (the store failed or timed
	// out, the batch may be stored), so the state is re-read before use.
	dirty   bool
	changed chan struct{} // closed when the state moves, for gap waiters
	lastUse atomic.Int64  // unix ns of the last lookup
	// appendedMs is when this gateway last stored a batch of the producer
	// (ms since the epoch), 0 when it has not (state rebuilt from the
	// store). DescribeProducers reports it.
	appendedMs int64
	marked     bool  // a transaction marker of the producer is in the partition's tail read at load, or was written since (DescribeProducers)
	markEpoch  int32 // the coordinator epoch of the last such marker
	// markers counts the markers of the producer written here (under mu),
	// read without mu before a transactional batch's coordinator check: a
	// marker written between the check and the append ended the
	// transaction the check passed.
	markers atomic.Uint64
}

// seqVerdict is what the state says about a batch.
type seqVerdict int

const (
	seqAppend     seqVerdict = iota // store it
	seqDuplicate                    // one of the retained batches: answer its base offset and max timestamp
	seqOutOfOrder                   // OUT_OF_ORDER_SEQUENCE_NUMBER
	seqStaleEpoch                   // INVALID_PRODUCER_EPOCH
)

func (v seqVerdict) String() string {
	switch v {
	case seqAppend:
		return "append"
	case seqDuplicate:
		return "duplicate"
	case seqOutOfOrder:
		return "out_of_order"
	}
	return "stale_epoch"
}

// nextSeq is the sequence after s, wrapping at 2^31 as Kafka does.
func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// lastSeqOf is the sequence of the last record of a batch.
func lastSeqOf(base, records int32) int32 {
	return int32((int64(base) + int64(records) - 1) % (math.MaxInt32 + 1))
}

// check applies Kafka's producer-state rules to a batch (epoch, first..last)
// and says whether waiting could change the answer: a batch ahead of the
// stored sequence may have its predecessor in flight on another connection.
// The retained batch a duplicate is answered with.
func (p *seqProducer) check(epoch int16, first, last int32) (v seqVerdict, dup batchMeta, wait bool) {
	switch {
	case p.epoch < 0:
		// Unknown producer (new to the partition, expired, or beyond the
		// rebuilt tail): Kafka accepts any sequence. A first sequence
		// other than 0 may mean its earlier batches are still in flight.
		return seqAppend, dup, first != 0
	case epoch < p.epoch:
		return seqStaleEpoch, dup, false
	case epoch > p.epoch || p.n == 0:
		// A new epoch starts at sequence 0 (the Java producer bumps its
		// epoch locally after a sequence error; KIP-360), also one that a
		// transaction marker brought here before any batch of it
		// (transaction.version 2 writes its markers at the bumped epoch).
		if first == 0 {
			return seqAppend, dup, false
		}
		return seqOutOfOrder, dup, true
	}
	for i := 0; i < p.n; i++ {
		if b := &p.batches[i]; b.first == first && b.last == last {
			return seqDuplicate, *b, false
		}
	}
	lastStored := p.batches[p.n-1].last
	if first == nextSeq(lastStored) {
		return seqAppend, dup, false
	}
	// Ahead of the stored sequence (mod 2^31): a predecessor may come.
	ahead := (int64(first) - int64(lastStored) + math.MaxInt32 + 1) % (math.MaxInt32 + 1)
	return seqOutOfOrder, dup, ahead > 1 && ahead < 1<<30
}

// record notes a stored batch and wakes gap waiters.
func (p *seqProducer) record(epoch int16, first, last int32, base uint64, maxTs int64) {
	if epoch != p.epoch {
		p.epoch, p.n = epoch, 0
	}
	if p.n == retainedBatches {
		copy(p.batches[:], p.batches[1:])
		p.n--
	}
	p.batches[p.n] = batchMeta{first: first, last: last, base: base, maxTs: maxTs}
	p.n++
	p.wake()
}

// wake releases every goroutine waiting for this producer's state to move.
func (p *seqProducer) wake() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// waitChange returns a channel closed at the next state change. Under mu.
func (p *seqProducer) waitChange() <-chan struct{} {
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.changed
}

// partition returns the state of one partition, creating it empty.
func (id *Idempotence) partition(k seqPartKey) *seqPartition {
	id.mu.RLock()
	sp := id.parts[k]
	id.mu.RUnlock()
	if sp != nil {
		return sp
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.parts == nil {
		id.parts = make(map[seqPartKey]*seqPartition)
	}
	sp = id.parts[k]
	if sp == nil {
		sp = &seqPartition{producers: make(map[int64]*seqProducer)}
		id.parts[k] = sp
	}
	return sp
}

// producer returns pid's state on the partition, rebuilding the partition
// from the store's tail first if this is its first idempotent batch since
// the gateway started.
func (id *Idempotence) producer(c *Call, k seqPartKey, pid int64) (*seqProducer, error) {
	sp := id.partition(k)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := id.load(c, k, sp); err != nil {
		return nil, err
	}
	p := sp.producers[pid]
	now := time.Now()
	if p == nil {
		if len(sp.producers) >= maxProducersPerPartition {
			sp.evict(now)
		}
		p = &seqProducer{epoch: -1}
		sp.producers[pid] = p
	}
	p.lastUse.Store(now.UnixNano())
	return p, nil
}

// load rebuilds the partition's producer state from the store's tail the
// first time it is needed. Under sp.mu.
func (id *Idempotence) load(c *Call, k seqPartKey, sp *seqPartition) error {
	if sp.loaded {
		return nil
	}
	loaded := make(map[int64]*seqProducer)
	if err := id.rebuild(c, k, -1, loaded); err != nil {
		return err
	}
	for pid, p := range loaded {
		if sp.producers[pid] == nil {
			sp.producers[pid] = p
		}
	}
	sp.loaded = true
	return nil
}

// evict forgets expired producers, or the least recently used one when
// none has expired. Under sp.mu. A goroutine still holding an evicted
// entry finishes with it; the next batch of that producer starts afresh
// (as after Kafka's producer expiry).
func (sp *seqPartition) evict(now time.Time) {
	cut := now.Add(-producerExpiry).UnixNano()
	var oldest int64
	var oldestUse int64 = math.MaxInt64
	for pid, p := range sp.producers {
		u := p.lastUse.Load()
		if u < cut {
			delete(sp.producers, pid)
			continue
		}
		if u < oldestUse {
			oldest, oldestUse = pid, u
		}
	}
	if len(sp.producers) >= maxProducersPerPartition {
		delete(sp.producers, oldest)
	}
}

// rebuild reads the partition's tail (the last rebuildMessages messages,
// fewer when they hold more than rebuildBytes) and puts into out the state
// of every producer whose batches it finds, or only of pid when pid >= 0.
// A stored batch is a run of gateway-derived ids from a record marked
// first, with one producer and epoch and consecutive sequences and offsets.
func (id *Idempotence) rebuild(c *Call, k seqPartKey, pid int64, out map[int64]*seqProducer) error {
	id.Rebuilds.Add(1)
	g := c.G
	st, err := g.Store.Partition(c.Ctx, g.Cfg.Stream, k.topic, k.partition)
	if err != nil || st.Next <= st.Earliest {
		return err
	}
	window := min(st.Next-st.Earliest, rebuildMessages)
	for {
		rs := runScanner{only: pid, out: out, next: st.Next - window}
		from := rs.next
		complete := true
		for from < st.Next {
			err := g.Store.Poll(c.Ctx, g.Cfg.Stream, k.topic, k.partition, from, rebuildBytes-rs.bytes, rs.batch)
			if err != nil {
				return err
			}
			if rs.err != nil {
				return rs.err
			}
			if rs.next == from || rs.bytes >= rebuildBytes {
				complete = rs.next >= st.Next
				break
			}
			from = rs.next
		}
		if complete || window <= 64 {
			rs.close()
			return nil
		}
		// The window held too many bytes to reach the end: a smaller one.
		clear(out)
		window /= 8
	}
}

// runScanner follows stored messages, in offset order, collecting batches.
type runScanner struct {
	only  int64 // -1: every producer
	out   map[int64]*seqProducer
	next  uint64 // offset after the last message seen
	bytes int
	err   error

	open             bool
	ps               bridge.ProducerSeq
	first, last      int32
	base, lastOffset uint64
	maxOrigin        uint64 // µs, the run's largest origin timestamp
}

// batch is the Store.Poll callback.
func (rs *runScanner) batch(b []byte) bool {
	rs.bytes += len(b)
	v, err := bridge.ParseIggyBatch(b)
	if err != nil {
		rs.err = err
		return false
	}
	it := bridge.NewIggyMessageIter(v)
	for it.Next() {
		m := it.Message()
		if m.Offset < rs.next {
			continue // already seen (a batch that starts before from)
		}
		rs.message(m)
		rs.next = m.Offset + 1
	}
	if err := it.Err(); err != nil {
		rs.err = err
		return false
	}
	return true
}

func (rs *runScanner) message(m *bridge.IggyMessage) {
	if mps, _, coord, ok := bridge.ParseMarker(m); ok {
		rs.close()
		rs.marker(mps, coord)
		return
	}
	ps, ok := bridge.ParseMessageID(&m.ID)
	switch {
	case !ok:
		rs.close()
	case ps.First:
		rs.close()
		rs.open, rs.ps = true, ps
		rs.first, rs.last, rs.base, rs.lastOffset = ps.Sequence, ps.Sequence, m.Offset, m.Offset
		rs.maxOrigin = m.OriginTimestamp
	case rs.open && ps.ProducerID == rs.ps.ProducerID && ps.Epoch == rs.ps.Epoch &&
		ps.Sequence == nextSeq(rs.last) && m.Offset == rs.lastOffset+1:
		rs.last, rs.lastOffset = ps.Sequence, m.Offset
		rs.maxOrigin = max(rs.maxOrigin, m.OriginTimestamp)
	default:
		// A run whose start we did not see, or a broken one: not a batch
		// we can vouch for.
		rs.open = false
	}
}

// marker records a transaction marker of the tail as writing it did
// (txnEnv.WriteMarker): the producer's epoch there moves up to the
// marker's (a batch of an older epoch is refused), and the marker's
// coordinator epoch is the one DescribeProducers shows and a
// WriteTxnMarkers of an older coordinator is fenced against, after a
// restart as before it.
func (rs *runScanner) marker(ps bridge.ProducerSeq, coordEpoch int32) {
	pid := ps.ProducerID
	if rs.only >= 0 && pid != rs.only {
		return
	}
	p := rs.producer(pid)
	if ps.Epoch > p.epoch {
		p.epoch, p.n = ps.Epoch, 0
	}
	p.marked, p.markEpoch = true, coordEpoch
}

// producer is pid's entry of the scan, made (no epoch yet) when missing.
func (rs *runScanner) producer(pid int64) *seqProducer {
	p := rs.out[pid]
	if p == nil {
		p = &seqProducer{epoch: -1}
		rs.out[pid] = p
	}
	return p
}

// close ends the current run and records it as a batch.
func (rs *runScanner) close() {
	if !rs.open {
		return
	}
	rs.open = false
	pid := rs.ps.ProducerID
	if rs.only >= 0 && pid != rs.only {
		return
	}
	p := rs.producer(pid)
	if rs.ps.Epoch < p.epoch {
		return
	}
	// The max timestamp as the stored origins give it: exact for a
	// LogAppendTime batch (every origin is the append time); a batch
	// with no timestamps (origin 0) reads as none.
	maxTs := int64(-1)
	if rs.maxOrigin > 0 {
		maxTs = int64(rs.maxOrigin / 1000)
	}
	p.record(rs.ps.Epoch, rs.first, rs.last, rs.base, maxTs)
}

// produceIdempotent stores an encoded idempotent batch under the producer
// state rules: a duplicate of a retained batch gets its original base
// offset and max timestamp without a second write, a stale epoch
// INVALID_PRODUCER_EPOCH, a gap (after waiting up to seqGapWait for a
// predecessor in flight) OUT_OF_ORDER_SEQUENCE_NUMBER. It returns where
// the batch went, a Kafka error code, or a store error.
func (c *Call) produceIdempotent(tx txnWrite, ti *bridge.TopicInfo, partition int32, rb *codec.RecordBatch, batch []byte, prep bridge.Prepared) (written, int16, error) {
	g := c.G
	k := seqPartKey{topic: ti.Name, id: ti.ID, partition: partition}
	pid, epoch, first := rb.ProducerID, rb.ProducerEpoch, rb.BaseSequence
	last := lastSeqOf(first, rb.NumRecords)
	p, err := g.Idem.producer(c, k, pid)
	if err != nil {
		return written{}, 0, err
	}
	txnal := rb.IsTransactional() && g.Txn != nil
	var markers uint64
	if txnal {
		// The coordinator's check runs outside p.mu (EndTxn holds the
		// transaction's lock while it takes p.mu to write a marker);
		// the marker count taken before it tells whether a marker came
		// in between.
		markers = p.markers.Load()
		if code := g.Txn.CheckWrite(c.Ctx, tx.id, pid, epoch, txn.Partition{Topic: ti.Name, Partition: partition}, tx.implicit); code != 0 {
			if g.Log != nil {
				// Rare (a client's error, or a transaction ended
				// meanwhile): worth a line at debug level.
				g.Log.Debug("transactional batch refused by its transaction's check", "transactional_id", tx.id,
					"topic", ti.Name, "partition", partition, "producer_id", pid, "epoch", epoch, "code", code)
			}
			return written{}, code, nil
		}
		if g.afterTxnCheck != nil {
			g.afterTxnCheck()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if txnal && p.markers.Load() != markers {
		if g.Log != nil {
			g.Log.Debug("transactional batch refused: a marker came between its check and its write", "transactional_id", tx.id,
				"topic", ti.Name, "partition", partition, "producer_id", pid, "epoch", epoch)
		}
		return written{}, kerr.InvalidTxnState.Code, nil
	}
	if p.dirty {
		fresh := make(map[int64]*seqProducer, 1)
		if err := g.Idem.rebuild(c, k, pid, fresh); err != nil {
			return written{}, 0, err
		}
		p.epoch, p.n = -1, 0
		if f := fresh[pid]; f != nil {
			p.epoch, p.n, p.batches = f.epoch, f.n, f.batches
		}
		p.dirty = false
	}
	v, dup, wait := p.check(epoch, first, last)
	if wait {
		v, dup = p.waitForGap(c.Ctx, epoch, first, last, v, dup)
	}
	if v != seqAppend && g.Log != nil {
		// Rare (a retry or a client error): worth a line at debug level.
		g.Log.Debug("idempotent batch not stored", "verdict", v.String(), "topic", ti.Name,
			"partition", partition, "producer_id", pid, "epoch", epoch, "first_seq", first,
			"last_seq", last, "stored_epoch", p.epoch, "original_offset", dup.base)
	}
	switch v {
	case seqDuplicate:
		return written{base: dup.base, dup: true, dupMaxTs: dup.maxTs}, 0, nil
	case seqStaleEpoch:
		return written{}, kerr.InvalidProducerEpoch.Code, nil
	case seqOutOfOrder:
		return written{}, kerr.OutOfOrderSequenceNumber.Code, nil
	}
	// Recorded once written: the producer's next batch, which may be
	// staged behind this one's fsync (finishWrites), follows it. A sync
	// that then fails fails the store, and a restart rebuilds the state
	// from what is on disk.
	var txnDone func(base uint64, ok bool)
	if rb.IsTransactional() && g.Txn != nil {
		// The first batch of a transaction here: readers must not answer
		// a last stable offset past it before its offset is known.
		txnDone = g.Txn.Index.BeginFirst(txn.Partition{Topic: ti.Name, Partition: partition}, pid)
	}
	base, durable, err := c.appendLed(ti.Name, partition, batch, prep, rb.NumRecords)
	if txnDone != nil {
		txnDone(base, err == nil)
	}
	if err != nil {
		p.dirty = true
		p.wake()
		return written{}, 0, err
	}
	p.record(epoch, first, last, base, rb.MaxTimestamp)
	p.appendedMs = time.Now().UnixMilli()
	return written{base: base, durable: durable}, 0, nil
}

// waitForGap waits, with p.mu released, until the state moves, then checks
// again, for at most seqGapWait. An unknown producer that is still unknown
// at the end is accepted, as Kafka accepts it. Under p.mu.
func (p *seqProducer) waitForGap(ctx context.Context, epoch int16, first, last int32, v seqVerdict, dup batchMeta) (seqVerdict, batchMeta) {
	deadline := time.Now().Add(seqGapWait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return v, dup
		}
		ch := p.waitChange()
		p.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		p.mu.Lock()
		if ctx.Err() != nil {
			return v, dup
		}
		var wait bool
		if v, dup, wait = p.check(epoch, first, last); !wait {
			return v, dup
		}
	}
}

// bumpEpoch answers a KIP-360 InitProducerId (v3+) that names its current
// producer id and epoch: the same id with the next epoch, a fresh id when
// the epoch is exhausted, or fenced=true when this gateway already handed
// that id a later epoch (the caller is a stale instance of the producer).
// A retry of the last bump (its answer was lost) gets the same answer, as
// Kafka's coordinator keeps the previous epoch for.
func (id *Idempotence) bumpEpoch(pid int64, epoch int16) (newEpoch int16, fresh, fenced bool) {
	id.epochMu.Lock()
	defer id.epochMu.Unlock()
	if b, ok := id.epochs[pid]; ok {
		switch epoch {
		case b.prev:
			return b.cur, false, false
		case b.cur:
		default:
			return 0, false, true
		}
	}
	if epoch >= math.MaxInt16-1 {
		delete(id.epochs, pid)
		return 0, true, false
	}
	if id.epochs == nil || len(id.epochs) >= 1<<16 {
		id.epochs = make(map[int64]epochBump) // bounded: forgetting only loses fencing
	}
	id.epochs[pid] = epochBump{prev: epoch, cur: epoch + 1}
	return epoch + 1, false, false
}

// epochBump is the last bump of one producer id.
type epochBump struct{ prev, cur int16 }

// Forget drops the producer state of every partition drop reports true
// for (cluster mode: partitions led elsewhere now). If one comes back its
// state is rebuilt from the store, as after a restart, so what the other
// leader stored meanwhile is seen. The writes of a moved partition ended
// before this runs (cluster.Node's write gate). Any goroutine.
func (id *Idempotence) Forget(drop func(topic string, partition int32) bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	for k := range id.parts {
		if drop(k.topic, k.partition) {
			delete(id.parts, k)
		}
	}
}
