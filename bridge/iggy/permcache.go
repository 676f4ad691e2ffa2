package iggy

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// PermissionCache answers bridge.PrincipalPermissions from Iggy: a user's
// permissions (GetUser by name, on the gateway's own connections, so the
// gateway's Iggy user needs read_users or manage_users) and the numeric
// ids of the stream and its topics (GetStream), each re-read when older
// than TTL, so a change made in Iggy applies within TTL (plus one call
// timeout). Learn seeds a user's entry from its own login (CheckLoginUser)
// and saves the first read. Any goroutine.
type PermissionCache struct {
	c   *Client
	ttl time.Duration
	log *slog.Logger

	mu      sync.Mutex
	users   map[string]*permEntry
	streams map[string]*idsEntry
	warned  time.Time // last "cannot read permissions" warning
}

type permEntry struct {
	mu      sync.Mutex // one read of the user at a time
	p       *Permissions
	known   bool // the user exists (else everything is refused)
	fetched time.Time
	readAt  time.Time // the last successful read (fetched may be moved back for a retry)
}

type idsEntry struct {
	mu      sync.Mutex
	sid     uint32
	found   bool
	topics  map[string]uint32
	fetched time.Time
}

// permissionGrace is how long permissions read successfully keep
// applying while Iggy cannot be asked again (unreachable, timing out):
// refusing with TOPIC_AUTHORIZATION_FAILED, which Kafka clients treat as
// fatal, would turn a short Iggy outage into failed applications, while
// the client's store calls fail retriably meanwhile anyway. A re-read is
// tried again every second.
const permissionGrace = time.Minute

// permCacheMax bounds the entries kept; past it the map is cleared (every
// entry is re-read on next use), so unknown names cannot grow it.
const permCacheMax = 4096

// DefaultPermissionTTL is how stale a cached permission may get.
const DefaultPermissionTTL = 5 * time.Second

