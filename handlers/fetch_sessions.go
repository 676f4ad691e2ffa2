package handlers

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Incremental fetch sessions (KIP-227), kept the way a Kafka broker keeps
// them: one cache per gateway, any connection may use any session (Kafka
// does not bind a session to the connection that made it, and neither do
// we: a client that reconnects keeps its session), at most Slots sessions.
//
// Epochs: a full request (epoch 0) asks for a new session, created when the
// answer is ready and returned as SessionID with next epoch 1; an
// incremental request (SessionID s, epoch e >= 1) must carry the session's
// next epoch, which it then advances (wrapping to 1 after MaxInt32); epoch
// -1 closes session s (if any) and is answered sessionless.

// Defaults and bounds of the session cache.
const (
	// DefaultFetchSessionSlots is Kafka's default of
	// max.incremental.fetch.session.cache.slots.
	DefaultFetchSessionSlots = 1000
	// fetchSessionEvictAge is how long a session is safe from eviction by
	// a bigger one after it was made, and how long one may stay idle before
	// any new session may take its slot (Kafka's
	// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, 120 s).
	fetchSessionEvictAge = 2 * time.Minute
	// maxSessionPartitions caps one session (a cached partition is about
	// 100 bytes). A full request over it is answered
	// sessionless; an incremental one that would grow a session past it
	// closes the session (FETCH_SESSION_ID_NOT_FOUND, so the client starts
	// over with a full request, which then runs sessionless).
	maxSessionPartitions = 10000
	// maxCachedPartitions caps the partitions of all sessions together
	// (~100 MB): a full request that would pass it is answered
	// sessionless, an incremental one that would grow a session past it
	// closes that session, as over maxSessionPartitions.
	maxCachedPartitions = 1 << 20
)

// sessPart is one partition of a session: what the client last asked for
// and what it was last told (the incremental reply leaves a partition out
// while none of it changed).
type sessPart struct {
	key      PartitionKey
	id       [16]byte // the topic's id, for v13+ replies (zero before v13)
	offset   int64
	maxBytes int32
	// hwm and logStart are the last values sent; hwm -1 after an error,
	// so the partition is sent again once the error is gone.
	hwm, logStart int64
	moved         bool // set only inside finish
}

// fetchSession is one session. Guarded by fetchSessions.mu.
type fetchSession struct {
	id       int32
	epoch    int32 // the epoch the next incremental request must carry
	created  time.Time
	lastUsed time.Time
	parts    []sessPart           // fetch order: partitions with data move to the end
	index    map[PartitionKey]int // position in parts
	// topicIDs: made by a v13+ request, which names topics by id; its
	// incremental requests must too (and the others must not), as Kafka
	// checks (FETCH_SESSION_TOPIC_ID_ERROR).
	topicIDs bool
}

// add appends partition k of the topic with id, as the client asks for it
// in rp, to the session; nothing was sent for it yet.
func (s *fetchSession) add(k PartitionKey, id [16]byte, rp *kmsg.FetchRequestTopicPartition) {
	s.index[k] = len(s.parts)
	s.parts = append(s.parts, sessPart{key: k, id: id, offset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, hwm: -1, logStart: -1})
}

func (s *fetchSession) reindex() {
	clear(s.index)
	for i := range s.parts {
		s.index[s.parts[i].key] = i
	}
}

// fetchSessions is the gateway's session cache. Any goroutine: every field
// below mu is guarded by it (Fetch handlers on workers call in; nothing
// else touches it); the counters are atomic for the metrics scrape.
type fetchSessions struct {
	mu    sync.Mutex
	slots int                     // 0: sessions off
	byID  map[int32]*fetchSession // at most slots entries
	parts int                     // partitions of all sessions in byID
	now   func() time.Time        // time.Now; tests replace it

	created, evicted, refused, incremental atomic.Uint64
}

func newFetchSessions(slots int) *fetchSessions {
	switch {
	case slots == 0:
		slots = DefaultFetchSessionSlots
	case slots < 0:
		slots = 0
	}
	return &fetchSessions{slots: slots, byID: make(map[int32]*fetchSession), now: time.Now}
}

// FetchSessionStats are the session cache's counts, for metrics.
type FetchSessionStats struct {
	Open        int    // sessions in the cache
	Partitions  int    // partitions of those sessions
	Created     uint64 // sessions made
	Evicted     uint64 // sessions dropped to make room for another
	Refused     uint64 // full requests answered sessionless for want of a slot
	Incremental uint64 // incremental requests answered
}

// FetchSessionStats reads the counts. Any goroutine.
func (g *Gateway) FetchSessionStats() FetchSessionStats {
	fs := g.fetchSessions
	fs.mu.Lock()
	n, parts := len(fs.byID), fs.parts
	fs.mu.Unlock()
	return FetchSessionStats{Open: n, Partitions: parts, Created: fs.created.Load(), Evicted: fs.evicted.Load(),
		Refused: fs.refused.Load(), Incremental: fs.incremental.Load()}
}

