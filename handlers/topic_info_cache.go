package handlers

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// topicInfoMaxAge is how long Produce uses a topic's header read from a
// store without memory reads (Iggy) before it reads it again: how late a
// topic made, deleted or grown by someone else (a native Iggy client,
// another gateway) is seen, as for a topic's configs (policyMaxAge). A
// Produce never waits for it where it matters: a partition past the
// cached count, or a topic id the cache does not know, reads again; an
// Append that finds the topic or partition gone drops the entry.
const topicInfoMaxAge = time.Second

// agedCache holds, per topic name, a value read from the store and when
// it was read: what a hot path may use for maxAge instead of a round trip
// (topicInfoCache for Produce, fetchStateCache for Fetch). Any goroutine:
// a read takes no lock; a value kept is never changed (but for atomics).
type agedCache[V any] struct {
	// on: the store reads this over the network (set once, by
	// NewGateway).
	on bool
	// maxAge is how long a value is used (tests set it longer).
	maxAge time.Duration
	// gen counts forgets, so a read that raced one is not kept.
	gen atomic.Uint64
	m   sync.Map // topic name -> *agedEntry[V]
}

type agedEntry[V any] struct {
	v    V
	read time.Time
}

// get returns name's value if it was read less than maxAge before now.
func (ac *agedCache[V]) get(name string, now time.Time) (*V, bool) {
	if e, ok := ac.any(name); ok && now.Sub(e.read) < ac.maxAge {
		return &e.v, true
	}
	return nil, false
}

// any returns name's entry whatever its age.
func (ac *agedCache[V]) any(name string) (*agedEntry[V], bool) {
	if v, ok := ac.m.Load(name); ok {
		return v.(*agedEntry[V]), true
	}
	return nil, false
}

// put keeps v as name's, read at now, unless a forget came after gen (the
// value of ac.gen before the read).
func (ac *agedCache[V]) put(name string, v V, now time.Time, gen uint64) {
	e := &agedEntry[V]{v: v, read: now}
	ac.m.Store(name, e)
	if ac.gen.Load() != gen {
		ac.m.CompareAndDelete(name, e)
	}
}

// forget drops name's value: what it was read from changed.
func (ac *agedCache[V]) forget(name string) {
	ac.gen.Add(1)
	ac.m.Delete(name)
}

// topicInfoCache holds, per topic name, the header Produce read last, so
// a Produce over Iggy is one round trip (SendMessages) instead of two
// (GetTopic first). Unused on stores that answer Topic from memory. A
// header is forgotten when the topic was made, deleted or grown, or an
// Append found it or its partition gone.
type topicInfoCache = agedCache[bridge.TopicInfo]

// produceTopicInfo is topic(name, create) for Produce: from the cache
// when the store reads over the network, while fresh enough and while it
// has partition maxPartition (and, byID, the topic id id). Any goroutine.
func (c *Call) produceTopicInfo(name string, create bool, maxPartition int32, id [16]byte, byID bool) (bridge.TopicInfo, error) {
	g := c.G
	if !g.topicInfos.on {
		return c.topic(name, create)
	}
	now := time.Now()
	if ti, ok := g.topicInfos.get(name, now); ok && maxPartition < ti.Partitions && (!byID || c.sameTopicID(*ti, id)) {
		return *ti, nil
	}
	gen := g.topicInfos.gen.Load()
	ti, err := c.topic(name, create)
	if err == nil {
		g.topicInfos.put(name, ti, now, gen)
	}
	return ti, err
}
