package txn

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// Env is what the coordinator needs from the gateway around it. Any
// goroutine; every call is bounded by its context.
type Env interface {
	// NewProducerID hands out a producer id no one else holds; ok false
	// while none can be (the answer is then COORDINATOR_LOAD_IN_PROGRESS).
	NewProducerID() (int64, bool)
	// HighWatermark is p's next offset; the error is an unknown topic or
	// partition, or the store's.
	HighWatermark(ctx context.Context, p Partition) (uint64, error)
	// WriteMarker appends a commit or abort marker of pid at epoch,
	// written by the coordinator of epoch coordEpoch, to p and returns its
	// offset, once durable. A partition that saw a marker of pid from a
	// later coordinator epoch refuses it (kerr.TransactionCoordinatorFenced).
	WriteMarker(ctx context.Context, p Partition, pid int64, epoch int16, coordEpoch int32, commit bool) (uint64, error)
	// FindMarker looks for a marker of pid at epoch or a later one on p at
	// offset from or later (a restart finishing a transaction whose
	// markers were partly written; a later epoch is a bump that ended
	// it), and says whether it commits.
	FindMarker(ctx context.Context, p Partition, from uint64, pid int64, epoch int16) (at uint64, commit, found bool, err error)
	// CommitOffsets applies a committed transaction's offsets to group.
	CommitOffsets(ctx context.Context, group string, offs []Offset) error
	// LogStart is p's first stored offset; ErrPartitionGone when p no
	// longer exists.
	LogStart(ctx context.Context, p Partition) (uint64, error)
}