// fetchPlan is what one Fetch call reads, fixed on its first run so a
// parked call re-run by the loop neither advances the epoch twice nor sees
// another request's change of the session. Owned by the call.
type fetchPlan struct {
	req *kmsg.FetchRequest // the partitions to read: the request's own, or the session's
	// session is the id of the incremental session read (epoch its
	// advanced epoch), or 0.
	session, epoch int32
	// create: a full request with epoch 0, which makes a session when it
	// is answered.
	create  bool
	errCode int16 // a top-level session error: answer it with no partitions
}

// planFetch resolves req against the session cache. Any goroutine.
func (fs *fetchSessions) planFetch(req *kmsg.FetchRequest) *fetchPlan {
	full := req.SessionEpoch == 0 || req.SessionEpoch == -1
	if full {
		if req.SessionID != 0 {
			// A full request naming a session closes it, as on Kafka.
			fs.mu.Lock()
			fs.drop(fs.byID[req.SessionID])
			fs.mu.Unlock()
		}
		return &fetchPlan{req: req, create: req.SessionEpoch == 0 && fs.slots > 0}
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	s := fs.byID[req.SessionID]
	if s == nil {
		return &fetchPlan{errCode: kerr.FetchSessionIDNotFound.Code}
	}
	if s.epoch != req.SessionEpoch {
		return &fetchPlan{errCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	if s.topicIDs != (req.Version >= 13) {
		// The Java consumer switches to ids once its metadata knows them:
		// answered from a session of names, it would find no partition it
		// asked for, and ask again at once, forever. The error makes it
		// start a new session.
		return &fetchPlan{errCode: kerr.FetchSessionTopicIDError.Code}
	}
	// Added or changed partitions first, then the forgotten ones, in
	// Kafka's order.
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			k := PartitionKey{Topic: rt.Topic, Partition: rp.Partition}
			if at, ok := s.index[k]; ok {
				s.parts[at].offset, s.parts[at].maxBytes = rp.FetchOffset, rp.PartitionMaxBytes
				continue
			}
			if len(s.parts) >= maxSessionPartitions || fs.parts >= maxCachedPartitions {
				fs.drop(s)
				return &fetchPlan{errCode: kerr.FetchSessionIDNotFound.Code}
			}
			fs.parts++
			s.add(k, rt.TopicID, rp)
		}
	}
	forgot := false
	for i := range req.ForgottenTopics {
		ft := &req.ForgottenTopics[i]
		for _, p := range ft.Partitions {
			if _, ok := s.index[PartitionKey{Topic: ft.Topic, Partition: p}]; ok {
				delete(s.index, PartitionKey{Topic: ft.Topic, Partition: p})
				forgot = true
			}
		}
	}
	if forgot {
		kept := s.parts[:0]
		for _, p := range s.parts {
			if _, ok := s.index[p.key]; ok {
				kept = append(kept, p)
			}
		}
		clear(s.parts[len(kept):])
		fs.parts -= len(s.parts) - len(kept)
		s.parts = kept
		s.reindex()
	}
	if len(s.parts) == 0 {
		// Nothing left: Kafka drops the session and answers sessionless.
		fs.drop(s)
		eff := *req
		eff.Topics = nil
		return &fetchPlan{req: &eff}
	}
	s.lastUsed = fs.now()
	s.epoch = nextFetchEpoch(s.epoch)
	fs.incremental.Add(1)
	return &fetchPlan{req: sessionRequest(req, s.parts), session: s.id, epoch: s.epoch}
}

func nextFetchEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// sessionRequest is req with its partitions replaced by the session's, in
// session order (consecutive partitions of one topic share a topic entry).
// Allocates one request per call: the caller holds the cache lock, and the
// copy lets it go.
func sessionRequest(req *kmsg.FetchRequest, parts []sessPart) *kmsg.FetchRequest {
	eff := *req
	eff.ForgottenTopics = nil
	topics := 0
	for i := range parts {
		if i == 0 || parts[i-1].key.Topic != parts[i].key.Topic {
			topics++
		}
	}
	eff.Topics = make([]kmsg.FetchRequestTopic, 0, topics)
	all := make([]kmsg.FetchRequestTopicPartition, len(parts)) // one backing array, cut per topic
	for i := range parts {
		p := &parts[i]
		if i == 0 || parts[i-1].key.Topic != p.key.Topic {
			eff.Topics = append(eff.Topics, kmsg.FetchRequestTopic{Topic: p.key.Topic, TopicID: p.id, Partitions: all[i:i:len(all)]})
		}
		t := &eff.Topics[len(eff.Topics)-1]
		rp := &all[i]
		rp.Default()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.key.Partition, p.offset, p.maxBytes
		t.Partitions = t.Partitions[:len(t.Partitions)+1]
	}
	return &eff
}

// finish sets the reply's session fields once its partitions are read: a
// full request with epoch 0 makes a session of them (when a slot is free
// or can be freed); an incremental one leaves out the partitions with
// nothing new and moves the ones with records to the back of the session,
// so the next fetch's budget goes to the others first. Any goroutine.
func (fs *fetchSessions) finish(p *fetchPlan, resp *kmsg.FetchResponse) {
	switch {
	case p.create:
		fs.create(p.req, resp)
	case p.session != 0:
		fs.mu.Lock()
		defer fs.mu.Unlock()
		s := fs.byID[p.session]
		resp.SessionID = p.session
		if s == nil || s.epoch != p.epoch {
			// Closed or moved on while this call was parked: the client
			// learns it on its next request; send everything read.
			return
		}
		// The epoch is unchanged, so no request changed the session since
		// planFetch: resp lists s.parts in order (sessionRequest), and the
		// k-th partition of resp is s.parts[k], no lookup needed.
		var moved []sessPart
		at := 0
		for i := range resp.Topics {
			rt := &resp.Topics[i]
			kept := rt.Partitions[:0]
			for _, rp := range rt.Partitions {
				sp := &s.parts[at]
				at++
				must := len(rp.RecordBatches) > 0 || rp.ErrorCode != 0 ||
					sp.hwm != rp.HighWatermark || sp.logStart != rp.LogStartOffset
				sp.hwm, sp.logStart = rp.HighWatermark, rp.LogStartOffset
				if rp.ErrorCode != 0 {
					sp.hwm = -1
				}
				if len(rp.RecordBatches) > 0 {
					moved = append(moved, *sp)
					sp.moved = true // dropped below, re-added last
				}
				if must {
					kept = append(kept, rp)
				}
			}
			rt.Partitions = kept
		}
		kt := resp.Topics[:0]
		for _, rt := range resp.Topics {
			if len(rt.Partitions) > 0 {
				kt = append(kt, rt)
			}
		}
		resp.Topics = kt
		if len(moved) > 0 {
			kept := s.parts[:0]
			for _, sp := range s.parts {
				if !sp.moved {
					kept = append(kept, sp)
				}
			}
			s.parts = append(kept, moved...)
			for i := len(kept); i < len(s.parts); i++ {
				s.parts[i].moved = false
			}
			s.reindex()
		}
	}
}

// create makes a session of the full request req answered by resp and
// puts its id in resp, or leaves resp sessionless when the cache is full
// and no session may be evicted.
func (fs *fetchSessions) create(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) {
	n := partitionCount(req)
	if n == 0 || n > maxSessionPartitions || resp.ErrorCode != 0 {
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	now := fs.now()
	if fs.parts+n > maxCachedPartitions || len(fs.byID) >= fs.slots && !fs.evictFor(n, now) {
		fs.refused.Add(1)
		return
	}
	s := &fetchSession{epoch: 1, created: now, lastUsed: now, topicIDs: req.Version >= 13,
		parts: make([]sessPart, 0, n), index: make(map[PartitionKey]int, n)}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			k := PartitionKey{Topic: rt.Topic, Partition: rt.Partitions[j].Partition}
			if _, dup := s.index[k]; !dup {
				s.add(k, rt.TopicID, &rt.Partitions[j])
			}
		}
	}
	// What the reply tells the client is what the next incremental reply
	// compares against.
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for _, rp := range rt.Partitions {
			if at, ok := s.index[PartitionKey{Topic: rt.Topic, Partition: rp.Partition}]; ok && rp.ErrorCode == 0 {
				s.parts[at].hwm, s.parts[at].logStart = rp.HighWatermark, rp.LogStartOffset
			}
		}
	}
	for {
		s.id = rand.Int32N(math.MaxInt32) + 1
		if fs.byID[s.id] == nil {
			break
		}
	}
	fs.byID[s.id] = s
	fs.parts += len(s.parts)
	fs.created.Add(1)
	resp.SessionID = s.id
}

