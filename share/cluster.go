package share

// Cluster mode (docs/SHARE_GROUPS.md, "Cluster mode"): several gateways
// serve one cluster. A share group's membership lives on the gateway
// that coordinates the group; each share partition's state lives on the
// gateway that leads the partition (ShareFetch and ShareAcknowledge go
// there, as on Kafka), and durably in a store every gateway reads
// (Options.Shared: etcd). A partition's state is loaded from that store
// when its leader first serves it, and every write is a compare-and-set
// on the revision the leader last read or wrote, made while the leader
// holds the cluster's write gate for the partition. So a gateway that
// lost the partition (or whose state an admin request changed) cannot
// overwrite what came after, and a new leader starts from the last
// acknowledged state: nothing acknowledged is delivered again, and what
// was acquired but not acknowledged is delivered again. A partition held
// here is read again after a view change and when a share session opens
// on it (the admin requests that change a group's state at its
// coordinator need the group empty, so its next consumer opens a new
// session); a write based on an older state fails its compare-and-set
// and drops the partition here.

import (
	"context"
	"errors"
	"fmt"
)

// Shared keeps share-partition states where every gateway of a cluster
// reads and writes them (cluster.Node over etcd). Any goroutine.
type Shared interface {
	// GetState reads key: its value and revision (nil, 0: absent).
	GetState(ctx context.Context, key string) ([]byte, int64, error)
	// PutState writes value (nil deletes) if key's revision is still
	// ifRev (0: absent; AnyRevision: any), returning the new revision;
	// ErrStateConflict when it is not (or this gateway may no longer
	// write at all).
	PutState(ctx context.Context, key string, value []byte, ifRev int64) (int64, error)
	// ScanState calls fn with every key under prefix that has a value.
	ScanState(ctx context.Context, prefix string, fn func(key string, value []byte, rev int64)) error
}

// AnyRevision makes a Shared write unconditional on the key's revision.
const AnyRevision int64 = -1

// ErrStateConflict is a Shared write whose key changed since it was read.
var ErrStateConflict = errors.New("share: the share-partition state changed on another gateway")

// ErrNotLeader is a share partition this gateway does not lead now (or
// whose state another gateway changed): NOT_LEADER_OR_FOLLOWER, so the
// client looks for the leader again.
var ErrNotLeader = errors.New("share: this gateway does not lead the partition now")

// shared reports whether the coordinator runs in cluster mode.
func (co *Coordinator) shared() bool { return co.o.Shared != nil }

// coordinates reports whether this gateway coordinates group (always
// outside cluster mode).
func (co *Coordinator) coordinates(group string) bool {
	return co.o.Coordinates == nil || co.o.Coordinates(group)
}

// loadShared returns the share partition of group at tp as the shared
// store holds it, installed in place of what this gateway held (nil when
// the store has none, or one of another topic of the same name). Without
// co.mu.
func (co *Coordinator) loadShared(ctx context.Context, group string, tp TP, topicID [16]byte) (*Partition, int64, error) {
	v, rev, err := co.o.Shared.GetState(ctx, stateKey(group, tp.Topic, tp.Partition))
	if err != nil {
		return nil, 0, err
	}
	if v == nil {
		return nil, 0, nil
	}
	p, err := parseState(v, co.stateBound())
	if err != nil {
		co.log.Warn("share groups: an unreadable share-partition state is started over", "group", group, "topic", tp.Topic, "partition", tp.Partition)
		return nil, rev, nil
	}
	if p.TopicID != topicID {
		return nil, rev, nil // a deleted topic's; overwritten at rev
	}
	p.rev = rev
	return p, rev, nil
}

// stateBound bounds the window a stored state may describe, so a damaged
// value cannot allocate without bound. A window passes MaxInFlight by at
// most the rest of one batch (Acquire in batch mode): a batch of a
// million records is far past what a frame holds.
func (co *Coordinator) stateBound() int {
	return max(2*co.o.Config.MaxInFlight, co.o.Config.MaxInFlight+1<<20)
}

