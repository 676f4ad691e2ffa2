package group

import (
	"crypto/rand"
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
	// Store holds the committed offsets (when it implements
	// bridge.GroupOffsets; without it every offset operation answers
	// COORDINATOR_NOT_AVAILABLE) and answers OffsetDelete's topic lookups.
	Store bridge.Store
	// Stream is the Iggy stream of the Kafka topics; offsets are kept per
	// stream.
	Stream string
	// Wake signals the call parked on ticket t (see Wait). It runs on the
	// goroutine that settled the ticket (a worker or a coordinator timer)
	// with no coordinator lock held, and must not block. It reports
	// whether a call was parked on t; false makes the coordinator try
	// again shortly while the answer lies uncollected (the caller decided
	// to park but its watch is not registered yet). Required.
	Wake func(t Ticket) bool
	Log  *slog.Logger
}

// Coordinator is the group coordinator of this gateway. Safe for
// concurrent use; see the package comment for what runs where.
type Coordinator struct {
	cfg     Config
	store   bridge.Store
	offsets bridge.GroupOffsets // nil: the store keeps no offsets
	stream  string
	wake    func(Ticket) bool
	log     *slog.Logger

	mu      sync.Mutex
	closed  bool
	groups  map[string]*group
	members int // members and pending ids over all groups
	ticket  Ticket
	results map[Ticket]kmsg.Response // settled tickets not yet collected
}

// New returns a coordinator over o.Store that wakes parked calls through
// o.Wake.
func New(o Options) *Coordinator {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	offs, _ := o.Store.(bridge.GroupOffsets)
	return &Coordinator{
		cfg:     o.Config.withDefaults(),
		store:   o.Store,
		offsets: offs,
		stream:  o.Stream,
		wake:    o.Wake,
		log:     o.Log,
		groups:  make(map[string]*group),
		results: make(map[Ticket]kmsg.Response),
	}
}

// Close stops every timer of the coordinator (sessions, rebalance and sync
// deadlines, pending member ids), so none fires after the gateway stopped
// serving. Call it after the loop drained: calls still parked are answered
// by their Final run. Operations after Close still answer from memory but
// arm no timers. Any goroutine; idempotent.
func (co *Coordinator) Close() {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.closed = true
	for _, g := range co.groups {
		g.stopTimer()
		for _, m := range g.members {
			if m.timer != nil {
				m.timer.Stop()
				m.timer = nil
			}
		}
		for _, t := range g.pending {
			t.Stop()
		}
	}
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
		co.mu.Unlock()
		if pending {
			co.wakeTicket(t, attempt+1)
		}
	})
}

// Collect returns the answer of a parked call's wait once the coordinator
// settled it (ok=true), or nil and false while it is still open: the caller
// parks again. With final set (the wait's deadline passed, or the gateway
// drains) it never returns false: an unsettled wait is given up and
// answered REBALANCE_IN_PROGRESS, so the client rejoins. A worker; takes
// co.mu.
func (co *Coordinator) Collect(w Wait, final bool) (resp kmsg.Response, ok bool) {
	co.mu.Lock()
	resp, ok = co.results[w.Ticket]
	if ok {
		delete(co.results, w.Ticket)
	} else if final {
		co.abandon(w.Ticket)
	}
	co.mu.Unlock()
	if ok || !final {
		return resp, ok
	}
	if w.sync {
		return syncError(w.ver, kerr.RebalanceInProgress.Code), true
	}
	return joinError(w.ver, kerr.RebalanceInProgress.Code, w.memberID), true
}

// abandon forgets a ticket whose call stopped waiting; co.mu is held.
func (co *Coordinator) abandon(t Ticket) {
	for _, g := range co.groups {
		for _, m := range g.members {
			if m.joinTicket == t {
				m.joinTicket = 0
			}
			if m.syncTicket == t {
				m.syncTicket = 0
			}
		}
	}
}

func newMemberID(prefix string) string {
	if len(prefix) > 128 {
		prefix = prefix[:128]
	}
	return prefix + "-" + rand.Text()
}

// validGroupID: Kafka allows any non-empty id; ours must fit an Iggy name.
func validGroupID(g string) bool { return g != "" && len(g) <= MaxGroupIDLen }
