package group

// What consumer-protocol (KIP-848, consumer.go) and streams-group (KIP-1071,
// streams.go) members have alike: identity, member epochs, reconciliation
// state, session and rebalance timers, and the rules that find a member
// from a heartbeat (static membership) and move it towards its target.
// Every function here runs with co.mu held, but for the timer callbacks,
// which take it.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memberCore is embedded in cmember and smember.
type memberCore struct {
	id, instance, rack, clientID, clientHost string
	epoch, prevEpoch                         int32
	state                                    memberState
	rebalance                                time.Duration
	joinedAt                                 uint64

	session  Timer
	sessTok  uint64 // the armed session timer's token; a stale fire does nothing
	revoke   Timer
	revokTok uint64
}

func (m *memberCore) core() *memberCore { return m }

// coreMember is a *cmember or an *smember.
type coreMember interface{ core() *memberCore }

func (m *memberCore) stopRevoke() {
	if m.revoke != nil {
		m.revoke.Stop()
		m.revoke = nil
	}
	m.revokTok = 0
}

func (m *memberCore) stopTimers() {
	m.stopRevoke()
	if m.session != nil {
		m.session.Stop()
		m.session = nil
	}
	m.sessTok = 0
}

// reset makes m a member at epoch 0 that is not revoking (it rejoined).
func (m *memberCore) reset() {
	m.epoch, m.prevEpoch, m.state = 0, 0, mStable
	m.stopRevoke()
}

// leaveForNow marks a static member gone for now (epoch -2): what it
// holds waits for it until its session ends.
func (m *memberCore) leaveForNow() {
	m.prevEpoch, m.epoch, m.state = m.epoch, epochStaticLeave, mStable
	m.stopRevoke()
}

// settle moves m to the assignment epoch once it holds its target but for
// what others still hold (unreleased). co.mu is held.
func (m *memberCore) settle(assignEpoch int32, unreleased bool) {
	if m.epoch != assignEpoch {
		m.prevEpoch, m.epoch = m.epoch, assignEpoch
	}
	m.state = mStable
	if unreleased {
		m.state = mUnreleased
	}
	m.stopRevoke()
}

// armTimer (re)arms the timer in slot, with its token in tok, to call fire
// with co.mu held after d; fire gets the token and checks, by looking the
// member up again, that the timer is still the member's current one.
// co.mu is held.
func (co *Coordinator) armTimer(slot *Timer, tok *uint64, d time.Duration, fire func(tok uint64, wake *[]Ticket)) {
	if *slot != nil {
		(*slot).Stop()
		*slot = nil
	}
	*tok = 0
	if co.closed {
		return
	}
	co.timerTok++
	t := co.timerTok
	*tok = t
	*slot = co.clock.AfterFunc(d, func() {
		var wake []Ticket
		co.mu.Lock()
		fire(t, &wake)
		co.mu.Unlock()
		co.wakeAll(wake)
	})
}

// memberLookup is what a heartbeat with epoch >= 0 finds for its member.
type memberLookup uint8

const (
	lookupNew     memberLookup = iota // no such member: a new one joins
	lookupCheck                       // the member at an epoch > 0: fence-check it
	lookupRejoin                      // the member rejoins at epoch 0: it holds nothing
	lookupReplace                     // a static member's new member id takes the old place
)

// lookupMember applies KIP-848's rules (the same for streams groups) to a
// heartbeat naming memberID and instance (static membership) at epoch >= 0
// in a group with members and static (instance id -> member id).
func lookupMember[M coreMember](members map[string]M, static map[string]string, group, memberID, instance string, epoch int32) (M, memberLookup, int16, string) {
	var none M
	if instance != "" {
		cur, ok := members[static[instance]]
		if epoch != 0 {
			switch {
			case !ok:
				return none, 0, kerr.UnknownMemberID.Code, "Instance id " + instance + " is unknown."
			case cur.core().id != memberID:
				return none, 0, kerr.FencedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", memberID, instance, cur.core().id)
			}
			return cur, lookupCheck, 0, ""
		}
		if !ok {
			return none, lookupNew, 0, ""
		}
		c := cur.core()
		switch {
		case c.epoch != epochStaticLeave && c.id != memberID:
			return none, 0, kerr.UnreleasedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", memberID, instance, c.id)
		case c.id == memberID && c.epoch != epochStaticLeave:
			return cur, lookupRejoin, 0, ""
		}
		// The returning static member takes the place of its previous
		// incarnation with what it held: no rebalance (KIP-848).
		return cur, lookupReplace, 0, ""
	}
	m, ok := members[memberID]
	switch {
	case !ok && epoch != 0:
		return none, 0, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, group)
	case !ok:
		return none, lookupNew, 0, ""
	case epoch == 0:
		// A rejoin (after a fence or a fatal error): the member holds
		// nothing any more.
		return m, lookupRejoin, 0, ""
	}
	return m, lookupCheck, 0, ""
}

// leavingMember finds the member a leave (epoch -1 or -2) names.
func leavingMember[M coreMember](members map[string]M, static map[string]string, group, memberID, instance string) (M, int16, string) {
	var none M
	if instance == "" {
		m, ok := members[memberID]
		if !ok {
			return none, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, group)
		}
		return m, 0, ""
	}
	m, ok := members[static[instance]]
	switch {
	case !ok:
		return none, kerr.UnknownMemberID.Code, "Instance id " + instance + " is unknown."
	case m.core().id != memberID:
		return none, kerr.FencedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", memberID, instance, m.core().id)
	}
	return m, 0, ""
}

// reconcileStep is one step of KIP-848's reconciliation of a member that
// holds assigned towards target: keep is what it goes on holding, revoke
// what it must give up first (it stays at its epoch until its heartbeat no
// longer lists it: ownsAny), and, once nothing is left to revoke, keep
// grows by what of target nobody else holds (heldElsewhere); unreleased
// says some of target is still held elsewhere.
func reconcileStep[K comparable](assigned, target, owned set[K], known bool, heldElsewhere func(K) bool) (keep, revoke set[K], revoking, unreleased bool) {
	keep, revoke = set[K]{}, set[K]{}
	for k := range assigned {
		if target.has(k) {
			keep[k] = struct{}{}
		} else {
			revoke[k] = struct{}{}
		}
	}
	if len(revoke) > 0 && ownsAny(owned, known, revoke) {
		return keep, revoke, true, false
	}
	for k := range target {
		if keep.has(k) {
			continue
		}
		if heldElsewhere(k) {
			unreleased = true
			continue
		}
		keep[k] = struct{}{}
	}
	return keep, nil, false, unreleased
}

// ownsAny: the heartbeat still lists one of s (unknown counts as yes).
func ownsAny[K comparable](owned set[K], known bool, s set[K]) bool {
	if !known {
		return true
	}
	for k := range owned {
		if s.has(k) {
			return true
		}
	}
	return false
}
