package handlers

// Share groups (KIP-932, docs/SHARE_GROUPS.md): the glue between the share
// coordinator (package share) and the gateway: its options, the topic
// lookups of its heartbeats, where a share partition starts, and the
// reads of ShareFetch (78_share_fetch.go) through the Fetch pipeline.

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/share"
)

// ShareConfig turns share groups off (they are on by default) and bounds
// them.
type ShareConfig struct {
	Disabled bool
	// Limits are Kafka's group.share.* broker bounds; the zero value is
	// share.DefaultConfig.
	Limits share.Config
	// Now is the share coordinator's clock (locks, member sessions); nil
	// is the wall clock. Tests set it.
	Now func() time.Time
}

// shareServed gates the share-group keys (Spec.Gated): on unless turned
// off.
func shareServed(cfg *Config) bool { return !cfg.Shares.Disabled }

// newShareCoordinator makes a gateway's share coordinator over its store
// and stream, waking parked ShareFetches through w; StartShareGroups loads
// it. In cluster mode the share-partition states are in the cluster's
// etcd (share/cluster.go), written by each partition's leader under the
// cluster's write gate.
func newShareCoordinator(cfg Config, store bridge.Backend, w *Watchers, log *slog.Logger) *share.Coordinator {
	lim := cfg.Shares.Limits
	if lim.MaxInFlight <= 0 {
		lim = share.DefaultConfig()
	}
	var shared share.Shared
	var writable func(share.TP) (func(), bool)
	var leads func(share.TP) bool
	var coordinates func(string) bool
	if n := cfg.Cluster; n != nil {
		shared = sharedState{n}
		writable = func(tp share.TP) (func(), bool) {
			if !n.BeginWrite(tp.Topic, tp.Partition) {
				return nil, false
			}
			return n.EndWrite, true
		}
		leads = func(tp share.TP) bool { return n.Serves(tp.Topic, tp.Partition) }
		coordinates = func(group string) bool { v := n.View(); return v.Coordinator(group) == v.Self }
	}
	return share.New(share.Options{
		Shared: shared, Writable: writable, Leads: leads, Coordinates: coordinates,
		Config: lim,
		Store:  store,
		Configs: func(ctx context.Context, group string) (bridge.GroupConfigs, error) {
			return store.GroupConfigs(ctx, cfg.Stream, group)
		},
		Available: func(topic string, partition int32) {
			w.Signal(PartitionKey{Topic: topic, Partition: partition})
		},
		Now: cfg.Shares.Now,
		Log: log,
	})
}

// StartShareGroups loads the share partitions' state and starts the
// coordinator's expiry sweeps. Before the gateway serves; a no-op without
// share groups.
func (g *Gateway) StartShareGroups(ctx context.Context) error {
	if g.Share == nil {
		return nil
	}
	return g.Share.Load(ctx)
}

// sharedState is the share coordinator's store in cluster mode: the
// cluster's shared state in etcd. Any goroutine.
type sharedState struct{ n *cluster.Node }

func (s sharedState) GetState(ctx context.Context, key string) ([]byte, int64, error) {
	return s.n.GetState(ctx, key)
}

func (s sharedState) PutState(ctx context.Context, key string, value []byte, ifRev int64) (int64, error) {
	rev, err := s.n.PutState(ctx, key, value, ifRev)
	if errors.Is(err, cluster.ErrStateConflict) {
		err = share.ErrStateConflict
	}
	return rev, err
}

func (s sharedState) ScanState(ctx context.Context, prefix string, fn func(key string, value []byte, rev int64)) error {
	return s.n.ScanState(ctx, prefix, fn)
}

// shareGroupCode is where a share group's request (heartbeat, describe,
// offsets) is served: 0 here; in cluster mode NOT_COORDINATOR and the
// other answers of cluster.Node.GroupCode when this gateway does not
// coordinate it now. Any goroutine.
func (c *Call) shareGroupCode(group string) int16 { return c.G.Cfg.Cluster.GroupCode(group) }

