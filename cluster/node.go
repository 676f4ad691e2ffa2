package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Options configures a Node.
type Options struct {
	Endpoints []string // etcd client URLs
	// Prefix is the key prefix of this cluster in etcd, e.g.
	// "/iggy-kafka/<cluster id>/"; every gateway of one cluster uses the
	// same.
	Prefix string
	Self   Member
	// TTL is the session lease: a gateway that cannot renew it for this
	// long stops writing and is dropped by the others (default 10 s).
	TTL time.Duration
	// Changed runs after each new view is in place and before this node
	// acknowledges it, on the node's watch goroutine: the gateway drops
	// the state of partitions and groups it no longer owns and wakes
	// parked calls there. It must not block for long.
	Changed func(old, cur *View)
	Log     *slog.Logger

	// ackFault, when set, runs before each acknowledgement is put; an
	// error makes that put fail as if etcd had not answered (tests only).
	ackFault func() error
}

// Node is this gateway's membership in an etcd-coordinated cluster: its
// session lease, the live members (View) and the handover rule that keeps
// one writer per partition. Methods are nil-safe: a nil *Node is the
// one-node cluster of a gateway without etcd, leading everything. Any
// goroutine.
//
// # Who may write a partition
//
// Every member computes the same owner from the same view (rendezvous
// hashing), but members apply a new view at slightly different times.
// So a member writes partition p under view v only if it owns p in v,
// its lease is known live, and either it owned p in the latest settled
// view (one every member of it acknowledged) or v itself is settled. A
// member acknowledges a view only after it stopped every write that the
// view takes from it (the write gate below), so by the time a view
// settles no other member still writes what it moved. Members that left
// the view cannot write either: their lease expired, and a gateway stops
// writing by its own clock before etcd expires its lease.
type Node struct {
	opts Options
	cli  *clientv3.Client
	log  *slog.Logger

	view    atomic.Pointer[View]
	settled atomic.Pointer[View] // latest view every member acknowledged; nil: none yet

	// gate: writers hold it shared from their ownership check to the end
	// of their store write; a view change takes it exclusively, so when
	// the swap is done no write of a partition that moved is in flight.
	gate sync.RWMutex

	lease      atomic.Int64 // clientv3.LeaseID of the live session, 0: none
	validUntil atomic.Int64 // monotonic ns (since start) the lease is known live until

	mu   sync.Mutex
	acks map[int32]uint64 // member -> id of the view it applied last

	// ackSent is the id of the view whose acknowledgement etcd last
	// accepted from this node under its current lease (0: none): the
	// others settle on what is in etcd, not on what this node applied.
	ackSent atomic.Uint64

	// ackMu serializes this node's acknowledgements, each of the view
	// current when it runs: two acks racing (the watch applying a view
	// and a re-registration) could otherwise land in etcd out of order
	// and leave an older view acknowledged for good.
	ackMu sync.Mutex

	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// ErrIDInUse is returned by Start when another live gateway holds this
// node id for longer than Start may wait.
var ErrIDInUse = errors.New("cluster: the node id is held by another live gateway")

// Start joins the cluster: it opens an etcd session lease, registers
// Self under it (waiting up to wait for a previous holder of the id, e.g.
// this gateway before a kill -9, to let its lease expire), reads the
// members and starts renewing and watching. The first view is in place
// when Start returns.
func Start(ctx context.Context, o Options, wait time.Duration) (*Node, error) {
	if o.TTL <= 0 {
		o.TTL = 10 * time.Second
	}
	if o.TTL < 2*time.Second {
		return nil, fmt.Errorf("cluster: session TTL %v is under 2s", o.TTL)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   o.Endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		Context:     context.Background(),
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd client: %w", err)
	}
	n := &Node{opts: o, cli: cli, log: o.Log.With("component", "cluster"), acks: map[int32]uint64{}, start: time.Now()}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	deadline := time.Now().Add(wait)
	for {
		err = n.register(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrIDInUse) || time.Now().After(deadline) {
			n.cancel()
			cli.Close()
			return nil, err
		}
		n.log.Info("cluster: waiting for the previous session of this node id to expire", "id", o.Self.ID)
		select {
		case <-ctx.Done():
			n.cancel()
			cli.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	rev, err := n.reload(ctx)
	if err != nil {
		n.Close()
		return nil, err
	}
	n.done.Add(3)
	go n.renew()
	go n.watchMembers(rev)
	go n.watchAcks()
	return n, nil
}

func (n *Node) memberKey(id int32) string { return n.opts.Prefix + "members/" + strconv.Itoa(int(id)) }
func (n *Node) ackKey(id int32) string    { return n.opts.Prefix + "acks/" + strconv.Itoa(int(id)) }

// sinceStart is the monotonic clock the lease validity is kept in.
func (n *Node) sinceStart() int64 { return int64(time.Since(n.start)) }

// register grants a lease and puts Self's member key under it, unless a
// live session already holds the id.
func (n *Node) register(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sent := n.sinceStart()
	lg, err := n.cli.Grant(ctx, int64((n.opts.TTL+time.Second-1)/time.Second))
	if err != nil {
		return fmt.Errorf("cluster: etcd lease: %w", err)
	}
	val, err := json.Marshal(n.opts.Self)
	if err != nil {
		return err
	}
	key := n.memberKey(n.opts.Self.ID)
	tr, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val), clientv3.WithLease(lg.ID))).
		Commit()
	if err != nil {
		return fmt.Errorf("cluster: etcd register: %w", err)
	}
	if !tr.Succeeded {
		_, _ = n.cli.Revoke(context.Background(), lg.ID)
		return ErrIDInUse
	}
	n.ackSent.Store(0) // the acknowledgement under the old lease went with it
	n.lease.Store(int64(lg.ID))
	n.validUntil.Store(sent + n.validity(lg.TTL))
	return nil
}

