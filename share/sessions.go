package share

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// sessionKey names a share session: one per group member (KIP-932).
type sessionKey struct {
	group, member string
}

// session is a share session: the partitions a member fetches and the
// epoch its next request must carry.
type session struct {
	epoch int32
	parts []SessionPart
	conn  uint64 // the connection of its latest request (0: none)
}

// SessionPart is a partition of a share session.
type SessionPart struct {
	TP
	TopicID [16]byte
}

// Ack is one acknowledgement batch of a partition.
type Ack struct {
	TP
	First, Last int64
	Types       []int8
}

// SessionRequest is the session part of a ShareFetch or ShareAcknowledge.
type SessionRequest struct {
	Group, Member string
	Epoch         int32
	// Fetch: a ShareFetch (a ShareAcknowledge cannot open a session).
	Fetch bool
	// Add are the partitions a ShareFetch names (added to the session);
	// Forget the ones it drops.
	Add    []SessionPart
	Forget []TP
	Acks   []Ack
	// RenewOK: renew acknowledgements are allowed (v2 IsRenewAck).
	RenewOK bool
	// Conn is the request's connection (0: none): the session ends when
	// the connection of its latest request closes (ConnClosed).
	Conn uint64
}

// SessionResult is what Session did: a top-level code, the session's
// partitions to fetch (none when it closed), and each acknowledged
// partition's code.
type SessionResult struct {
	Code  int16
	Msg   string
	Parts []SessionPart
	Acks  map[TP]int16
}

// Session resolves the share session of a ShareFetch or ShareAcknowledge
// and applies its acknowledgements, made durable before it returns:
// epoch 0 opens (or replaces) the member's session, -1 closes it (and
// releases what the member still holds), any other epoch must be the
// session's next.
func (co *Coordinator) Session(ctx context.Context, r SessionRequest) SessionResult {
	var res SessionResult
	switch {
	case r.Member == "" || len(r.Member) > 36:
		res.Code = kerr.InvalidRequest.Code
		return res
	case r.Epoch == 0 && !r.Fetch:
		res.Code = kerr.InvalidShareSessionEpoch.Code
		return res
	case r.Epoch == 0 && len(r.Acks) > 0:
		res.Code = kerr.InvalidRequest.Code
		return res
	case r.Epoch < -1:
		res.Code = kerr.InvalidShareSessionEpoch.Code
		return res
	}
	set := co.Settings(ctx, r.Group)
	key := sessionKey{r.Group, r.Member}
	now := co.now()
	var woke []hit
	co.mu.Lock()
	if co.closed {
		co.mu.Unlock()
		res.Code = kerr.CoordinatorNotAvailable.Code
		return res
	}
	s := co.sessions[key]
	switch {
	case r.Epoch == 0:
		if s == nil && len(co.sessions) >= co.o.Config.MaxSessions {
			co.mu.Unlock()
			res.Code = kerr.ShareSessionLimitReached.Code
			return res
		}
		if s == nil && co.groups[r.Group] == nil && len(co.groups) >= co.o.Config.MaxGroups {
			co.mu.Unlock()
			res.Code = kerr.ShareSessionLimitReached.Code
			return res
		}
		co.group(r.Group)
		if s != nil {
			co.dropSession(key, s)
		}
		s = &session{}
		co.sessions[key] = s
	case s == nil:
		co.mu.Unlock()
		res.Code = kerr.ShareSessionNotFound.Code
		return res
	case r.Epoch > 0 && r.Epoch != s.epoch:
		co.mu.Unlock()
		res.Code = kerr.InvalidShareSessionEpoch.Code
		return res
	}
	g := co.groups[r.Group]
	touched := map[TP]bool{}
	for _, a := range r.Acks {
		code := res.Acks[a.TP]
		if code != 0 {
			continue // the partition's acknowledgements already failed
		}
		p := g.parts[a.TP]
		switch {
		case co.o.Leads != nil && !co.o.Leads(a.TP):
			code = kerr.NotLeaderForPartition.Code
		case p == nil:
			code = kerr.InvalidRecordState.Code
		default:
			code = p.Acknowledge(r.Member, a.First, a.Last, a.Types, r.RenewOK, set.limits(), now)
		}
		if res.Acks == nil {
			res.Acks = map[TP]int16{}
		}
		res.Acks[a.TP] = code
		if code == 0 {
			touched[a.TP] = true
		}
	}
	if r.Epoch == -1 {
		co.dropSession(key, s)
		woke = g.release(r.Member, set.DeliveryLimit, woke)
	} else {
		s.epoch++
		if s.epoch < 0 {
			s.epoch = 1
		}
		co.bindConn(key, s, r.Conn)
		if r.Epoch == 0 && co.shared() {
			g.verifyParts(r.Add)
		}
		// Additions first, then removals, as Kafka's share session
		// update: a partition a request names for its acknowledgements
		// and forgets leaves the session.
		s.add(r.Add)
		s.forget(r.Forget)
		res.Parts = append([]SessionPart(nil), s.parts...)
	}
	co.mu.Unlock()

	for tp := range touched {
		if err := co.persist(ctx, r.Group, tp); err != nil {
			res.Acks[tp] = storeCode(err)
		}
		if co.o.Available != nil {
			co.o.Available(tp.Topic, tp.Partition) // a release may have made records available
		}
	}
	co.afterRelease(ctx, woke)
	return res
}