// fetchFromShared is FetchFrom in cluster mode: a partition this gateway
// holds is used as it is unless it may be stale (a view change, or a new
// share session of it), which one read of the store settles; otherwise it is loaded from the store, or started by
// start and stored when the store has none. Without co.mu.
func (co *Coordinator) fetchFromShared(ctx context.Context, group string, tp TP, topicID [16]byte, start func(ctx context.Context) (int64, error)) (int64, error) {
	if co.o.Leads != nil && !co.o.Leads(tp) {
		return 0, ErrNotLeader
	}
	co.mu.Lock()
	g := co.group(group)
	if p := g.parts[tp]; p != nil && p.TopicID == topicID && !p.verify {
		from := p.FetchFrom()
		co.mu.Unlock()
		return from, nil
	}
	co.mu.Unlock()
	loaded, rev, err := co.loadShared(ctx, group, tp, topicID)
	if err != nil {
		return 0, err
	}
	fresh := false
	if loaded == nil {
		off, err := start(ctx)
		if err != nil {
			return 0, err
		}
		loaded = newPartition(topicID, off)
		loaded.rev, loaded.dirty, fresh = rev, true, true
	}
	co.mu.Lock()
	g = co.group(group)
	p := g.parts[tp]
	switch {
	case p != nil && p.TopicID == topicID && (p.dirty || p.writing || atLeast(p.rev, rev)):
		// What the store held when read, or newer: this gateway wrote
		// it since (an acknowledgement landed between the read and
		// now), or another fetch started it meanwhile, or it holds
		// changes on their way to the store (the read may have seen
		// the write before its answer set rev). Keep it, with its
		// locks: the state read would undo those acknowledgements
		// here. Were the store's newer for another reason, the pending
		// write fails its compare-and-set and drops it.
		p.verify = false
		fresh = false
	default:
		loaded.stats = &co.stats
		p = loaded
		g.parts[tp] = p
	}
	from := p.FetchFrom()
	co.mu.Unlock()
	if !fresh {
		return from, nil
	}
	return from, co.persist(ctx, group, tp)
}

// atLeast reports whether a partition last read or written at revision
// held is as new as the store's state read at rev: revisions only grow,
// but a key deleted since (DeleteShareGroupOffsets, DeleteGroups, a
// deleted topic) reads as 0, which only a partition never stored (held
// 0) is as new as.
func atLeast(held, rev int64) bool {
	if rev == 0 {
		return held == 0
	}
	return held >= rev
}

// writeShared writes p's state, snapshot v, over the revision it was
// based on, holding the partition's write gate. A conflict drops the
// partition here, so the next fetch loads what the store holds. The
// partition's writer is held; without co.mu.
func (co *Coordinator) writeShared(ctx context.Context, group string, tp TP, key string, p *Partition, v []byte, ifRev int64) error {
	if co.o.Writable != nil {
		end, ok := co.o.Writable(tp)
		if !ok {
			return ErrNotLeader
		}
		defer end()
	}
	rev, err := co.o.Shared.PutState(ctx, key, v, ifRev)
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[group]
	switch {
	case err == nil:
		p.rev = rev
		return nil
	case errors.Is(err, ErrStateConflict):
		if g != nil && g.parts[tp] == p {
			delete(g.parts, tp)
		}
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return err
}

// Moved is the cluster's view change: the share partitions this gateway
// no longer leads are dropped (their new leader loads them from the
// store), and the others are read again from the store before their next
// use, since a partition led here again may have been written elsewhere
// meanwhile. Any goroutine.
func (co *Coordinator) Moved(lost func(topic string, partition int32) bool) {
	if !co.shared() {
		return
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	for _, g := range co.groups {
		for tp, p := range g.parts {
			if lost(tp.Topic, tp.Partition) {
				delete(g.parts, tp)
				continue
			}
			p.verify = true
		}
	}
}

// sharedStates calls fn with every share partition of group in the
// shared store. Without co.mu.
func (co *Coordinator) sharedStates(ctx context.Context, group string, fn func(tp TP, p *Partition)) error {
	bound := co.stateBound()
	return co.o.Shared.ScanState(ctx, KeyPrefix+group+"\x00", func(key string, v []byte, _ int64) {
		g, t, n, ok := parseKey(key)
		if !ok || g != group {
			return
		}
		p, err := parseState(v, bound)
		if err != nil {
			return
		}
		fn(TP{t, n}, p)
	})
}

// verifyParts marks g's partitions among parts to be read again from the
// shared store before their next use. co.mu is held.
func (g *Group) verifyParts(parts []SessionPart) {
	for _, sp := range parts {
		if p := g.parts[sp.TP]; p != nil {
			p.verify = true
		}
	}
}
