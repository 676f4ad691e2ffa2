package handlers

// The wiring between the group keys and the coordinator (package group,
// docs/CONSUMER_GROUPS.md): how a JoinGroup or SyncGroup that has to wait
// parks its call, and how the coordinator wakes it. The handlers of keys 8,
// 9, 11-16, 42 and 47 decode, call one Coordinator method and return what
// it answers.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"log/slog"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/group"
	"github.com/iggy-kafka/gateway/share"
)

// newCoordinator builds the coordinator of a gateway: over its store and
// stream, waking parked calls through w. An id a share group holds (shares,
// nil without share groups) is GROUP_ID_NOT_FOUND to every classic and
// consumer group operation, as Kafka answers a group of another type.
func newCoordinator(cfg Config, store bridge.Backend, w *Watchers, log *slog.Logger, shares *share.Coordinator) *group.Coordinator {
	o := group.Options{Config: cfg.Groups, Store: store, Stream: cfg.Stream, Wake: w.wakeTicket, Log: log, TopicID: topicID}
	if cfg.Cluster == nil {
		// Streams groups survive a restart; in cluster mode the state
		// store is not shared safely, so they are soft state there.
		o.StreamsState = store
	}
	if cfg.Cluster != nil {
		o.Placement = cfg.Cluster.GroupCode
	}
	if shares != nil {
		placed := o.Placement
		o.Placement = func(id string) int16 {
			if placed != nil {
				if code := placed(id); code != 0 {
					return code
				}
			}
			if shares.Exists(id) {
				return kerr.GroupIDNotFound.Code
			}
			return 0
		}
	}
	return group.New(o)
}

// groupWait is what a parked JoinGroup or SyncGroup re-runs with.
type groupWait struct {
	wait group.Wait
	key  PartitionKey
}

// waitKey is the watch key of one ticket: a name no Kafka topic can have.
func waitKey(t group.Ticket) PartitionKey {
	return PartitionKey{Topic: "\x00group-wait:" + strconv.FormatUint(uint64(t), 10)}
}

// wakeTicket is the coordinator's Wake hook: it runs the callbacks parked
// on t's key without counting a generation for it (ticket keys are used
// once), and reports whether there were any. Any goroutine; must not block.
func (w *Watchers) wakeTicket(t group.Ticket) bool {
	k := waitKey(t)
	w.mu.Lock()
	m, watched := w.byPK[k]
	delete(w.byPK, k)
	w.mu.Unlock()
	for _, fn := range m {
		fn()
	}
	return watched
}

// answerOrPark returns resp, or parks c on w and returns nil. A worker.
func (c *Call) answerOrPark(resp kmsg.Response, w group.Wait) kmsg.Response {
	if w.Ticket == 0 {
		return resp
	}
	c.gwait = &groupWait{wait: w, key: waitKey(w.Ticket)}
	c.Park([]PartitionKey{c.gwait.key}, w.Until)
	return nil
}

// resumeGroupWait is the re-run of a parked JoinGroup or SyncGroup: the
// coordinator's answer, or nil after parking again until the first
// deadline. A worker.
func (c *Call) resumeGroupWait(gs *group.Coordinator) kmsg.Response {
	resp, ok := gs.Collect(c.gwait.wait, c.Final)
	if !ok {
		c.Park([]PartitionKey{c.gwait.key}, c.first)
		return nil
	}
	c.gwait = nil
	return resp
}

// unwired holds the coordinators of gateways built by hand without
// NewGateway (older test helpers), so the group keys still work there.
var unwired sync.Map // *Gateway -> *group.Coordinator

// coordinator returns g.Groups, or a coordinator made once for a gateway
// whose Groups field was never set.
func (g *Gateway) coordinator() *group.Coordinator {
	if g.Groups != nil {
		return g.Groups
	}
	if v, ok := unwired.Load(g); ok {
		return v.(*group.Coordinator)
	}
	v, _ := unwired.LoadOrStore(g, newCoordinator(g.Cfg, g.Store, g.Watch, g.Log, g.Share))
	return v.(*group.Coordinator)
}
