package group

// Streams groups survive a restart of the gateway, as on Kafka, where the
// group coordinator keeps them in __consumer_offsets: the topology, the
// members with their epochs and tasks, and the target assignment are kept
// in the store (Options.StreamsState, key "streams/<group>") after every
// heartbeat, leave or expiry that changed them, and read back when the
// gateway starts. A running app then goes on through a restart: its members'
// heartbeats and offset commits carry epochs the coordinator still knows,
// so nothing is fenced and no task is closed dirty (which, at least once,
// would process records a second time). Without the store (cluster mode)
// streams groups are soft state.
//
// The value is JSON: written at most once per change of a group, read once
// per start.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// persistTimeout bounds a write of a group's state made outside a request
// (a member's session or rebalance timeout).
const persistTimeout = 10 * time.Second

type snapTopic struct {
	Name       string      `json:"n"`
	Partitions int32       `json:"p,omitempty"`
	Repl       int16       `json:"r,omitempty"`
	Configs    [][2]string `json:"c,omitempty"`
}

type snapSub struct {
	ID          string      `json:"id"`
	Sources     []string    `json:"src,omitempty"`
	Sink        []string    `json:"sink,omitempty"`
	Changelogs  []snapTopic `json:"cl,omitempty"`
	Repartition []snapTopic `json:"rp,omitempty"`
	Copartition [][]string  `json:"co,omitempty"`
}

type snapTask struct {
	Sub  string `json:"s"`
	Part int32  `json:"p"`
}

type snapMember struct {
	ID          string     `json:"id"`
	Instance    string     `json:"inst,omitempty"`
	Rack        string     `json:"rack,omitempty"`
	ClientID    string     `json:"cid,omitempty"`
	ClientHost  string     `json:"host,omitempty"`
	Process     string     `json:"proc,omitempty"`
	Epoch       int32      `json:"e"`
	PrevEpoch   int32      `json:"pe"`
	TopoEpoch   int32      `json:"te"`
	State       uint8      `json:"st,omitempty"`
	RebalanceMs int64      `json:"rb"`
	JoinedAt    uint64     `json:"j"`
	EPHost      *string    `json:"eph,omitempty"`
	EPPort      uint16     `json:"epp,omitempty"`
	Active      []snapTask `json:"a,omitempty"`
	Standby     []snapTask `json:"sb,omitempty"`
	Revoking    []snapTask `json:"rv,omitempty"`
}

type snapTarget struct {
	Active  []snapTask `json:"a,omitempty"`
	Standby []snapTask `json:"sb,omitempty"`
}

type streamsSnap struct {
	Epoch         int32                 `json:"e"`
	AssignEpoch   int32                 `json:"ae"`
	EndpointEpoch int32                 `json:"ee"`
	Seq           uint64                `json:"seq"`
	ConfHash      uint64                `json:"ch"`
	ShutdownBy    string                `json:"sd,omitempty"`
	Standbys      int                   `json:"sb,omitempty"` // the group config the target was computed with
	TopoEpoch     int32                 `json:"te"`
	Subs          []snapSub             `json:"subs,omitempty"`
	HasTopo       bool                  `json:"ht"`
	Members       []snapMember          `json:"m,omitempty"`
	Target        map[string]snapTarget `json:"t,omitempty"`
}

func snapTasks(s taskSet) []snapTask {
	out := make([]snapTask, 0, len(s))
	for _, t := range s.sortedBy(cmpTask) {
		out = append(out, snapTask{t.sub, t.part})
	}
	return out
}

func fromSnapTasks(in []snapTask) taskSet {
	s := taskSet{}
	for _, t := range in {
		s[taskID{t.Sub, t.Part}] = struct{}{}
	}
	return s
}

func snapTopics(ts []streamsTopic) []snapTopic {
	out := make([]snapTopic, 0, len(ts))
	for _, t := range ts {
		out = append(out, snapTopic{t.name, t.partitions, t.repl, t.configs})
	}
	return out
}

func fromSnapTopics(in []snapTopic) []streamsTopic {
	out := make([]streamsTopic, 0, len(in))
	for _, t := range in {
		out = append(out, streamsTopic{name: t.Name, partitions: t.Partitions, repl: t.Repl, configs: t.Configs})
	}
	return out
}

