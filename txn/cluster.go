package txn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// Cluster mode (docs/TRANSACTIONS.md, "Cluster mode"): each transactional
// id has one coordinating gateway, placed as groups are, and its state is
// in the cluster's etcd, so the gateway an id moves to reads it there.
// A coordinator keeps in memory only the ids it coordinates: it loads one
// when a request for it arrives (loadID) or, for ids no client asks about
// (a transaction to finish or to time out), when it scans the store after
// a membership change (Adopt); it drops the ids that moved away (Moved).

// Placement is the cluster, as the coordinator sees it. Any goroutine.
type Placement interface {
	// Code is 0 when this gateway coordinates id now, else the error a
	// request for id gets (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
	// while the previous coordinator may still write it,
	// COORDINATOR_NOT_AVAILABLE).
	Code(id string) int16
	// Epoch is the coordinator epoch of the markers written now. It grows
	// on every membership change, so a coordinator an id moved to writes
	// with a later epoch than the one it moved from.
	Epoch() int32
	// Leads is 1 when this gateway serves p now (it leads it and may
	// write it), 0 when another gateway leads it, -1 while it leads p in
	// a view not settled yet (the previous leader may still write it).
	Leads(p Partition) int
	// Settled reports whether every gateway applied the current view:
	// then none still writes the state of an id or a partition that
	// moved here.
	Settled() bool
}

// OwnerOf is the transactional id whose state key is key: "t/" and "o/"
// keys belong to their id's coordinator; ok is false for the others (the
// partitions' aborted lists, the epoch).
func OwnerOf(key string) (id string, ok bool) {
	switch {
	case strings.HasPrefix(key, keyTxn):
		return key[len(keyTxn):], true
	case strings.HasPrefix(key, keyOffsets):
		return key[len(keyOffsets):], true
	}
	return "", false
}

// clustered reports cluster mode.
func (co *Coordinator) clustered() bool { return co.o.Placement != nil }