// Options configure a Coordinator.
type Options struct {
	Store bridge.TxnStateStore
	Env   Env
	// MaxTimeout caps transaction.timeout.ms (Kafka's
	// transaction.max.timeout.ms); a larger one is INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// MaxIDs bounds how many transactional ids are kept; a new one past it
	// is refused with COORDINATOR_LOAD_IN_PROGRESS until idle ones
	// expire (IDExpiry).
	MaxIDs int
	// IDExpiry forgets an id idle that long in a complete state (Kafka's
	// transactional.id.expiration.ms, 7 days).
	IDExpiry time.Duration
	Log      *slog.Logger
	// Placement is cluster mode (cluster.go): nil for one gateway. Store
	// must then be a bridge.TxnStateGetter too.
	Placement Placement
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// ErrPartitionGone is what Env.WriteMarker answers for a partition that no
// longer exists (its topic was deleted): there is nothing left to mark,
// and the transaction ends without it.
var ErrPartitionGone = errors.New("txn: the partition no longer exists")

// MaxIDLen bounds a transactional id.
const MaxIDLen = 1024

// Coordinator is the transaction coordinator: each transactional id's
// producer id, epoch, state and partitions, kept in the store, and the
// partitions' view of them (Index). Any goroutine.
type Coordinator struct {
	o     Options
	Index Index

	// epoch is the coordinator epoch (Kafka's coordinatorEpoch): one
	// more than the last start's, stored by Load before anything is
	// served, written into every marker.
	epoch atomic.Int32
	// adoptDue: a membership change may have handed ids here that Adopt
	// has not loaded yet (cluster mode).
	adoptDue atomic.Bool
	// adopted is one more than the view epoch the last successful Adopt
	// ran under; 0 before any (cluster mode).
	adopted atomic.Int64
	// adoptKick wakes runAdopt (cluster mode).
	adoptKick chan struct{}

	mu  sync.Mutex
	ids map[string]*txnEntry
}

// New makes a coordinator; Load must run before it serves.
func New(o Options) *Coordinator {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MaxIDs <= 0 {
		o.MaxIDs = 100000
	}
	if o.IDExpiry <= 0 {
		o.IDExpiry = 7 * 24 * time.Hour
	}
	return &Coordinator{o: o, ids: map[string]*txnEntry{}, adoptKick: make(chan struct{}, 1)}
}

func (co *Coordinator) nowMs() int64 { return co.o.Now().UnixMilli() }

// Epoch is the coordinator epoch of this start (set by Load). Any
// goroutine.
func (co *Coordinator) Epoch() int32 {
	if co.clustered() {
		return co.o.Placement.Epoch()
	}
	return co.epoch.Load()
}

// Load reads the stored state, then finishes what a crash interrupted:
// a transaction past PrepareCommit or PrepareAbort gets its markers
// (where they are not written yet) and completes; an Ongoing one holds
// its partitions' last stable offsets from where it was added until it
// ends or times out.
func (co *Coordinator) Load(ctx context.Context) error {
	entries := map[string]*txnEntry{}
	offsets := map[string]map[string][]Offset{}
	type ab struct {
		p Partition
		a Aborted
	}
	var aborted []ab
	bad := 0
	lastEpoch, hadEpoch := int32(0), false
	err := co.o.Store.TxnStates(ctx, func(key string, v []byte) {
		switch {
		case key == keyEpoch:
			if len(v) != 4 {
				bad++
				return
			}
			lastEpoch, hadEpoch = int32(binary.BigEndian.Uint32(v)), true
		case len(key) > len(keyTxn) && key[:len(keyTxn)] == keyTxn:
			id := key[len(keyTxn):]
			e, err := decodeEntry(id, v)
			if err != nil {
				bad++
				return
			}
			entries[id] = e
		case len(key) > len(keyOffsets) && key[:len(keyOffsets)] == keyOffsets:
			offs, err := decodeOffsets(v)
			if err != nil {
				bad++
				return
			}
			offsets[key[len(keyOffsets):]] = offs
		case len(key) > len(keyAborted) && key[:len(keyAborted)] == keyAborted:
			p, a, err := parseAborted(key, v)
			if err != nil {
				bad++
				return
			}
			aborted = append(aborted, ab{p, a})
		case strings.HasPrefix(key, bridge.ShareStateKeyPrefix), strings.HasPrefix(key, bridge.StreamsStateKeyPrefix):
			// The share-group coordinator's state (package share), the
			// streams groups' (package group).
		default:
			bad++
		}
	})
	if err != nil {
		return fmt.Errorf("txn: loading the transaction state: %w", err)
	}
	if bad > 0 {
		co.o.Log.Warn("txn: skipped unreadable transaction state records", "count", bad)
	}
	if co.clustered() {
		// The ids are loaded by the gateway that coordinates them, the
		// partitions' transactions by their leaders, when they are
		// handed them (Adopt); the epoch is the view's.
		co.adoptDue.Store(true)
		return nil
	}
	// A new start is a new coordinator epoch, as a Kafka coordinator's is
	// its state partition's leader epoch, which a restart moves on. It is
	// stored before any marker of this start is written with it.
	epoch := int32(0)
	if hadEpoch && lastEpoch < math.MaxInt32 {
		epoch = lastEpoch + 1
	}
	if err := co.o.Store.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: keyEpoch, Value: binary.BigEndian.AppendUint32(nil, uint32(epoch))}}); err != nil {
		return fmt.Errorf("txn: storing the coordinator epoch: %w", err)
	}
	co.epoch.Store(epoch)
	for _, x := range aborted {
		co.Index.AddAborted(x.p, x.a)
	}
	co.mu.Lock()
	for id, e := range entries {
		if offs := offsets[id]; offs != nil {
			e.offsets = offs
		}
		co.ids[id] = e
	}
	co.mu.Unlock()
	for _, e := range entries {
		switch e.state {
		case Ongoing, PrepareCommit, PrepareAbort:
			for p, bound := range e.parts {
				co.Index.Open(p, e.pid, bound)
			}
		}
	}
	for _, e := range entries {
		if e.state != PrepareCommit && e.state != PrepareAbort {
			continue
		}
		co.o.Log.Info("txn: finishing a transaction the last run left prepared", "transactional_id", e.id,
			"state", e.state.String(), "partitions", len(e.parts))
		e.mu.Lock()
		err := co.complete(ctx, e, e.state == PrepareCommit, true)
		e.mu.Unlock()
		if err != nil {
			return fmt.Errorf("txn: finishing transaction %q: %w", e.id, err)
		}
	}
	return nil
}

