package group

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// Options builds a Coordinator.
type Options struct {
	Config Config
	// Store holds the committed offsets and the group configs and answers
	// the topic lookups of commits and assignments.
	Store bridge.Backend
	// Stream is the Iggy stream of the Kafka topics; offsets are kept per
	// stream.
	Stream string
	// Wake signals the call parked on ticket t (see Wait). It runs on the
	// goroutine that settled the ticket (a worker or a coordinator timer)
	// with no coordinator lock held, and must not block. It reports
	// whether a call was parked on t; false makes the coordinator try
	// again shortly while the answer lies uncollected (the caller decided
	// to park but its watch is not registered yet). Nil: nothing is woken
	// and parked calls end at their deadline (tests that never park).
	Wake func(t Ticket) bool
	Log  *slog.Logger
	// TopicID derives a topic's Kafka topic id, as Metadata reports it
	// (the consumer protocol assigns partitions by topic id). Nil: a
	// stand-in derivation for tests that never compare with Metadata.
	TopicID func(bridge.TopicInfo) [16]byte
	// Clock drives the consumer protocol's session and rebalance timers.
	// Nil: the wall clock.
	Clock Clock
	// Placement says whether this gateway coordinates a group (cluster
	// mode, package cluster): 0, or the error every operation on the group
	// answers here (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
	// COORDINATOR_NOT_AVAILABLE). Called without co.mu; must not block.
	// Nil: every group is coordinated here.
	Placement func(group string) int16
	// StreamsState keeps streams groups (topology, members, epochs,
	// assignments) across restarts of this gateway (streams_state.go).
	// Nil: streams groups are soft state, as in cluster mode, where the
	// store is not shared safely between gateways.
	StreamsState bridge.TxnStateStore
}

// Coordinator is the group coordinator of this gateway. Safe for
// concurrent use; see the package comment for what runs where.
type Coordinator struct {
	cfg       Config
	store     bridge.Backend
	stream    string
	wake      func(Ticket) bool
	log       *slog.Logger
	placement func(string) int16

	mu      sync.Mutex
	closed  bool
	groups  map[string]*group
	members int // members and pending ids over all groups
	ticket  Ticket
	results map[Ticket]kmsg.Response // settled tickets not yet collected

	// The consumer protocol (consumer.go).
	clock    Clock
	topicID  func(bridge.TopicInfo) [16]byte
	timerTok uint64 // token of the latest armed consumer-protocol timer
	metaMu   sync.Mutex
	meta     *metaSnap // the latest topic list; guarded by metaMu, not mu
	// Per-group configs (group_configs.go): the store, or what a test
	// puts between the coordinator and it.
	groupCfgs bridge.GroupConfigStore
	settings  settingsCache
	// Streams groups kept in the store (streams_state.go); persistMu
	// orders their writes, taken before co.mu.
	streamsState bridge.TxnStateStore
	persistMu    sync.Mutex
}

// New returns a coordinator over o.Store that wakes parked calls through
// o.Wake.
func New(o Options) *Coordinator {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Wake == nil {
		o.Wake = func(Ticket) bool { return true }
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.TopicID == nil {
		o.TopicID = standInTopicID
	}
	return &Coordinator{
		groupCfgs:    o.Store,
		cfg:          o.Config.withDefaults(),
		store:        o.Store,
		stream:       o.Stream,
		wake:         o.Wake,
		log:          o.Log,
		groups:       make(map[string]*group),
		results:      make(map[Ticket]kmsg.Response),
		clock:        o.Clock,
		topicID:      o.TopicID,
		placement:    o.Placement,
		streamsState: o.StreamsState,
	}
}

// groupCode is what an operation on group answers before it looks at the
// group: INVALID_GROUP_ID for a name this gateway refuses, the placement's
// code when another gateway coordinates it, else 0. Any goroutine; co.mu
// need not be held.
func (co *Coordinator) groupCode(group string) int16 {
	if !validGroupID(group) {
		return kerr.InvalidGroupID.Code
	}
	return co.placed(group)
}

// placed is the error an operation on group answers because another
// gateway coordinates it (Options.Placement), or 0. Any goroutine; co.mu
// need not be held.
func (co *Coordinator) placed(group string) int16 {
	if co.placement == nil {
		return 0
	}
	return co.placement(group)
}

// standInTopicID is the topic id of Options without TopicID: stable per
// stream, name and store id, like the gateway's, but not the same bytes.
func standInTopicID(t bridge.TopicInfo) [16]byte {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", t.Stream, t.Name, t.ID)))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

// A Ticket names one parked JoinGroup or SyncGroup; 0 is none.
type Ticket uint64

// Wait is a JoinGroup or SyncGroup that cannot be answered yet. The
// caller parks its call until Wake(Ticket) or Until, whichever comes
// first, then calls Collect.
type Wait struct {
	Ticket Ticket
	Until  time.Time
	// What Collect answers when the wait is given up.
	sync     bool
	ver      int16
	memberID string
}

// newTicket registers a wait; co.mu is held.
func (co *Coordinator) newTicket() Ticket {
	co.ticket++
	return co.ticket
}

// settle stores resp for ticket t and wakes its call; co.mu is held. The
// wake is sent after a short delay again while the result lies
// uncollected, which covers a call that decided to park but whose watch
// the loop had not yet registered when the first signal went out.
func (co *Coordinator) settle(t Ticket, resp kmsg.Response, wake *[]Ticket) {
	if t == 0 {
		return
	}
	co.results[t] = resp
	*wake = append(*wake, t)
}

// locked runs fn with co.mu held, then wakes the calls fn settled once the
// lock is released (the Wake hook never runs under co.mu). co.mu must NOT
// be held.
func (co *Coordinator) locked(fn func(wake *[]Ticket)) {
	var wake []Ticket
	co.mu.Lock()
	fn(&wake)
	co.mu.Unlock()
	co.wakeAll(wake)
}

// lockedCall is locked for a step of a call that answers now or waits on
// a ticket (JoinGroup, SyncGroup): fn's response, ticket and deadline.
func lockedCall[A any](co *Coordinator, a A, fn func(A, *[]Ticket) (kmsg.Response, Ticket, time.Time)) (kmsg.Response, Ticket, time.Time) {
	var resp kmsg.Response
	var t Ticket
	var until time.Time
	co.locked(func(wake *[]Ticket) { resp, t, until = fn(a, wake) })
	return resp, t, until
}

// wakeAll signals the tickets; co.mu must NOT be held.
func (co *Coordinator) wakeAll(ts []Ticket) {
	for _, t := range ts {
		co.wakeTicket(t, 0)
	}
}

// wakeTicket runs the Wake hook for t, and again after 1, 4, 16 ... ms
// while the result lies uncollected and no call was parked on t yet. Any
// goroutine; co.mu must NOT be held.
func (co *Coordinator) wakeTicket(t Ticket, attempt int) {
	if co.wake(t) {
		return
	}
	if attempt >= 8 {
		return // the park deadline answers it
	}
	time.AfterFunc(time.Millisecond<<(2*attempt), func() {
		co.mu.Lock()
		_, pending := co.results[t]
		pending = pending && !co.closed
		co.mu.Unlock()
		if pending {
			co.wakeTicket(t, attempt+1)
		}
	})
}

func newMemberID(prefix string) string {
	if len(prefix) > 128 {
		prefix = prefix[:128]
	}
	return prefix + "-" + rand.Text()
}

// validGroupID: Kafka allows any non-empty id; ours must fit an Iggy name.
func validGroupID(g string) bool { return g != "" && len(g) <= MaxGroupIDLen }