// NewPermissionCache reads through c; ttl <= 0 means DefaultPermissionTTL.
func NewPermissionCache(c *Client, ttl time.Duration, log *slog.Logger) *PermissionCache {
	if ttl <= 0 {
		ttl = DefaultPermissionTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PermissionCache{c: c, ttl: ttl, log: log, users: map[string]*permEntry{}, streams: map[string]*idsEntry{}}
}

// TTL is the bound on how long a change in Iggy takes to apply.
func (pc *PermissionCache) TTL() time.Duration { return pc.ttl }

// Learn records u (read by u itself right after its login) as fresh.
func (pc *PermissionCache) Learn(u User) {
	e := pc.user(u.Username)
	e.mu.Lock()
	e.p, e.known, e.fetched = u.Permissions, true, time.Now()
	e.readAt = e.fetched
	e.mu.Unlock()
}

func (pc *PermissionCache) user(name string) *permEntry {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return cacheEntry(pc.users, name)
}

func (pc *PermissionCache) ids(stream string) *idsEntry {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return cacheEntry(pc.streams, stream)
}

// cacheEntry returns m's entry for key, adding an empty one when there is
// none; a full m is emptied first (entries are cheap to read again).
// pc.mu is held.
func cacheEntry[E any](m map[string]*E, key string) *E {
	e := m[key]
	if e == nil {
		if len(m) >= permCacheMax {
			clear(m)
		}
		e = new(E)
		m[key] = e
	}
	return e
}

func (pc *PermissionCache) warn(msg string, args ...any) {
	now := time.Now()
	pc.mu.Lock()
	quiet := now.Sub(pc.warned) < 10*time.Second
	if !quiet {
		pc.warned = now
	}
	pc.mu.Unlock()
	if !quiet {
		pc.log.Warn(msg, args...)
	}
}

// permissions returns user's permissions, re-read when stale.
func (pc *PermissionCache) permissions(ctx context.Context, name string) (*Permissions, bool) {
	e := pc.user(name)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.fetched.IsZero() && time.Since(e.fetched) < pc.ttl {
		return e.p, e.known
	}
	u, ok, err := pc.c.GetUser(ctx, Name(name))
	if err != nil && !errors.Is(err, ErrUnauthorized) && !e.readAt.IsZero() && time.Since(e.readAt) < permissionGrace {
		pc.warn("cannot re-read Iggy permissions; the ones read earlier keep applying for a minute", "user", name, "read", time.Since(e.readAt).Round(time.Millisecond), "err", err)
		e.fetched = time.Now().Add(time.Second - pc.ttl)
		return e.p, e.known
	}
	if err != nil {
		if errors.Is(err, ErrUnauthorized) {
			pc.warn("cannot read Iggy permissions: the gateway's Iggy user needs read_users; refusing the client", "user", name)
		} else {
			pc.warn("cannot read Iggy permissions; refusing the client", "user", name, "err", err)
		}
		e.fetched = time.Time{} // retry on next use
		return nil, false
	}
	e.p, e.known, e.fetched = u.Permissions, ok && u.Active, time.Now()
	e.readAt = e.fetched
	return e.p, e.known
}

// topicIDs returns the Iggy ids of stream and topic; topicOK=false when
// the topic is not (yet) in Iggy. A name missing from a snapshot older
// than a second is re-read at once (a topic just created).
func (pc *PermissionCache) topicIDs(ctx context.Context, stream, topic string) (sid, tid uint32, streamOK, topicOK bool) {
	e := pc.ids(stream)
	e.mu.Lock()
	defer e.mu.Unlock()
	age := time.Since(e.fetched)
	tid, topicOK = e.topics[topic]
	if e.fetched.IsZero() || age >= pc.ttl || (!topicOK && age >= time.Second) {
		s, ok, err := pc.c.GetStream(ctx, Name(stream))
		if err != nil {
			pc.warn("cannot read the stream's ids for Iggy permissions; refusing the client", "stream", stream, "err", err)
			e.fetched = time.Time{}
			return 0, 0, false, false
		}
		e.found, e.sid, e.fetched = ok, s.ID, time.Now()
		e.topics = make(map[string]uint32, len(s.Topics))
		for i := range s.Topics {
			e.topics[s.Topics[i].Name] = s.Topics[i].ID
		}
		tid, topicOK = e.topics[topic]
	}
	return e.sid, tid, e.found, topicOK
}

// Allow implements bridge.PrincipalPermissions with Iggy's rules. A topic
// Iggy does not have yet is judged on the stream's and the global flags
// only; a stream it does not have, on the global flags. Worker goroutines
// only.
func (pc *PermissionCache) Allow(ctx context.Context, user string, act bridge.Act, stream, topic string) bool {
	p, known := pc.permissions(ctx, user)
	if !known || p == nil {
		return false
	}
	sid, tid, streamOK, topicOK := pc.topicIDs(ctx, stream, topic)
	if !streamOK {
		// Not in Iggy: only global flags can apply; no stream entry may
		// match by accident.
		g := &Permissions{Global: p.Global}
		p, sid = g, 0
	}
	if !topicOK {
		// No topic entry may match by accident: drop the topic entries of
		// this stream.
		if s, ok := p.Streams[sid]; ok && len(s.Topics) > 0 {
			s.Topics = nil
			q := &Permissions{Global: p.Global, Streams: map[uint32]StreamPermissions{sid: s}}
			p = q
		}
	}
	return decide(p, act, sid, tid)
}

// decide maps an act to Iggy's check. Describe is Kafka's "DESCRIBE is
// implied by READ and WRITE": a user who may poll or send may see the
// topic's metadata, which a Kafka client needs before either.
func decide(p *Permissions, act bridge.Act, sid, tid uint32) bool {
	switch act {
	case bridge.ActDescribe:
		return p.MayReadTopic(sid, tid) || p.MayPoll(sid, tid) || p.MaySend(sid, tid)
	case bridge.ActPoll:
		return p.MayPoll(sid, tid)
	case bridge.ActSend:
		return p.MaySend(sid, tid)
	case bridge.ActCreate:
		return p.MayCreateTopic(sid)
	case bridge.ActManage:
		return p.MayManageTopic(sid, tid)
	}
	return false
}