// entry returns id's entry, locked, or nil when there is none (create
// false). With create, a missing id gets a fresh Empty entry, unless MaxIDs
// are kept (full). The caller unlocks.
func (co *Coordinator) entry(id string, create bool) (e *txnEntry, full bool) {
	for {
		co.mu.Lock()
		e = co.ids[id]
		if e == nil {
			if !create {
				co.mu.Unlock()
				return nil, false
			}
			if len(co.ids) >= co.o.MaxIDs {
				co.mu.Unlock()
				return nil, true
			}
			e = &txnEntry{id: id, pid: -1, epoch: -1, lastPid: -1, lastEpoch: -1, state: Empty, startMs: -1,
				parts: map[Partition]uint64{}, groups: map[string]struct{}{}, offsets: map[string][]Offset{}}
			co.ids[id] = e
		}
		co.mu.Unlock()
		e.mu.Lock()
		if !e.gone {
			return e, false
		}
		e.mu.Unlock()
	}
}

// save stores e (and its pending offsets when offs), durably.
func (co *Coordinator) save(ctx context.Context, e *txnEntry, offs bool) error {
	return co.o.Store.PutTxnStates(ctx, stateEntries(e, offs))
}

// saveComplete stores e's complete state (and drops its offsets when
// offs) without waiting for it to be durable. A crash that loses it leaves
// the prepared state, durable before any marker was written, and the next
// start (Load) or the client's retried EndTxn finishes the transaction
// again: markers already written are found, not written twice, and the
// offsets are committed again as they were. The next durable write, the
// next transaction's first partition at the latest, makes it durable. On
// the embedded store that is a synced write fewer per transaction; Kafka
// too answers EndTxn once the prepared state is in its log and writes the
// complete state after.
func (co *Coordinator) saveComplete(ctx context.Context, e *txnEntry, offs bool) error {
	return co.o.Store.PutTxnStatesLazy(ctx, stateEntries(e, offs))
}

// stateEntries is e's state (and its pending offsets when offs) as store
// entries.
func stateEntries(e *txnEntry, offs bool) []bridge.TxnStateEntry {
	ents := []bridge.TxnStateEntry{{Key: keyTxn + e.id, Value: e.encode()}}
	if offs {
		var v []byte
		if len(e.offsets) > 0 {
			v = encodeOffsets(e.offsets)
		}
		ents = append(ents, bridge.TxnStateEntry{Key: keyOffsets + e.id, Value: v})
	}
	return ents
}

// errCode is the Kafka code for a failed store call.
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && (ke == kerr.NotCoordinator || ke == kerr.CoordinatorLoadInProgress) {
		return ke.Code // cluster mode: the id moved away meanwhile
	}
	return kerr.CoordinatorNotAvailable.Code
}

// InitResult is InitProducerId's answer.
type InitResult struct {
	Code       int16
	ProducerID int64
	Epoch      int16
}

