package txn

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	get, _ := co.o.Store.(bridge.TxnStateGetter)
	if get == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	v, err := get.TxnState(ctx, keyTxn+id)
	if err != nil {
		co.o.Log.Warn("txn: reading a transactional id's state failed", "transactional_id", id, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	if v == nil {
		return 0 // a new id
	}
	e, err := decodeEntry(id, v)
	if err == nil {
		var ov []byte
		if ov, err = get.TxnState(ctx, keyOffsets+id); err == nil && ov != nil {
			e.offsets, err = decodeOffsets(ov)
		}
	}
	if err != nil {
		co.o.Log.Warn("txn: a transactional id's stored state cannot be read", "transactional_id", id, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	co.install(e)
	return 0
}

// install adds a loaded entry unless one is there already (a request or
// Adopt loaded it meanwhile); it reports whether it did. An open
// transaction's partitions hold their last stable offsets from where they
// were added, as after Load.
func (co *Coordinator) install(e *txnEntry) bool {
	co.mu.Lock()
	if co.ids[e.id] != nil {
		co.mu.Unlock()
		return false
	}
	co.ids[e.id] = e
	co.mu.Unlock()
	switch e.state {
	case Ongoing, PrepareCommit, PrepareAbort:
		for p, bound := range e.parts {
			co.Index.Open(p, e.pid, bound)
		}
	}
	return true
}

// Moved drops the ids this gateway no longer coordinates (stay false) and
// asks the next Run tick to Adopt the ids it gained. An operation that
// holds a dropped entry fails at its next store write, which the store
// refuses for an id coordinated elsewhere. The cluster's watch goroutine.
func (co *Coordinator) Moved(stay func(id string) bool) {
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
	var found []*txnEntry
	var aborted []partAborted
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
		switch co.o.Placement.Code(id) {
		case 0:
		case kerr.NotCoordinator.Code:
			return
		default:
			later = true
			return
		}
		co.mu.Lock()
		_, held := co.ids[id]
		co.mu.Unlock()
		if held {
			return
		}
		if strings.HasPrefix(key, keyOffsets) {
			offsets[id] = append([]byte(nil), v...)
			return
		}
		e, err := decodeEntry(id, v)
		if err != nil {
			bad++
			return
		}
		found = append(found, e)
	})
	if err != nil {
		return fmt.Errorf("txn: scanning the transaction state: %w", err)
	}
	if bad > 0 {
		co.o.Log.Warn("txn: skipped unreadable transaction state records", "count", bad)
	}
	for _, x := range aborted {
		co.Index.AddAborted(x.p, x.a)
	}
	var failed error
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
	return nil
}

// RemoteMarker is an Env that, in cluster mode, has the leader of a
// partition another gateway leads write a marker there. Any goroutine.
type RemoteMarker interface {
	// MarkElsewhere has p's leader write pid's marker when that is
	// another gateway (handled true), and returns once it is written;
	// from is an offset at or before the transaction's first record on
	// p (a leader that took p over looks for the marker from there
	// before writing it, in case its previous leader wrote it). handled
	// false: this gateway leads p and writes it itself.
	MarkElsewhere(ctx context.Context, p Partition, pid int64, epoch int16, coordEpoch int32, commit bool, from uint64) (handled bool, err error)
}

// markElsewhere is RemoteMarker's call in cluster mode: handled when
// another gateway wrote the marker, and this gateway's own view of the
// partition's transaction is closed (the leader keeps the one readers
// use).
func (co *Coordinator) markElsewhere(ctx context.Context, p Partition, pid int64, epoch int16, commit bool, from uint64) (bool, error) {
	rm, ok := co.o.Env.(RemoteMarker)
	if !co.clustered() || !ok {
		return false, nil
	}
	handled, err := rm.MarkElsewhere(ctx, p, pid, epoch, co.Epoch(), commit, from)
	if handled && err == nil {
		co.Index.Close(p, pid, 0, false)
	}
	return handled, err
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