// validity is how long after sending a renewal the lease counts as live
// here: its TTL less a margin, so this gateway stops writing before etcd
// can expire the lease and hand its partitions to others.
func (n *Node) validity(ttlSeconds int64) int64 {
	ttl := min(time.Duration(ttlSeconds)*time.Second, n.opts.TTL)
	return int64(ttl - ttl/4)
}

// renew keeps the lease alive (every TTL/4), re-registering when it was
// lost (etcd unreachable past the TTL, or this process was stopped).
func (n *Node) renew() {
	defer n.done.Done()
	t := time.NewTicker(n.opts.TTL / 4)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		id := clientv3.LeaseID(n.lease.Load())
		if id == 0 {
			n.retryRegister()
			continue
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.opts.TTL/4)
		sent := n.sinceStart()
		r, err := n.cli.KeepAliveOnce(ctx, id)
		cancel()
		switch {
		case err == nil:
			n.validUntil.Store(sent + n.validity(r.TTL))
			if !n.Settled() || n.ackSent.Load() != n.View().id {
				// A lost or overtaken acknowledgement must not keep
				// gained partitions waiting for ever, here or on the
				// others (this node may have settled on their
				// acknowledgements while its own did not reach etcd):
				// say again which view this node is on.
				n.ackCurrent()
			}
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			n.log.Warn("cluster: the session lease expired; writes stop until this gateway registers again")
			n.lease.Store(0)
			n.validUntil.Store(0)
			n.retryRegister()
		default:
			if n.ctx.Err() == nil && !n.LeaseLive() {
				n.log.Warn("cluster: etcd unreachable past the session; writes are refused (NOT_LEADER_OR_FOLLOWER) until it answers", "err", err)
			}
		}
	}
}

// retryRegister tries once to register again after losing the lease.
func (n *Node) retryRegister() {
	if err := n.register(n.ctx); err != nil {
		if n.ctx.Err() == nil {
			n.log.Warn("cluster: registering again failed; retrying", "err", err)
		}
		return
	}
	n.log.Info("cluster: registered again with a new session", "id", n.opts.Self.ID)
	// The acknowledgement went with the old lease; the member key's
	// return is a membership change that acknowledges again, but the
	// current view may already be the one that change produces.
	n.ackCurrent()
}

// LeaseLive reports whether this gateway's session is known live now.
func (n *Node) LeaseLive() bool {
	if n == nil {
		return true
	}
	return n.sinceStart() < n.validUntil.Load()
}

// reload reads every member and installs that view; it returns the
// revision read at, from which the watch continues.
func (n *Node) reload(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := n.cli.Get(ctx, n.opts.Prefix+"members/", clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("cluster: etcd list members: %w", err)
	}
	// The view's revision is its latest member key's: the revision the
	// others' watches report for the same change (the header's would
	// include unrelated writes).
	ms := make([]Member, 0, len(r.Kvs))
	var last int64
	for _, kv := range r.Kvs {
		m, ok := n.decodeMember(kv)
		if !ok {
			continue
		}
		ms = append(ms, m)
		last = max(last, kv.ModRevision)
	}
	v := newView(last, n.opts.Self.ID, ms)
	if cur := n.view.Load(); cur != nil {
		if cur.id == v.id {
			// After a watch failure (etcd restarted, the stream cut):
			// nothing changed, so the view and its epoch stay. A new
			// view here would carry an older revision when the current
			// one came from a deletion.
			return r.Header.Revision, nil
		}
		if v.Rev <= cur.Rev {
			// Members left while the watch was down: their deletions
			// are newer than every live key. The read's revision is
			// newer than both, so the epoch still only grows.
			v.Rev = r.Header.Revision
		}
	}
	n.apply(v)
	return r.Header.Revision, nil
}