// snapshot is sg's kept state, the same bytes for the same state (members,
// tasks and map keys in order). co.mu is held.
func (sg *sgroup) snapshot() []byte {
	s := streamsSnap{Epoch: sg.epoch, AssignEpoch: sg.assignEpoch, EndpointEpoch: sg.endpointEpoch, Seq: sg.seq,
		ConfHash: sg.confHash, ShutdownBy: sg.shutdownBy, Standbys: sg.settings.standbys, Target: map[string]snapTarget{}}
	if t := sg.topo; t != nil {
		s.HasTopo, s.TopoEpoch = true, t.epoch
		for i := range t.subs {
			sub := &t.subs[i]
			s.Subs = append(s.Subs, snapSub{ID: sub.id, Sources: sub.sources, Sink: sub.repartitionSink,
				Changelogs: snapTopics(sub.changelogs), Repartition: snapTopics(sub.repartitionSrc), Copartition: sub.copartition})
		}
	}
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		sm := snapMember{ID: m.id, Instance: m.instance, Rack: m.rack, ClientID: m.clientID, ClientHost: m.clientHost,
			Process: m.process, Epoch: m.epoch, PrevEpoch: m.prevEpoch, TopoEpoch: m.topoEpoch, State: uint8(m.state),
			RebalanceMs: m.rebalance.Milliseconds(), JoinedAt: m.joinedAt,
			Active: snapTasks(m.active), Standby: snapTasks(m.standby), Revoking: snapTasks(m.revoking)}
		if m.endpoint != nil {
			sm.EPHost, sm.EPPort = &m.endpoint.Host, m.endpoint.Port
		}
		s.Members = append(s.Members, sm)
	}
	for id, t := range sg.target {
		s.Target[id] = snapTarget{snapTasks(t.active), snapTasks(t.standby)}
	}
	b, _ := json.Marshal(&s) // plain data: cannot fail
	return b
}

// restoreSGroup rebuilds a streams group from its snapshot.
func restoreSGroup(b []byte) (*sgroup, error) {
	var s streamsSnap
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	sg := newSGroup()
	sg.epoch, sg.assignEpoch, sg.endpointEpoch, sg.seq = s.Epoch, s.AssignEpoch, s.EndpointEpoch, s.Seq
	sg.confHash, sg.shutdownBy, sg.settings.standbys = s.ConfHash, s.ShutdownBy, s.Standbys
	if s.HasTopo {
		t := &streamsTopology{epoch: s.TopoEpoch}
		for _, sub := range s.Subs {
			t.subs = append(t.subs, subtopology{id: sub.ID, sources: sub.Sources, repartitionSink: sub.Sink,
				changelogs: fromSnapTopics(sub.Changelogs), repartitionSrc: fromSnapTopics(sub.Repartition), copartition: sub.Copartition})
		}
		sg.topo = t
	}
	for _, sm := range s.Members {
		if sm.ID == "" || sm.State > uint8(mUnreleased) {
			return nil, fmt.Errorf("a member with id %q, state %d", sm.ID, sm.State)
		}
		m := &smember{memberCore: memberCore{id: sm.ID, instance: sm.Instance, rack: sm.Rack, clientID: sm.ClientID,
			clientHost: sm.ClientHost, epoch: sm.Epoch, prevEpoch: sm.PrevEpoch, state: memberState(sm.State),
			rebalance: time.Duration(sm.RebalanceMs) * time.Millisecond, joinedAt: sm.JoinedAt},
			process: sm.Process, topoEpoch: sm.TopoEpoch, standby: fromSnapTasks(sm.Standby)}
		if sm.EPHost != nil {
			m.endpoint = &kmsg.Endpoint{Host: *sm.EPHost, Port: sm.EPPort}
		}
		sg.members[m.id] = m
		sg.setOwned(m, fromSnapTasks(sm.Active), fromSnapTasks(sm.Revoking))
		if m.instance != "" {
			sg.static[m.instance] = m.id
		}
	}
	for id, t := range s.Target {
		sg.target[id] = tasksAssigned{active: fromSnapTasks(t.Active), standby: fromSnapTasks(t.Standby)}
	}
	return sg, nil
}

// keptMark is what the kept state holds of a group and one member, cheap
// to take on every heartbeat: comparing the marks before and after one
// says whether the group must be written again (a heartbeat changes no
// other member, and the other members' part of the target changes only
// with the assignment epoch).
type keptMark struct {
	epoch, assignEpoch, endpointEpoch int32
	seq, confHash                     uint64
	shutdownBy                        string
	standbys, members                 int
	topo                              *streamsTopology
	member                            memberMark
	active, standby, revoking         taskSet
}

// memberMark is a member's kept fields but its task sets.
type memberMark struct {
	id, instance, rack, clientID, clientHost, process string
	epoch, prevEpoch, topoEpoch                       int32
	state                                             memberState
	rebalance                                         time.Duration
	joinedAt                                          uint64
	endpoint                                          *kmsg.Endpoint // replaced, never changed in place
}