// loadID makes sure id's stored state is in memory before a request uses
// it, in cluster mode (a no-op otherwise, where Load read everything): a
// request for an id this gateway does not coordinate is answered with the
// placement's code. Any goroutine.
func (co *Coordinator) loadID(ctx context.Context, id string) int16 {
	if !co.clustered() {
		return 0
	}
	if code := co.o.Placement.Code(id); code != 0 {
		return code
	}
	co.mu.Lock()
	_, ok := co.ids[id]
	co.mu.Unlock()
	if ok {
		return 0
	}
	e, err := co.readStored(ctx, id, true)
	if err != nil {
		co.o.Log.Warn("txn: reading a transactional id's state failed", "transactional_id", id, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	if e == nil {
		return 0 // a new id
	}
	co.install(e)
	return 0
}

// install adds a loaded entry unless one is there already (a request or
// Adopt loaded it meanwhile); it reports whether it did. The partitions'
// view of its transaction is their leaders' (Adopt), not the
// coordinator's.
func (co *Coordinator) install(e *txnEntry) bool {
	co.mu.Lock()
	if co.ids[e.id] != nil {
		co.mu.Unlock()
		return false
	}
	co.ids[e.id] = e
	co.mu.Unlock()
	co.o.Log.Debug("txn: loaded a transactional id handed here", "transactional_id", e.id,
		"state", e.state.String(), "producer_id", e.pid, "epoch", e.epoch, "partitions", len(e.parts))
	return true
}

// Moved drops the ids this gateway no longer coordinates (stay false) and
// what the index holds of the partitions it no longer leads (lost true),
// and has runAdopt load what it gained. An operation that holds a dropped
// entry fails at its next store write, which the store refuses for an id
// coordinated elsewhere. The cluster's watch goroutine.
func (co *Coordinator) Moved(stay func(id string) bool, lost func(Partition) bool) {
	co.Index.Forget(lost)
	co.mu.Lock()
	n := 0
	for id := range co.ids {
		if !stay(id) {
			delete(co.ids, id)
			n++
		}
	}
	co.mu.Unlock()
	co.adoptDue.Store(true)
	select {
	case co.adoptKick <- struct{}{}:
	default:
	}
	if n > 0 {
		co.o.Log.Info("cluster: transactional ids moved to other gateways", "ids", n)
	}
}

// errAdoptLater is an Adopt that met an id it is handed but may not serve
// yet (the view is not settled): the next tick tries again.
var errAdoptLater = errors.New("txn: ids handed here are not servable yet")

// Adopt loads every stored id this gateway coordinates and does not hold
// yet, then finishes the ones left prepared (their markers written where
// they are missing), as Load does after a restart. An Ongoing one stays
// open until its client ends it or it times out (AbortExpired). Cluster
// mode only; Run calls it after a membership change. Any goroutine.
func (co *Coordinator) Adopt(ctx context.Context) error {
	if !co.clustered() {
		return nil
	}
	// The read must come after the previous owners stopped writing what
	// moved here: the view settled first, and is still the same after.
	epoch := co.o.Placement.Epoch()
	if !co.o.Placement.Settled() {
		return errAdoptLater
	}
	var found []*txnEntry
	var aborted []partAborted
	var opens []ledTxn
	offsets := map[string][]byte{}
	later, bad := false, 0
	err := co.o.Store.TxnStates(ctx, func(key string, v []byte) {
		if strings.HasPrefix(key, keyAborted) {
			// A partition's aborted list, written by its leaders: a
			// partition led here now has the entries its previous
			// leader added.
			p, a, err := parseAborted(key, v)
			switch {
			case err != nil:
				bad++
			case co.o.Placement.Leads(p) > 0:
				aborted = append(aborted, partAborted{p, a})
			case co.o.Placement.Leads(p) < 0:
				later = true
			}
			return
		}
		id, ok := OwnerOf(key)
		if !ok {
			return
		}
		if strings.HasPrefix(key, keyOffsets) {
			if co.o.Placement.Code(id) == 0 && !co.holds(id) {
				offsets[id] = append([]byte(nil), v...)
			}
			return
		}
		e, err := decodeEntry(id, v)
		if err != nil {
			bad++
			return
		}
		// Whoever coordinates it: its open transaction holds the last
		// stable offset of the partitions led here.
		if e.state == Ongoing || e.state == PrepareCommit || e.state == PrepareAbort {
			for p, bound := range e.parts {
				switch co.o.Placement.Leads(p) {
				case 1:
					opens = append(opens, ledTxn{p: p, pid: e.pid, epoch: e.epoch, from: bound})
				case -1:
					later = true
				}
			}
		}
		switch co.o.Placement.Code(id) {
		case 0:
		case kerr.NotCoordinator.Code:
			return
		default:
			later = true
			return
		}
		if !co.holds(id) {
			found = append(found, e)
		}
	})
	if err != nil {
		return fmt.Errorf("txn: scanning the transaction state: %w", err)
	}
	if bad > 0 {
		co.o.Log.Warn("txn: skipped unreadable transaction state records", "count", bad)
	}
	if co.o.Placement.Epoch() != epoch {
		return errAdoptLater // the view changed meanwhile: read again
	}
	for _, x := range aborted {
		co.Index.AddAborted(x.p, x.a)
	}
	var failed error
	for _, o := range opens {
		if err := co.openLed(ctx, o); err != nil && failed == nil {
			failed = err
		}
	}
	for _, e := range found {
		if ov := offsets[e.id]; ov != nil {
			if offs, err := decodeOffsets(ov); err == nil {
				e.offsets = offs
			}
		}
		if !co.install(e) || e.state != PrepareCommit && e.state != PrepareAbort {
			continue
		}
		co.o.Log.Info("txn: finishing a transaction its last coordinator left prepared", "transactional_id", e.id,
			"state", e.state.String(), "partitions", len(e.parts))
		e.mu.Lock()
		if err := co.complete(ctx, e, e.state == PrepareCommit, true); err != nil && failed == nil {
			failed = fmt.Errorf("txn: finishing transaction %q: %w", e.id, err)
		}
		e.mu.Unlock()
	}
	if failed != nil {
		return failed
	}
	if later {
		return errAdoptLater
	}
	co.adopted.Store(int64(epoch) + 1)
	return nil
}

// ledTxn is a transaction a partition led here is part of, as its
// coordinator stored it.
type ledTxn struct {
	p     Partition
	pid   int64
	epoch int16
	from  uint64
}

// openLed holds o.p's last stable offset for o's transaction from where
// it was added, unless this leader knows the transaction there already
// (it saw its first batch), or a marker of it is in the log from there on
// (written by the partition's previous leader, or by this one since the
// scan read the transaction's state): then the marker is recorded as this
// leader would have (an abort in the aborted list). Opening first and
// looking after leaves no moment in which a marker could slip between
// the two.
func (co *Coordinator) openLed(ctx context.Context, o ledTxn) error {
	if _, open := co.Index.FirstOffset(o.p, o.pid); open {
		return nil
	}
	co.Index.Open(o.p, o.pid, o.from)
	at, commit, found, err := co.o.Env.FindMarker(ctx, o.p, o.from, o.pid, o.epoch)
	if err != nil || !found {
		return err
	}
	return co.marked(ctx, o.p, o.pid, at, commit)
}

// holds reports whether id's entry is in memory.
func (co *Coordinator) holds(id string) bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.ids[id] != nil
}

// Ready reports whether the transactions of the partitions this gateway
// leads are all known here: always outside cluster mode; in cluster mode
// once Adopt ran under the current view. Until then a read_committed
// read is refused (the previous leader's open transactions and aborted
// list are not loaded yet). Any goroutine.
func (co *Coordinator) Ready() bool {
	return !co.clustered() || co.adopted.Load() == int64(co.o.Placement.Epoch())+1
}

// runAdopt runs Adopt whenever Moved asked for it, again every 20 ms
// until it succeeds. Its own goroutine, until ctx ends (cluster mode).
func (co *Coordinator) runAdopt(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		if co.adoptDue.Swap(false) {
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := co.Adopt(actx)
			cancel()
			switch {
			case errors.Is(err, errAdoptLater):
				co.adoptDue.Store(true)
				retry.Reset(20 * time.Millisecond) // settling takes milliseconds
			case err != nil:
				// etcd unreachable, or a marker that cannot be read:
				// once a second, not to flood the log.
				co.adoptDue.Store(true)
				co.o.Log.Warn("txn: loading the transactions handed here failed; retried", "err", err)
				retry.Reset(time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-co.adoptKick:
		case <-retry.C:
		}
	}
}

// RemoteMarker is an Env that, in cluster mode, has the leaders of
// partitions other gateways lead write a transaction's markers there. Any
// goroutine.
type RemoteMarker interface {
	// MarkElsewhere has the leader of each mark's partition write it when
	// that is another gateway (handled[i] true), all at once, and returns
	// once they are written. handled[i] false: this gateway leads the
	// partition and writes the marker itself.
	MarkElsewhere(ctx context.Context, marks []RemoteMark) (handled []bool, err error)
}

// RemoteMark is one marker for a partition's leader to write.
type RemoteMark struct {
	P          Partition
	PID        int64
	Epoch      int16
	CoordEpoch int32
	Commit     bool
	// From is an offset at or before the transaction's first record on
	// P: a leader that took P over looks for the marker from there
	// before it writes it, in case its previous leader wrote it.
	From uint64
}

// markElsewhere has the other gateways' partitions of e's transaction
// marked by their leaders (cluster mode) and returns the partitions left
// for this gateway to mark. This gateway's own view of a partition marked
// elsewhere is closed (the leader keeps the one readers use). Under e.mu.
func (co *Coordinator) markElsewhere(ctx context.Context, e *txnEntry, parts []Partition, commit bool) ([]Partition, error) {
	rm, ok := co.o.Env.(RemoteMarker)
	if !co.clustered() || !ok || len(parts) == 0 {
		return parts, nil
	}
	marks := make([]RemoteMark, len(parts))
	for i, p := range parts {
		marks[i] = RemoteMark{P: p, PID: e.pid, Epoch: e.epoch, CoordEpoch: co.Epoch(), Commit: commit, From: e.parts[p]}
	}
	handled, err := rm.MarkElsewhere(ctx, marks)
	if err != nil {
		return nil, fmt.Errorf("markers on other gateways' partitions: %w", err)
	}
	left := parts[:0]
	for i, p := range parts {
		if handled[i] {
			co.Index.Close(p, e.pid, 0, false)
		} else {
			left = append(left, p)
		}
	}
	return left, nil
}

// Marked records, at a partition's leader, a marker of pid found at off
// (one its previous leader wrote): an abort enters the aborted list, and
// the partition's view of the transaction ends. Any goroutine.
func (co *Coordinator) Marked(ctx context.Context, p Partition, pid int64, off uint64, commit bool) error {
	return co.marked(ctx, p, pid, off, commit)
}

// partAborted is one stored aborted transaction of a partition.
type partAborted struct {
	p Partition
	a Aborted
}

// EncodeGroupOffsets is the stored form of one group's offsets, as a
// transaction keeps them (a TxnOffsetCommit relayed to the coordinator in
// cluster mode).
func EncodeGroupOffsets(group string, offs []Offset) []byte {
	return encodeOffsets(map[string][]Offset{group: offs})
}

// DecodeGroupOffsets reads what EncodeGroupOffsets wrote.
func DecodeGroupOffsets(b []byte) (string, []Offset, error) {
	m, err := decodeOffsets(b)
	if err != nil || len(m) != 1 {
		return "", nil, errRecord
	}
	for g, offs := range m {
		return g, offs, nil
	}
	return "", nil, errRecord
}

// verifyElsewhere is CheckWrite at a partition's leader that does not
// coordinate id (cluster mode), KIP-890's verification without a request
// to the coordinator: the first batch of a transaction on p is checked
// against the coordinator's state in etcd (written before it answered the
// client's AddPartitionsToTxn), so a batch that arrives after its
// transaction ended, or from a fenced producer, is refused and opens
// nothing no marker would close. Later batches of the same transaction on
// p pass at once.
func (co *Coordinator) verifyElsewhere(ctx context.Context, id string, pid int64, epoch int16, p Partition) int16 {
	if _, open := co.Index.FirstOffset(p, pid); open {
		return 0
	}
	e, err := co.readStored(ctx, id, false)
	switch {
	case err != nil:
		// Retriable for the producer, as Kafka answers a verification
		// its coordinator could not make.
		return kerr.NotEnoughReplicas.Code
	case e == nil:
		return kerr.InvalidProducerIDMapping.Code
	}
	if code := check(e, pid, epoch, true); code != 0 {
		return code
	}
	if _, ok := e.parts[p]; !ok || e.state != Ongoing {
		return kerr.InvalidTxnState.Code
	}
	return 0
}

// readStored reads id's stored state (with its pending offsets when
// offsets) from a store that reads one key (cluster mode); nil when the id
// has none.
func (co *Coordinator) readStored(ctx context.Context, id string, offsets bool) (*txnEntry, error) {
	get, _ := co.o.Store.(bridge.TxnStateGetter)
	if get == nil {
		return nil, errors.New("txn: the store reads no single key")
	}
	v, err := get.TxnState(ctx, keyTxn+id)
	if err != nil || v == nil {
		return nil, err
	}
	e, err := decodeEntry(id, v)
	if err != nil || !offsets {
		return e, err
	}
	if ov, err := get.TxnState(ctx, keyOffsets+id); err != nil {
		return nil, err
	} else if ov != nil {
		if e.offsets, err = decodeOffsets(ov); err != nil {
			return nil, err
		}
	}
	return e, nil
}
