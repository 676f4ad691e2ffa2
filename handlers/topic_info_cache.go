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

// topicInfoCache holds, per topic name, the header Produce read last, so
// a Produce over Iggy is one round trip (SendMessages) instead of two
// (GetTopic first). Unused on stores that answer Topic from memory. Any
// goroutine: a read takes no lock.
type topicInfoCache struct {
	// on: the store reads topics over the network (set once, by
	// NewGateway).
	on bool
	// maxAge is topicInfoMaxAge (tests set it longer).
	maxAge time.Duration
	// gen counts forgets, so a read that raced one is not kept.
	gen atomic.Uint64
	m   sync.Map // topic name -> *topicInfoEntry
}

type topicInfoEntry struct {
	ti   bridge.TopicInfo
	read time.Time
}

// get returns name's header if it was read less than maxAge before now.
func (tc *topicInfoCache) get(name string, now time.Time) (bridge.TopicInfo, bool) {
	if v, ok := tc.m.Load(name); ok {
		if e := v.(*topicInfoEntry); now.Sub(e.read) < tc.maxAge {
			return e.ti, true
		}
	}
	return bridge.TopicInfo{}, false
}

// put keeps ti as read at now, unless a forget came after gen (the value
// of tc.gen before the read).
func (tc *topicInfoCache) put(ti bridge.TopicInfo, now time.Time, gen uint64) {
	e := &topicInfoEntry{ti: ti, read: now}
	tc.m.Store(ti.Name, e)
	if tc.gen.Load() != gen {
		tc.m.CompareAndDelete(ti.Name, e)
	}
}

// forget drops name's header: the topic was made, deleted or grown, or an
// Append found it or its partition gone.
func (tc *topicInfoCache) forget(name string) {
	tc.gen.Add(1)
	tc.m.Delete(name)
}

// produceTopicInfo is topic(name, create) for Produce: from the cache
// when the store reads over the network, while fresh enough and while it
// has partition maxPartition (and, byID, the topic id id). Any goroutine.
func (c *Call) produceTopicInfo(name string, create bool, maxPartition int32, id [16]byte, byID bool) (bridge.TopicInfo, error) {
	g := c.G
	if !g.topicInfos.on {
		return c.topic(name, create)
	}
	now := time.Now()
	if ti, ok := g.topicInfos.get(name, now); ok && maxPartition < ti.Partitions && (!byID || c.sameTopicID(ti, id)) {
		return ti, nil
	}
	gen := g.topicInfos.gen.Load()
	ti, err := c.topic(name, create)
	if err == nil {
		g.topicInfos.put(ti, now, gen)
	}
	return ti, err
}
