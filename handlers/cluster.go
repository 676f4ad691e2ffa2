package handlers

// Cluster mode (docs/CLUSTER.md, package cluster): several gateways over
// one Iggy, each leading a share of the partitions and coordinating a
// share of the groups. Without Cfg.Cluster every function here answers
// as the one-node cluster, at no cost.

import (
	"context"
	"log/slog"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/txn"
)

// endpointOf is where the clients of this call's listener reach member id;
// false when that member has no such listener (it is then left out, as
// Kafka leaves out brokers without the listener).
func (c *Call) endpointOf(v *cluster.View, id int32) (string, int32, bool) {
	if id == v.Self {
		h, p := c.advertised()
		return h, p, true
	}
	m, ok := v.Member(id)
	if !ok {
		return "", 0, false
	}
	e, ok := m.Listeners[c.Listener]
	return e.Host, e.Port, ok
}

// brokers calls add with each broker that Metadata and DescribeCluster
// list, by id: this gateway at the address of the call's listener, or in
// cluster mode (v not nil) every live gateway with that listener. It
// returns the controller id they name: this node, or the lowest live id.
func (c *Call) brokers(v *cluster.View, add func(id int32, host string, port int32)) (controller int32) {
	if v == nil {
		host, port := c.advertised()
		add(c.G.Cfg.NodeID, host, port)
		return c.G.Cfg.NodeID
	}
	for _, m := range v.Members {
		if host, port, ok := c.endpointOf(v, m.ID); ok {
			add(m.ID, host, port)
		}
	}
	return v.Controller()
}

// leadership is where the partitions of one answer (Metadata,
// DescribeTopicPartitions) are led: all by this gateway with leader epoch
// 0, or in cluster mode each by its leader in one view, with the view's
// epoch (it grows on every move).
type leadership struct {
	v     *cluster.View
	self  int32
	epoch int32
	// nodes are the brokers' ids, ascending: every replica (and ISR)
	// list is a one-node list sliced from it, shared read-only.
	nodes []int32
}

// leadership is the leadership of c.metaView (nil: this gateway alone).
func (c *Call) leadership() leadership {
	if v := c.metaView; v != nil {
		return leadership{v: v, epoch: v.Epoch(), nodes: v.IDs()}
	}
	id := c.G.Cfg.NodeID
	return leadership{self: id, nodes: []int32{id}}
}

// of is the leader of a partition and its replicas (= ISR), [leader]; in
// an empty view no leader (-1).
func (l *leadership) of(topic string, partition int32) (leader int32, replicas []int32) {
	leader = l.self
	if l.v != nil {
		leader = l.v.Leader(topic, partition)
	}
	i := sort.Search(len(l.nodes), func(i int) bool { return l.nodes[i] >= leader })
	if i < len(l.nodes) && l.nodes[i] == leader {
		return leader, l.nodes[i : i+1 : i+1]
	}
	return leader, []int32{leader}
}

// ClusterChanged is the cluster's Changed hook: state of partitions and
// groups that moved away is dropped (a partition's idempotence state is
// rebuilt from the store if it comes back, a group's members rejoin its
// new coordinator, a share partition's state is loaded from etcd by its
// new leader) and parked fetches of moved partitions re-run. It runs
// on the cluster's watch goroutine after the new view is in place.
func (g *Gateway) ClusterChanged(old, cur *cluster.View) {
	lost := func(topic string, partition int32) bool { return cur.Leader(topic, partition) != cur.Self }
	g.Idem.Forget(lost)
	if g.Groups != nil {
		if n := g.Groups.Forget(func(name string) bool { return cur.Coordinator(name) != cur.Self }); n > 0 {
			g.Log.Info("cluster: groups moved to other gateways", "groups", n)
		}
	}
	if g.Share != nil {
		g.Share.Moved(lost)
	}
	if g.Txn != nil {
		g.Txn.Moved(func(id string) bool { return cur.Coordinator(id) == cur.Self },
			func(p txn.Partition) bool { return lost(p.Topic, p.Partition) })
	}
	if g.Watch != nil {
		g.Watch.SignalWhere(func(k PartitionKey) bool { return lost(k.Topic, k.Partition) })
	}
}