// watchMembers follows membership changes from rev on; after a watch
// failure (compaction, etcd restart) it lists the members again.
func (n *Node) watchMembers(rev int64) {
	defer n.done.Done()
	for n.ctx.Err() == nil {
		wc := n.cli.Watch(clientv3.WithRequireLeader(n.ctx), n.opts.Prefix+"members/", clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for wr := range wc {
			if wr.Err() != nil {
				break
			}
			if len(wr.Events) == 0 {
				continue
			}
			members := n.View().Members
			byID := make(map[int32]Member, len(members)+1)
			for _, m := range members {
				byID[m.ID] = m
			}
			for _, ev := range wr.Events {
				id, err := strconv.Atoi(strings.TrimPrefix(string(ev.Kv.Key), n.opts.Prefix+"members/"))
				if err != nil {
					continue
				}
				if ev.Type == mvccpb.DELETE {
					delete(byID, int32(id))
					continue
				}
				if m, ok := n.decodeMember(ev.Kv); ok {
					byID[m.ID] = m
				}
			}
			ms := make([]Member, 0, len(byID))
			for _, m := range byID {
				ms = append(ms, m)
			}
			rev = wr.Header.Revision
			last := wr.Events[len(wr.Events)-1].Kv.ModRevision
			n.apply(newView(last, n.opts.Self.ID, ms))
		}
		if n.ctx.Err() != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
		if r, err := n.reload(n.ctx); err == nil {
			rev = r
		}
	}
}

// decodeMember reads one member key.
func (n *Node) decodeMember(kv *mvccpb.KeyValue) (Member, bool) {
	var m Member
	if err := json.Unmarshal(kv.Value, &m); err != nil {
		n.log.Warn("cluster: ignoring a damaged member record", "key", string(kv.Key), "err", err)
		return m, false
	}
	m.session = kv.CreateRevision
	return m, true
}

// apply installs cur: waits for in-flight writes, swaps, runs Changed,
// then acknowledges cur in etcd. Watch goroutine (and Start).
func (n *Node) apply(cur *View) {
	n.gate.Lock()
	old := n.view.Swap(cur)
	n.gate.Unlock()
	if old == nil {
		old = &View{Self: cur.Self}
	}
	n.log.Info("cluster: membership", "rev", cur.Rev, "members", cur.IDs())
	if n.opts.Changed != nil {
		n.opts.Changed(old, cur)
	}
	n.ackCurrent()
}

// ackCurrent records in etcd that this node applied its current view.
// Watch and renew goroutines; serialized by ackMu.
func (n *Node) ackCurrent() {
	n.ackMu.Lock()
	defer n.ackMu.Unlock()
	v := n.View()
	id := clientv3.LeaseID(n.lease.Load())
	if v == nil || id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	var err error
	if n.opts.ackFault != nil {
		err = n.opts.ackFault()
	}
	if err == nil {
		_, err = n.cli.Put(ctx, n.ackKey(n.opts.Self.ID), strconv.FormatUint(v.id, 16), clientv3.WithLease(id))
	}
	if err == nil {
		n.ackSent.Store(v.id)
	} else if n.ctx.Err() == nil {
		n.log.Warn("cluster: acknowledging the membership failed; gained partitions wait until it is sent again with the next renewal", "rev", v.Rev, "err", err)
	}
	n.noteAck(n.opts.Self.ID, v.id)
}

// watchAcks follows the other members' acknowledgements.
func (n *Node) watchAcks() {
	defer n.done.Done()
	prefix := n.opts.Prefix + "acks/"
	for n.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
		r, err := n.cli.Get(ctx, prefix, clientv3.WithPrefix())
		cancel()
		if err != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for _, kv := range r.Kvs {
			n.noteAckKV(prefix, kv)
		}
		wc := n.cli.Watch(clientv3.WithRequireLeader(n.ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(r.Header.Revision+1))
		for wr := range wc {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.PUT {
					n.noteAckKV(prefix, ev.Kv)
				}
			}
		}
		if n.ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func (n *Node) noteAckKV(prefix string, kv *mvccpb.KeyValue) {
	id, err1 := strconv.Atoi(strings.TrimPrefix(string(kv.Key), prefix))
	vid, err2 := strconv.ParseUint(string(kv.Value), 16, 64)
	if err1 == nil && err2 == nil {
		n.noteAck(int32(id), vid)
	}
}

// noteAck records that member id applied the view named vid, and settles
// the current view once every member of it applied it.
func (n *Node) noteAck(id int32, vid uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.acks[id] = vid
	n.settleLocked()
}

// settleLocked marks the current view settled if every member acked it.
// n.mu is held.
func (n *Node) settleLocked() {
	v := n.view.Load()
	if v == nil {
		return
	}
	if n.settled.Load() == v {
		return
	}
	for _, m := range v.Members {
		if n.acks[m.ID] != v.id {
			return
		}
	}
	n.settled.Store(v)
	n.log.Debug("cluster: membership settled", "rev", v.Rev)
}

// View is the current membership. Nil receiver: nil.
func (n *Node) View() *View {
	if n == nil {
		return nil
	}
	return n.view.Load()
}

// Settled reports whether the current view is acknowledged by all.
func (n *Node) Settled() bool {
	if n == nil {
		return true
	}
	s := n.settled.Load()
	return s != nil && s == n.view.Load()
}

// servable is the handover rule for a key owned by self in v: self owned
// it in the latest settled view, or v is settled.
func (n *Node) servable(v *View, ownerIn func(*View) int32) bool {
	s := n.settled.Load()
	return s == v || s != nil && ownerIn(s) == v.Self
}

// Leads reports whether this gateway leads the partition now (serves its
// fetches and offsets). Writes use BeginWrite.
func (n *Node) Leads(topic string, partition int32) bool {
	_, leads := n.LeaderEpoch(topic, partition)
	return leads
}

// LeaderEpoch is Leads with the partition's leader epoch in the same view
// (its Epoch), which OffsetForLeaderEpoch fences and answers with. Nil
// receiver (a one-node cluster): epoch 0, always the leader.
func (n *Node) LeaderEpoch(topic string, partition int32) (epoch int32, leads bool) {
	if n == nil {
		return 0, true
	}
	v := n.view.Load()
	return v.Epoch(), v.Leader(topic, partition) == v.Self && n.LeaseLive()
}

// Serves reports whether this gateway may serve the partition's state
// now: it leads it, its session is known live, and the handover rule lets
// it write there (BeginWrite's check, without taking the gate). Share
// groups load a share partition's state only then, so a partition gained
// in a view not yet settled is not read before its old leader stopped
// writing it. Any goroutine.
func (n *Node) Serves(topic string, partition int32) bool {
	if n == nil {
		return true
	}
	v := n.view.Load()
	return v.Leader(topic, partition) == v.Self && n.LeaseLive() &&
		n.servable(v, func(s *View) int32 { return s.Leader(topic, partition) })
}

// BeginWrite reports whether this gateway may write the partition now;
// when true the caller must call EndWrite after its store write finished
// (or failed). It may block briefly while a view change waits for the
// writes in flight. Any goroutine; never nested.
func (n *Node) BeginWrite(topic string, partition int32) bool {
	if n == nil {
		return true
	}
	n.gate.RLock()
	v := n.view.Load()
	if v.Leader(topic, partition) == v.Self && n.LeaseLive() &&
		n.servable(v, func(s *View) int32 { return s.Leader(topic, partition) }) {
		return true
	}
	n.gate.RUnlock()
	return false
}

// EndWrite ends a write BeginWrite allowed.
func (n *Node) EndWrite() {
	if n != nil {
		n.gate.RUnlock()
	}
}

// GroupCode is the error a request for group gets here: 0 when this
// gateway coordinates it, NOT_COORDINATOR when another does (the client
// asks FindCoordinator again), COORDINATOR_LOAD_IN_PROGRESS while it was
// just handed here and the previous coordinator has not let go yet, and
// COORDINATOR_NOT_AVAILABLE while the session is not known live.
func (n *Node) GroupCode(group string) int16 {
	if n == nil {
		return 0
	}
	v := n.view.Load()
	switch {
	case v.Coordinator(group) != v.Self:
		return kerr.NotCoordinator.Code
	case !n.LeaseLive():
		return kerr.CoordinatorNotAvailable.Code
	case !n.servable(v, func(s *View) int32 { return s.Coordinator(group) }):
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// BeginCoordinate is GroupCode for a write of key's coordinator state
// (a transactional id's, package txn): when it answers 0 it holds the
// write gate, so a view change waits for the write, and the caller must
// call EndWrite after it. So when a view settles, no gateway still writes
// the state of a key it no longer coordinates. Any goroutine; never nested.
func (n *Node) BeginCoordinate(key string) int16 {
	if n == nil {
		return 0
	}
	n.gate.RLock()
	if code := n.GroupCode(key); code != 0 {
		n.gate.RUnlock()
		return code
	}
	return 0
}

// Close leaves the cluster: the session lease is revoked, so the others
// take over at once rather than after the TTL.
func (n *Node) Close() {
	if n == nil {
		return
	}
	n.cancel()
	n.done.Wait()
	if id := clientv3.LeaseID(n.lease.Load()); id != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = n.cli.Revoke(ctx, id)
		cancel()
	}
	n.cli.Close()
}