// mark is sg's mark with member m (nil: none). co.mu is held.
func (sg *sgroup) mark(m *smember) keptMark {
	k := keptMark{epoch: sg.epoch, assignEpoch: sg.assignEpoch, endpointEpoch: sg.endpointEpoch, seq: sg.seq,
		confHash: sg.confHash, shutdownBy: sg.shutdownBy, standbys: sg.settings.standbys, members: len(sg.members), topo: sg.topo}
	if m != nil {
		k.member = memberMark{m.id, m.instance, m.rack, m.clientID, m.clientHost, m.process,
			m.epoch, m.prevEpoch, m.topoEpoch, m.state, m.rebalance, m.joinedAt, m.endpoint}
		k.active, k.standby, k.revoking = m.active, m.standby, m.revoking
	}
	return k
}

func (k keptMark) same(o keptMark) bool {
	return k.epoch == o.epoch && k.assignEpoch == o.assignEpoch && k.endpointEpoch == o.endpointEpoch &&
		k.seq == o.seq && k.confHash == o.confHash && k.shutdownBy == o.shutdownBy && k.standbys == o.standbys &&
		k.members == o.members && k.topo == o.topo && k.member == o.member &&
		k.active.equal(o.active) && k.standby.equal(o.standby) && k.revoking.equal(o.revoking)
}

// persistStreams writes group's state to the store if it changed since the
// last write (or deletes it when the group is gone or no longer a streams
// group). Writes are ordered by persistMu, so the last one is the latest
// state. A worker, or a goroutine of its own: it calls the store; co.mu must
// NOT be held.
func (co *Coordinator) persistStreams(ctx context.Context, group string) error {
	if co.streamsState == nil {
		return nil
	}
	co.persistMu.Lock()
	defer co.persistMu.Unlock()
	co.mu.Lock()
	g := co.groups[group]
	var snap []byte
	if g != nil && g.streams != nil {
		snap = g.streams.snapshot()
		if bytes.Equal(snap, g.streams.persisted) {
			co.mu.Unlock()
			return nil
		}
	}
	co.mu.Unlock()
	if err := co.streamsState.PutTxnStates(ctx, []bridge.TxnStateEntry{{Key: bridge.StreamsStateKeyPrefix + group, Value: snap}}); err != nil {
		co.log.Warn("streams group: keeping its state failed; a restart would make its members rejoin", "group", group, "err", err)
		return err
	}
	if snap != nil {
		co.mu.Lock()
		if g2 := co.groups[group]; g2 == g && g.streams != nil {
			g.streams.persisted = snap
		}
		co.mu.Unlock()
	}
	return nil
}

// persistStreamsLater is persistStreams from a timer callback (co.mu is
// held there): on a goroutine of its own, bounded by persistTimeout.
func (co *Coordinator) persistStreamsLater(group string) {
	if co.streamsState == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
		defer cancel()
		_ = co.persistStreams(ctx, group) // logged there
	}()
}

// LoadStreams reads the streams groups kept by an earlier run, before the
// gateway serves: their members go on where they were, their sessions
// starting now. A no-op without Options.StreamsState.
func (co *Coordinator) LoadStreams(ctx context.Context) error {
	if co.streamsState == nil {
		return nil
	}
	type kept struct {
		name string
		sg   *sgroup
		raw  []byte
	}
	var groups []kept
	bad := 0
	err := co.streamsState.TxnStates(ctx, func(key string, v []byte) {
		if len(key) <= len(bridge.StreamsStateKeyPrefix) || key[:len(bridge.StreamsStateKeyPrefix)] != bridge.StreamsStateKeyPrefix {
			return // another owner's key
		}
		sg, err := restoreSGroup(v)
		if err != nil {
			bad++
			return
		}
		groups = append(groups, kept{key[len(bridge.StreamsStateKeyPrefix):], sg, bytes.Clone(v)})
	})
	if err != nil {
		return fmt.Errorf("group: loading the streams groups: %w", err)
	}
	if bad > 0 {
		co.log.Warn("streams groups: skipped unreadable kept state", "count", bad)
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	for _, k := range groups {
		if co.groups[k.name] != nil || !validGroupID(k.name) {
			continue
		}
		g := &group{name: k.name, protocolType: "streams", members: map[string]*member{}, static: map[string]string{},
			pending: map[string]*time.Timer{}, streams: k.sg}
		co.groups[k.name] = g
		k.sg.persisted = k.raw
		for _, m := range k.sg.members {
			co.members++
			co.armStreamsSession(g, m)
			if m.state == mUnrevoked {
				co.armStreamsRevokeTimer(g, m)
			}
		}
	}
	if len(groups) > 0 {
		co.log.Info("streams groups loaded", "groups", len(groups))
	}
	return nil
}