// appendLed appends a batch in the store's format to a partition this
// gateway leads (the caller holds the cluster's write gate, BeginWrite);
// durable, when not nil, waits for its fsync (a store with staged
// appends). In cluster mode it logs each append at debug level with the
// leader epoch it was allowed under: the gate is held until EndWrite, so
// the view read here is the one the check used. The cluster e2e tests read
// these lines from every gateway to check that no partition had two
// writers at once (in a partition's offset order the epochs never go back
// and one epoch has one writer). Produce path, a worker.
func (c *Call) appendLed(topic string, partition int32, batch []byte, prep bridge.Prepared, records int32) (uint64, func(context.Context) error, error) {
	g := c.G
	base, durable, err := g.Store.AppendStaged(c.Ctx, g.Cfg.Stream, topic, partition, batch, prep)
	if err == nil {
		if cl, log := g.Cfg.Cluster, g.Log; cl != nil && log != nil && log.Enabled(c.Ctx, slog.LevelDebug) {
			log.Debug("cluster: appended", "topic", topic, "partition", partition,
				"epoch", cl.View().Epoch(), "offset", base, "records", records)
		}
	}
	return base, durable, err
}

// partitionLeader is the leader Metadata names for a partition, which is
// also its one replica: this gateway, or in cluster mode (v not nil) its
// rendezvous leader in v (-1 in an empty view). Any goroutine.
func (c *Call) partitionLeader(v *cluster.View, topic string, partition int32) int32 {
	if v == nil {
		return c.G.Cfg.NodeID
	}
	return v.Leader(topic, partition)
}

// isBroker reports whether id is a broker Metadata can list: this
// gateway, or in cluster mode (v not nil) a live gateway of v.
func (c *Call) isBroker(v *cluster.View, id int32) bool {
	if v == nil {
		return id == c.G.Cfg.NodeID
	}
	return v.Has(id)
}

// currentEpochCode checks a request's current_leader_epoch (KIP-320)
// against the partition's leader epoch, as a Kafka leader does before it
// reads: -1 is not checked; an older one is FENCED_LEADER_EPOCH (the
// client's metadata is stale), a newer one UNKNOWN_LEADER_EPOCH (this
// leader's is). Any goroutine.
func currentEpochCode(current, latest int32) int16 {
	switch {
	case current != undefinedEpoch && current < latest:
		return kerr.FencedLeaderEpoch.Code
	case current > latest:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

// leaderHints are the hints a Kafka 4 broker adds to a partition answered
// NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH (KIP-951: Produce v10+
// for the first, Fetch v16+, ShareFetch and ShareAcknowledge):
// the partition's current leader and epoch, and the endpoints, on the
// call's listener, of the leaders named, so the client sends to the new
// leader without waiting for a metadata refresh. Nil outside cluster mode,
// where no partition is led elsewhere. Worker of the call.
type leaderHints struct {
	c     *Call
	v     *cluster.View
	named []int32 // the leaders named so far, each once
}

// newLeaderHints starts the hints of one answer; nil outside cluster mode.
func (c *Call) newLeaderHints() *leaderHints {
	n := c.G.Cfg.Cluster
	if n == nil {
		return nil
	}
	return &leaderHints{c: c, v: n.View()}
}

// of is the leader and epoch to name for a partition answered code, and
// whether to name one (only for the two codes, and when the view has a
// live leader for it).
func (h *leaderHints) of(topic string, partition int32, code int16) (leader, epoch int32, ok bool) {
	if h == nil || code != kerr.NotLeaderForPartition.Code && code != kerr.FencedLeaderEpoch.Code {
		return -1, -1, false
	}
	leader = h.v.Leader(topic, partition)
	if leader < 0 {
		return -1, -1, false
	}
	for _, id := range h.named {
		if id == leader {
			return leader, h.v.Epoch(), true
		}
	}
	h.named = append(h.named, leader)
	return leader, h.v.Epoch(), true
}

// endpoints calls add with each leader named, ascending, and its address
// on the call's listener (a leader without that listener is left out, as
// Metadata leaves it out).
func (h *leaderHints) endpoints(add func(id int32, host string, port int32)) {
	if h == nil {
		return
	}
	slices.Sort(h.named)
	for _, id := range h.named {
		if host, port, ok := h.c.endpointOf(h.v, id); ok {
			add(id, host, port)
		}
	}
}