// shareLeader is the leader a ShareFetch or ShareAcknowledge answer names
// for a partition (CurrentLeader): this gateway with epoch 0, or in
// cluster mode its leader and epoch in the current view.
func (c *Call) shareLeader(topic string, partition int32) (id, epoch int32) {
	n := c.G.Cfg.Cluster
	if n == nil {
		return c.G.Cfg.NodeID, 0
	}
	v := n.View()
	return v.Leader(topic, partition), v.Epoch()
}

// CloseShareGroups stops the sweeps. Any goroutine; idempotent.
func (g *Gateway) CloseShareGroups() {
	if g.Share != nil {
		g.Share.Close()
	}
}

// ConnClosed tells the gateway connection id closed: the share sessions
// it last used close, and the records their members hold are available
// again at once, as on Kafka (a killed share consumer's records go to the
// others without waiting for their locks). Loop only (OnClose): it never
// blocks; the state is written on a goroutine of its own.
func (g *Gateway) ConnClosed(id uint64) {
	if g.Share != nil && id != 0 {
		g.Share.ConnClosed(id)
	}
}

// ShareStats reads the share groups' numbers (metrics.ShareCounts); zero
// without share groups. Any goroutine.
func (g *Gateway) ShareStats() share.Numbers {
	if g.Share == nil {
		return share.Numbers{}
	}
	return g.Share.Numbers()
}

// shareTopics resolves the subscribed topic names of a share-group
// heartbeat to their ids and partition counts; missing topics are left
// out (assigned once they exist). A worker.
func (c *Call) shareTopics(ctx context.Context, names []string) (map[string]share.TopicMeta, error) {
	out := make(map[string]share.TopicMeta, len(names))
	for _, n := range names {
		if !validTopicName(n) {
			continue
		}
		ti, err := c.G.Store.Topic(ctx, c.G.Cfg.Stream, n)
		if errors.Is(err, bridge.ErrTopicNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[n] = share.TopicMeta{ID: c.G.topicNames.idOf(ti), Partitions: ti.Partitions}
	}
	return out, nil
}

// shareStart is where a share partition new to its group starts, by the
// group's share.auto.offset.reset: latest (the high watermark), earliest
// (the log start) or by_duration:<ISO 8601 duration> (the first record at
// or after now minus the duration, else the high watermark). A worker.
func (c *Call) shareStart(ctx context.Context, reset string, topic string, partition int32) (int64, error) {
	g := c.G
	st, err := g.Store.Partition(ctx, g.Cfg.Stream, topic, partition)
	if err != nil {
		return 0, err
	}
	switch {
	case reset == "earliest":
		return int64(st.Earliest), nil
	case strings.HasPrefix(reset, "by_duration:"):
		d, ok := parseISODuration(strings.TrimPrefix(reset, "by_duration:"))
		if !ok {
			return int64(st.Next), nil
		}
		ts := time.Now().Add(-d).UnixMicro()
		off, found, err := g.Store.OffsetForTimestamp(ctx, g.Cfg.Stream, topic, partition, uint64(max(ts, 0)))
		if err != nil {
			return 0, err
		}
		if !found {
			return int64(st.Next), nil
		}
		return int64(off), nil
	}
	return int64(st.Next), nil
}

// parseISODuration reads the ISO 8601 durations Kafka's
// share.auto.offset.reset takes (java.time.Duration.parse: PnDTnHnMn.nS).
func parseISODuration(s string) (time.Duration, bool) {
	s = strings.ToUpper(s)
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" {
		return 0, false
	}
	var d time.Duration
	inTime := false
	num := ""
	for _, r := range rest {
		switch {
		case r >= '0' && r <= '9' || r == '.':
			num += string(r)
		case r == 'T' && !inTime && num == "":
			inTime = true
		default:
			if num == "" {
				return 0, false
			}
			var unit time.Duration
			switch {
			case r == 'D' && !inTime:
				unit = 24 * time.Hour
			case r == 'H' && inTime:
				unit = time.Hour
			case r == 'M' && inTime:
				unit = time.Minute
			case r == 'S' && inTime:
				unit = time.Second
			default:
				return 0, false
			}
			v, err := time.ParseDuration(num + "s")
			if err != nil {
				return 0, false
			}
			d += time.Duration(float64(unit) * v.Seconds())
			num = ""
		}
	}
	return d, num == ""
}