// add puts parts in the session, each once, in order.
func (s *session) add(parts []SessionPart) {
	for _, p := range parts {
		found := false
		for i := range s.parts {
			if s.parts[i].TP == p.TP {
				s.parts[i].TopicID = p.TopicID
				found = true
				break
			}
		}
		if !found {
			s.parts = append(s.parts, p)
		}
	}
}

// forget drops tps from the session.
func (s *session) forget(tps []TP) {
	if len(tps) == 0 {
		return
	}
	out := s.parts[:0]
	for _, p := range s.parts {
		keep := true
		for _, f := range tps {
			if p.TP == f {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	s.parts = out
}

// limits are the acquisition limits of s.
func (s Settings) limits() AcquireLimits {
	return AcquireLimits{MaxInFlight: s.MaxInFlight, LockMs: s.LockMs, DeliveryLimit: s.DeliveryLimit}
}

// Sessions is the number of open share sessions.
func (co *Coordinator) Sessions() int {
	co.mu.Lock()
	defer co.mu.Unlock()
	return len(co.sessions)
}

// FetchFrom returns where a fetch of tp for group reads from, initialising
// the share partition when the group has none for it (or one of an
// earlier topic of the same name) at the offset start returns. Without
// co.mu; start may call the store.
func (co *Coordinator) FetchFrom(ctx context.Context, group string, tp TP, topicID [16]byte, start func(ctx context.Context) (int64, error)) (int64, error) {
	if co.shared() {
		return co.fetchFromShared(ctx, group, tp, topicID, start)
	}
	co.mu.Lock()
	g := co.groups[group]
	if g == nil {
		co.mu.Unlock()
		return 0, ErrClosed
	}
	if p := g.parts[tp]; p != nil && p.TopicID == topicID {
		from := p.FetchFrom()
		co.mu.Unlock()
		return from, nil
	}
	co.mu.Unlock()
	off, err := start(ctx)
	if err != nil {
		return 0, err
	}
	co.mu.Lock()
	g = co.group(group)
	p := g.parts[tp]
	if p == nil || p.TopicID != topicID {
		p = newPartition(topicID, off)
		p.dirty = true
		p.stats = &co.stats
		g.parts[tp] = p
	}
	from := p.FetchFrom()
	co.mu.Unlock()
	return from, co.persist(ctx, group, tp)
}

// Acquire hands member the acquirable records of batches read for tp.
func (co *Coordinator) Acquire(group, member string, tp TP, batches []Batch, lim AcquireLimits) []Acquired {
	now := co.now()
	co.mu.Lock()
	defer co.mu.Unlock()
	g := co.groups[group]
	if g == nil {
		return nil
	}
	p := g.parts[tp]
	if p == nil {
		return nil
	}
	return p.Acquire(member, batches, lim, now, nil)
}

// SkipTo moves tp's start offset up to off, the log's start after
// retention or DeleteRecords removed what the share partition still
// waited on; what it held below off is dropped. Without co.mu.
func (co *Coordinator) SkipTo(ctx context.Context, group string, tp TP, off int64) error {
	co.mu.Lock()
	g := co.groups[group]
	if g == nil || g.parts[tp] == nil || g.parts[tp].start >= off {
		co.mu.Unlock()
		return nil
	}
	g.parts[tp].skipTo(off)
	co.mu.Unlock()
	return co.persist(ctx, group, tp)
}

// bindConn ties session key to connection conn, the one of its latest
// request. co.mu is held.
func (co *Coordinator) bindConn(key sessionKey, s *session, conn uint64) {
	if s.conn == conn {
		return
	}
	co.unbindConn(key, s)
	s.conn = conn
	if conn != 0 {
		co.byConn[conn] = append(co.byConn[conn], key)
	}
}

// unbindConn unties session key from its connection. co.mu is held.
func (co *Coordinator) unbindConn(key sessionKey, s *session) {
	if s.conn == 0 {
		return
	}
	keys := co.byConn[s.conn]
	for i, k := range keys {
		if k == key {
			keys = append(keys[:i], keys[i+1:]...)
			break
		}
	}
	if len(keys) == 0 {
		delete(co.byConn, s.conn)
	} else {
		co.byConn[s.conn] = keys
	}
	s.conn = 0
}

// dropSession removes session key. co.mu is held.
func (co *Coordinator) dropSession(key sessionKey, s *session) {
	co.unbindConn(key, s)
	delete(co.sessions, key)
}

// ConnClosed closes the share sessions whose latest request came on
// connection conn and releases the records their members hold (Kafka's
// share sessions die with their connection). It never blocks: the
// released state is written, and parked fetches woken, on a goroutine.
// Any goroutine.
func (co *Coordinator) ConnClosed(conn uint64) {
	co.mu.Lock()
	keys := co.byConn[conn]
	if len(keys) == 0 {
		co.mu.Unlock()
		return
	}
	delete(co.byConn, conn)
	var woke []hit
	for _, key := range keys {
		s := co.sessions[key]
		if s == nil || s.conn != conn {
			continue
		}
		co.dropSession(key, s)
		g := co.groups[key.group]
		if g == nil {
			continue
		}
		woke = g.release(key.member, co.cachedLimit(key.group), woke)
	}
	co.mu.Unlock()
	if len(woke) > 0 {
		go co.afterRelease(context.Background(), woke)
	}
}