// InitProducerID answers InitProducerId for transactional id id: a
// fresh producer id at epoch 0 for a new id, else the id's producer id at
// the next epoch, after aborting a transaction the previous instance left
// open (it is fenced: its epoch is now old). With reqPid >= 0 (KIP-360)
// the caller proves it is the current instance, or the one just before a
// bump it retries.
func (co *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, reqPid int64, reqEpoch int16, version int16) InitResult {
	fail := func(code int16) InitResult { return InitResult{Code: code, ProducerID: -1, Epoch: -1} }
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > co.o.MaxTimeout {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	if code := co.loadID(ctx, id); code != 0 {
		return fail(code)
	}
	e, full := co.entry(id, true)
	if full {
		return fail(kerr.CoordinatorLoadInProgress.Code)
	}
	defer e.mu.Unlock()
	if reqPid >= 0 && e.pid >= 0 {
		switch {
		case reqPid == e.lastPid && reqEpoch == e.lastEpoch && e.state != Ongoing:
			// A retry of the bump that made the current epoch.
			return InitResult{ProducerID: e.pid, Epoch: e.epoch}
		case reqPid != e.pid || reqEpoch != e.epoch:
			if version >= 4 {
				return fail(kerr.ProducerFenced.Code)
			}
			return fail(kerr.InvalidProducerEpoch.Code)
		}
	}
	if e.state == Ongoing {
		// The previous instance's transaction: fence it by the bump, and
		// abort it under the new epoch.
		if code := co.bump(e); code != 0 {
			return fail(code)
		}
		if err := co.finish(ctx, e, false); err != nil {
			return fail(errCode(err))
		}
	}
	if e.pid < 0 {
		pid, ok := co.o.Env.NewProducerID()
		if !ok {
			return fail(kerr.CoordinatorLoadInProgress.Code)
		}
		e.pid, e.epoch = pid, 0
	} else if code := co.bump(e); code != 0 {
		return fail(code)
	}
	e.timeoutMs = timeoutMs
	e.state, e.startMs, e.updateMs = Empty, -1, co.nowMs()
	clear(e.parts)
	clear(e.groups)
	if err := co.save(ctx, e, len(e.offsets) > 0); err != nil {
		return fail(errCode(err))
	}
	clear(e.offsets)
	return InitResult{ProducerID: e.pid, Epoch: e.epoch}
}

// bump moves e to its next epoch, or to a fresh producer id at epoch 0
// when the epoch is spent, keeping the previous pair.
func (co *Coordinator) bump(e *txnEntry) int16 {
	e.lastPid, e.lastEpoch = e.pid, e.epoch
	if e.epoch >= math.MaxInt16-1 {
		pid, ok := co.o.Env.NewProducerID()
		if !ok {
			return kerr.CoordinatorLoadInProgress.Code
		}
		e.pid, e.epoch = pid, 0
		return 0
	}
	e.epoch++
	return 0
}

// check is the producer check every step after InitProducerId makes:
// the id is known, pid is its producer and epoch its current epoch.
// fencedOld: the version predates PRODUCER_FENCED, answer
// INVALID_PRODUCER_EPOCH instead.
func check(e *txnEntry, pid int64, epoch int16, fencedOld bool) int16 {
	switch {
	case e == nil:
		return kerr.InvalidProducerIDMapping.Code
	case e.pid != pid:
		return kerr.InvalidProducerIDMapping.Code
	case epoch < e.epoch:
		if fencedOld {
			return kerr.InvalidProducerEpoch.Code
		}
		return kerr.ProducerFenced.Code
	case epoch > e.epoch:
		return kerr.InvalidProducerEpoch.Code
	}
	return 0
}

// AddPartitions answers AddPartitionsToTxn for one transaction: codes is
// called with each partition's code. Partitions already in the
// transaction cost nothing; new ones are added with their high watermark
// and the state stored before the answer. verifyOnly (v4+, from brokers)
// only says whether each partition is in the ongoing transaction.
func (co *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []Partition, verifyOnly, fencedOld bool) (int16, map[Partition]int16) {
	if code := co.loadID(ctx, id); code != 0 {
		return code, nil
	}
	e, _ := co.entry(id, false)
	if e == nil {
		return kerr.InvalidProducerIDMapping.Code, nil
	}
	defer e.mu.Unlock()
	if code := check(e, pid, epoch, fencedOld); code != 0 {
		return code, nil
	}
	out := make(map[Partition]int16, len(parts))
	if verifyOnly {
		for _, p := range parts {
			if _, ok := e.parts[p]; !ok || e.state != Ongoing {
				out[p] = kerr.InvalidTxnState.Code
			} else {
				out[p] = 0
			}
		}
		return 0, out
	}
	if e.state == PrepareCommit || e.state == PrepareAbort {
		return kerr.ConcurrentTransactions.Code, nil
	}
	code := co.addLocked(ctx, e, parts, out)
	return code, out
}

// addLocked adds parts to e's transaction, making it Ongoing, and stores
// it. A partition whose high watermark cannot be read fails the request:
// its code is set, the others are OPERATION_NOT_ATTEMPTED. Under e.mu.
func (co *Coordinator) addLocked(ctx context.Context, e *txnEntry, parts []Partition, out map[Partition]int16) int16 {
	var fresh []Partition
	bounds := make([]uint64, 0, len(parts))
	failed := false
	for _, p := range parts {
		if _, ok := e.parts[p]; ok && e.state == Ongoing {
			out[p] = 0
			continue
		}
		hwm, err := co.o.Env.HighWatermark(ctx, p)
		if err != nil {
			out[p] = partitionCode(err)
			failed = true
			continue
		}
		out[p] = 0
		fresh = append(fresh, p)
		bounds = append(bounds, hwm)
	}
	if failed {
		for p, c := range out {
			if c == 0 {
				out[p] = kerr.OperationNotAttempted.Code
			}
		}
		return 0
	}
	if len(fresh) == 0 && e.state == Ongoing {
		return 0
	}
	e.begin(co.nowMs())
	for i, p := range fresh {
		e.parts[p] = bounds[i]
	}
	if err := co.save(ctx, e, false); err != nil {
		for _, p := range fresh {
			delete(e.parts, p)
			out[p] = errCode(err)
		}
		return 0
	}
	return 0
}

// partitionCode is the code of a partition whose high watermark could not
// be read.
func partitionCode(err error) int16 {
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

// producerEntry is id's entry, locked, when pid at epoch is its producer
// and no end is being written (the checks AddOffsetsToTxn and
// TxnOffsetCommit make), else nil and the code to answer.
func (co *Coordinator) producerEntry(ctx context.Context, id string, pid int64, epoch int16, fencedOld bool) (*txnEntry, int16) {
	if code := co.loadID(ctx, id); code != 0 {
		return nil, code
	}
	e, _ := co.entry(id, false)
	if e == nil {
		return nil, kerr.InvalidProducerIDMapping.Code
	}
	code := check(e, pid, epoch, fencedOld)
	if code == 0 && (e.state == PrepareCommit || e.state == PrepareAbort) {
		code = kerr.ConcurrentTransactions.Code
	}
	if code != 0 {
		e.mu.Unlock()
		return nil, code
	}
	return e, 0
}

// begin makes e's transaction Ongoing from now, unless it is. Under e.mu.
func (e *txnEntry) begin(now int64) {
	if e.state != Ongoing {
		e.state, e.startMs = Ongoing, now
		clear(e.parts)
		clear(e.groups)
	}
	e.updateMs = now
}

// AddGroup answers AddOffsetsToTxn: the group joins the transaction.
func (co *Coordinator) AddGroup(ctx context.Context, id string, pid int64, epoch int16, group string, fencedOld bool) int16 {
	e, code := co.producerEntry(ctx, id, pid, epoch, fencedOld)
	if e == nil {
		return code
	}
	defer e.mu.Unlock()
	return co.addGroupLocked(ctx, e, group)
}

func (co *Coordinator) addGroupLocked(ctx context.Context, e *txnEntry, group string) int16 {
	if _, ok := e.groups[group]; ok && e.state == Ongoing {
		return 0
	}
	e.begin(co.nowMs())
	e.groups[group] = struct{}{}
	if err := co.save(ctx, e, false); err != nil {
		delete(e.groups, group)
		return errCode(err)
	}
	return 0
}

// CommitOffsets answers TxnOffsetCommit: the offsets are kept, durably,
// and applied to group only when the transaction commits. implicit (v5,
// transaction.version 2) adds the group to the transaction when it is not
// in it; otherwise a group not added is INVALID_TXN_STATE, as Kafka's
// verification answers.
func (co *Coordinator) CommitOffsets(ctx context.Context, id string, pid int64, epoch int16, group string, offs []Offset, implicit, fencedOld bool) int16 {
	e, code := co.producerEntry(ctx, id, pid, epoch, fencedOld)
	if e == nil {
		return code
	}
	defer e.mu.Unlock()
	if _, ok := e.groups[group]; !ok || e.state != Ongoing {
		if !implicit {
			return kerr.InvalidTxnState.Code
		}
		if code := co.addGroupLocked(ctx, e, group); code != 0 {
			return code
		}
	}
	prev := e.offsets[group]
	merged := mergeOffsets(prev, offs)
	e.offsets[group] = merged
	if err := co.save(ctx, e, true); err != nil {
		e.offsets[group] = prev
		return errCode(err)
	}
	return 0
}

// mergeOffsets is prev with offs laid over it (a later commit of a
// partition wins).
func mergeOffsets(prev, offs []Offset) []Offset {
	out := append([]Offset(nil), prev...)
	for _, o := range offs {
		replaced := false
		for i := range out {
			if out[i].Partition == o.Partition {
				out[i], replaced = o, true
				break
			}
		}
		if !replaced {
			out = append(out, o)
		}
	}
	return out
}

// HasPendingOffsets reports whether a transaction holds offsets of group
// on p not yet committed (OffsetFetch require_stable answers
// UNSTABLE_OFFSET_COMMIT then).
func (co *Coordinator) HasPendingOffsets(ctx context.Context, group string, p Partition) bool {
	return co.PendingOffsets(ctx, group)(p)
}

// PendingOffsets is HasPendingOffsets for one group, read once for all
// its partitions: in cluster mode from the state of every transaction in
// etcd (the group's coordinator is often not the transaction's), where a
// failed read makes every partition pending (not known to be stable).
func (co *Coordinator) PendingOffsets(ctx context.Context, group string) func(Partition) bool {
	pending := map[Partition]bool{}
	if co.clustered() {
		err := co.o.Store.TxnStates(ctx, func(key string, v []byte) {
			if !strings.HasPrefix(key, keyOffsets) {
				return
			}
			if m, err := decodeOffsets(v); err == nil {
				for _, o := range m[group] {
					pending[o.Partition] = true
				}
			}
		})
		if err != nil {
			return func(Partition) bool { return true }
		}
		return func(p Partition) bool { return pending[p] }
	}
	co.mu.Lock()
	es := make([]*txnEntry, 0, len(co.ids))
	for _, e := range co.ids {
		es = append(es, e)
	}
	co.mu.Unlock()
	for _, e := range es {
		e.mu.Lock()
		for _, o := range e.offsets[group] {
			pending[o.Partition] = true
		}
		e.mu.Unlock()
	}
	return func(p Partition) bool { return pending[p] }
}

// EndResult is EndTxn's answer; ProducerID and Epoch are set for v5
// (the bumped pair a transaction.version 2 producer goes on with).
type EndResult struct {
	Code       int16
	ProducerID int64
	Epoch      int16
}

// End answers EndTxn: markers to every partition, the offsets applied or
// dropped, then the complete state stored. v2 (EndTxn v5) bumps the
// epoch at the end and answers the new one; a retry of a v2 end is
// recognised by the previous epoch.
func (co *Coordinator) End(ctx context.Context, id string, pid int64, epoch int16, commit, v2, fencedOld bool) EndResult {
	fail := func(code int16) EndResult { return EndResult{Code: code, ProducerID: -1, Epoch: -1} }
	if code := co.loadID(ctx, id); code != 0 {
		return fail(code)
	}
	e, _ := co.entry(id, false)
	if e == nil {
		return fail(kerr.InvalidProducerIDMapping.Code)
	}
	defer e.mu.Unlock()
	if v2 && pid == e.lastPid && epoch == e.lastEpoch {
		// A retry of a v2 end, which bumped the epoch before writing.
		switch {
		case (commit && e.state == CompleteCommit) || (!commit && e.state == CompleteAbort):
			return EndResult{ProducerID: e.pid, Epoch: e.epoch}
		case (commit && e.state == PrepareCommit) || (!commit && e.state == PrepareAbort):
			// Its markers failed: finish it now.
			if err := co.complete(ctx, e, commit, true); err != nil {
				return fail(errCode(err))
			}
			return EndResult{ProducerID: e.pid, Epoch: e.epoch}
		}
	}
	if code := check(e, pid, epoch, fencedOld); code != 0 {
		return fail(code)
	}
	switch e.state {
	case Ongoing:
	case CompleteCommit, CompleteAbort:
		if !v2 && (e.state == CompleteCommit) == commit {
			return EndResult{ProducerID: e.pid, Epoch: e.epoch} // a retry
		}
		if v2 && !commit {
			break // v2 may abort an empty transaction
		}
		return fail(kerr.InvalidTxnState.Code)
	case Empty:
		if v2 && !commit {
			break
		}
		return fail(kerr.InvalidTxnState.Code)
	case PrepareCommit, PrepareAbort:
		if (e.state == PrepareCommit) != commit {
			return fail(kerr.ConcurrentTransactions.Code)
		}
		// A retry of an end whose markers failed: finish it now.
		if err := co.complete(ctx, e, commit, true); err != nil {
			return fail(errCode(err))
		}
		return EndResult{ProducerID: e.pid, Epoch: e.epoch}
	default:
		return fail(kerr.InvalidTxnState.Code)
	}
	e.v2 = v2
	// v2 (KIP-890) bumps the epoch first and writes the markers with the
	// bumped one, as Kafka does: a batch of the old epoch still in flight
	// is then refused on every partition (INVALID_PRODUCER_EPOCH), and the
	// bump is stored in the same write as the Prepare state. A spent
	// epoch (the bump is a new producer id, the markers must name the old
	// one) is bumped after the end instead.
	bumped := false
	if e.state == Ongoing {
		if v2 && e.epoch < math.MaxInt16-1 {
			co.bump(e) // the epoch is not spent: no new producer id, no failure
			bumped = true
		}
		if err := co.finish(ctx, e, commit); err != nil {
			return fail(errCode(err))
		}
	}
	if v2 && !bumped {
		if code := co.bump(e); code != 0 {
			return fail(code)
		}
		if err := co.save(ctx, e, false); err != nil {
			return fail(errCode(err))
		}
	}
	return EndResult{ProducerID: e.pid, Epoch: e.epoch}
}

// finish ends e's ongoing transaction: Prepare state stored, then
// complete. Under e.mu.
func (co *Coordinator) finish(ctx context.Context, e *txnEntry, commit bool) error {
	e.state = PrepareAbort
	if commit {
		e.state = PrepareCommit
	}
	e.updateMs = co.nowMs()
	if err := co.save(ctx, e, false); err != nil {
		e.state = Ongoing
		return err
	}
	return co.complete(ctx, e, commit, false)
}

// complete writes e's markers (after a restart, only where they are not
// there yet), applies or drops its offsets, and stores the complete
// state. An error leaves e in its Prepare state: a later End retried by
// the client, or the next start, finishes it. Under e.mu.
func (co *Coordinator) complete(ctx context.Context, e *txnEntry, commit, recovering bool) error {
	parts := e.sortedParts()
	if recovering {
		left := parts[:0]
		for _, p := range parts {
			if at, _, found, err := co.o.Env.FindMarker(ctx, p, e.parts[p], e.pid, e.epoch); err != nil {
				return err
			} else if found {
				// Written before the crash; what followed it may not be
				// (an abort's entry in the aborted list).
				if err := co.marked(ctx, p, e.pid, at, commit); err != nil {
					return err
				}
				continue
			}
			left = append(left, p)
		}
		parts = left
	}
	parts, err := co.markElsewhere(ctx, e, parts, commit)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := co.WriteMarker(ctx, p, e.pid, e.epoch, co.Epoch(), commit); err != nil {
			return fmt.Errorf("marker on %s/%d: %w", p.Topic, p.Partition, err)
		}
	}
	if commit {
		for _, g := range e.sortedGroups() {
			if offs := e.offsets[g]; len(offs) > 0 {
				if err := co.o.Env.CommitOffsets(ctx, g, offs); err != nil {
					return err
				}
			}
		}
	}
	hadOffsets := len(e.offsets) > 0
	e.state = CompleteAbort
	if commit {
		e.state = CompleteCommit
	}
	e.updateMs = co.nowMs()
	clear(e.offsets)
	if err := co.saveComplete(ctx, e, hadOffsets); err != nil {
		return err
	}
	clear(e.parts)
	clear(e.groups)
	e.startMs = -1
	return nil
}

// CheckWrite is the check a transactional Produce makes for each
// partition: the batch's producer and epoch are the transaction's, and the
// partition is in its ongoing transaction; with implicit (Produce v12+,
// transaction.version 2) a partition not in it yet is added.
func (co *Coordinator) CheckWrite(ctx context.Context, id string, pid int64, epoch int16, p Partition, implicit bool) int16 {
	if co.clustered() && co.o.Placement.Code(id) != 0 {
		return co.verifyElsewhere(ctx, id, pid, epoch, p)
	}
	if code := co.loadID(ctx, id); code != 0 {
		return code
	}
	e, _ := co.entry(id, false)
	if e == nil {
		return kerr.InvalidProducerIDMapping.Code
	}
	defer e.mu.Unlock()
	if code := check(e, pid, epoch, true); code != 0 {
		return code
	}
	if _, ok := e.parts[p]; ok && e.state == Ongoing {
		return 0
	}
	if !implicit || e.state == PrepareCommit || e.state == PrepareAbort {
		return kerr.InvalidTxnState.Code
	}
	out := map[Partition]int16{}
	co.addLocked(ctx, e, []Partition{p}, out)
	return out[p]
}

// WriteMarker answers one partition of a WriteTxnMarkers (an operator's
// `kafka-transactions abort` of a hanging transaction, or a broker): the
// marker is written and the partition's view of pid's transaction ends,
// whether or not this coordinator holds it.
func (co *Coordinator) WriteMarker(ctx context.Context, p Partition, pid int64, epoch int16, coordEpoch int32, commit bool) error {
	off, err := co.o.Env.WriteMarker(ctx, p, pid, epoch, coordEpoch, commit)
	if errors.Is(err, ErrPartitionGone) {
		co.Index.Close(p, pid, 0, false)
		return nil
	}
	if err != nil {
		return err
	}
	return co.marked(ctx, p, pid, off, commit)
}

// marked ends pid's transaction on p at its marker, at offset off: an
// aborted one is stored in the aborted list (unless it is there), then
// the partition's view of it is closed.
func (co *Coordinator) marked(ctx context.Context, p Partition, pid int64, off uint64, commit bool) error {
	abort := !commit && !co.Index.hasAborted(p, pid, off)
	if abort {
		if first, ok := co.Index.FirstOffset(p, pid); ok {
			a := Aborted{ProducerID: pid, First: first, Last: off}
			v := binary.BigEndian.AppendUint64(nil, off)
			if err := co.o.Store.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: abortedKey(p, a), Value: v}}); err != nil {
				return err
			}
		}
	}
	co.Index.Close(p, pid, off, abort)
	return nil
}
