package handlers

import (
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// fetchStateMaxAge is how long a Fetch over Iggy may answer from a topic's
// state read by an earlier Fetch: how late the log start, the high
// watermark or the topic's life is seen when someone else (a native Iggy
// client, another gateway) changes them, as for Produce's headers
// (topicInfoMaxAge). It is used only where records found answer for it
// (fetchRun.cachedAnswers): any partition that found none, or found them
// past its fetch offset, reads the state again before it is answered.
const fetchStateMaxAge = time.Second

// fetchStateCache holds, per topic name, the TopicState a Fetch read last:
// the topic and its partitions' offsets. A Fetch over Iggy that finds
// records is then one round trip per partition (the poll) instead of one
// more per topic (GetTopic), which costs the server as much as a tenth of
// a 1 MiB poll. Appends of this gateway raise the high watermarks kept
// (Gateway.raiseFetchState), so only someone else's writes are answered
// late. Used only with a store whose Capabilities say
// TopicStateInOneCall. A state is forgotten when the topic was made,
// deleted or grown, its log start moved, or an Append found it or its
// partition gone.
type fetchStateCache = agedCache[fetchState]

// fetchState is one topic's state as a Fetch read it.
type fetchState struct {
	ti     bridge.TopicInfo
	states []bridge.PartitionState // index = partition
	// next[p], when larger, is partition p's high watermark: one past the
	// last offset this gateway appended to it since the read.
	next []atomic.Uint64
}

// newFetchState is a state read as ti and states.
func newFetchState(ti bridge.TopicInfo, states []bridge.PartitionState) fetchState {
	return fetchState{ti: ti, states: states, next: make([]atomic.Uint64, len(states))}
}

// raiseFetchState notes that topic's partition now ends before next (an
// append of this gateway was acknowledged), for the state kept, if any.
// Any goroutine.
func (g *Gateway) raiseFetchState(topic string, partition int32, next uint64) {
	if !g.fetchStates.on {
		return
	}
	e, ok := g.fetchStates.any(topic)
	if !ok || partition < 0 || int(partition) >= len(e.v.next) {
		return
	}
	n := &e.v.next[partition]
	for {
		cur := n.Load()
		if next <= cur || n.CompareAndSwap(cur, next) {
			return
		}
	}
}

// state is partition p's state (0 <= p < len(fs.states)), its high
// watermark raised by this gateway's appends since the read.
func (fs *fetchState) state(p int) bridge.PartitionState {
	st := fs.states[p]
	if n := fs.next[p].Load(); n > st.Next {
		st.Next = n
	}
	return st
}

// forgetTopicHeaders drops what Produce and Fetch keep of name's header
// and state (topicInfoCache, fetchStateCache). Any goroutine.
func (g *Gateway) forgetTopicHeaders(name string) {
	g.topicInfos.forget(name)
	g.fetchStates.forget(name)
}