// evictFor frees a slot for a new session of n partitions, by Kafka's
// rules: the least recently used session if it was idle for
// fetchSessionEvictAge; otherwise the smallest session (by partitions, then
// id) among those older than fetchSessionEvictAge, if it is smaller than
// the new one. It reports whether a slot was freed. A linear scan of at
// most slots sessions, only when the cache is full. Caller holds fs.mu.
func (fs *fetchSessions) evictFor(n int, now time.Time) bool {
	var lru, small *fetchSession
	for _, s := range fs.byID {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) {
			lru = s
		}
		if now.Sub(s.created) > fetchSessionEvictAge &&
			(small == nil || len(s.parts) < len(small.parts) || len(s.parts) == len(small.parts) && s.id < small.id) {
			small = s
		}
	}
	victim := (*fetchSession)(nil)
	switch {
	case lru != nil && now.Sub(lru.lastUsed) > fetchSessionEvictAge:
		victim = lru
	case small != nil && n > len(small.parts):
		victim = small
	}
	if victim == nil {
		return false
	}
	fs.drop(victim)
	fs.evicted.Add(1)
	return true
}

// drop removes s (nil: nothing) from the cache. Caller holds fs.mu.
func (fs *fetchSessions) drop(s *fetchSession) {
	if s == nil || fs.byID[s.id] != s {
		return
	}
	delete(fs.byID, s.id)
	fs.parts -= len(s.parts)
}
