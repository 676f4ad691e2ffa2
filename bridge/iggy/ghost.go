package iggy

import (
	"sync"
	"time"
)

// Ghost reads. The Iggy server (0.9.0-edge.5) gives a topic made after a
// delete the freed slab keys of the deleted one, and it checks its
// partition writes against the topic's incarnation but not its polls
// (dispatch.rs handle_poll_messages; partition_reconciler.rs, "recycled
// slab keys"). Until the server has torn the old partitions down, a poll of
// the new topic can return the old topic's messages: in CI a franz-go test
// made a topic, wrote one record to it and fetched five, another test's.
//
// A message cannot be older than its topic. The Store keeps the creation
// time of each topic its lookups saw (births) and a poll stops at the
// first batch the server stamped before it: the partition reads as empty
// until the server has the new partitions in place, and the Kafka client
// fetches again. The server stamps both times with its own clock, so only
// a clock stepped back can make a real batch look older than its topic;
// the check holds for the first ghostWindow of a topic's life (the server
// converges in milliseconds), so such a partition is served after that.

const (
	ghostWindow = 10 * time.Second
	// birthsMax bounds the births kept; past it they are dropped and
	// learned again from the next lookups.
	birthsMax = 1 << 16
)

type birthKey struct{ stream, topic string }

// births maps topics to the creation time (µs) of the incarnation the
// Store last looked up. Any goroutine.
type births struct {
	mu sync.Mutex
	m  map[birthKey]uint64
}

// note records the creation time a lookup of stream/topic returned.
func (b *births) note(stream, topic string, created uint64) {
	k := birthKey{stream, topic}
	b.mu.Lock()
	if b.m == nil || len(b.m) >= birthsMax {
		b.m = make(map[birthKey]uint64)
	}
	if b.m[k] != created {
		b.m[k] = created
	}
	b.mu.Unlock()
}

// forget drops stream/topic's entry (the topic was deleted).
func (b *births) forget(stream, topic string) {
	b.mu.Lock()
	delete(b.m, birthKey{stream, topic})
	b.mu.Unlock()
}

// floor is the server time (µs) a batch of stream/topic polled at now must
// not be older than: the topic's creation time while it is younger than
// ghostWindow, else 0 (no check).
func (b *births) floor(stream, topic string, now time.Time) uint64 {
	b.mu.Lock()
	created := b.m[birthKey{stream, topic}]
	b.mu.Unlock()
	if created == 0 || now.UnixMicro()-int64(created) >= ghostWindow.Microseconds() {
		return 0
	}
	return created
}
