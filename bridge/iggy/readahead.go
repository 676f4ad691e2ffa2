package iggy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/bridge"
)

// aheadPool recycles chunk buffers once served (release).
var aheadPool bytebufferpool.Pool

// Read-ahead. A Kafka consumer reading a partition sends one Fetch, waits
// for the reply, decodes it and only then sends the next; over Iggy each
// Fetch's poll is a round trip that carries the whole budget, most of a
// fetch cycle for a large budget (docs/IGGY.md, "Fetch over Iggy"). So
// when a poll ends because its budget was spent, which says more data
// follows, the Store polls the next budget's worth at once, while the
// reply travels and the client decodes it, and keeps it for the
// partition's next Poll.
//
// It lives here rather than beside the tail cache and the learned sizes
// (internal/fetchcache) because it is the Iggy store's own business, below
// the Backend interface: a chunk is raw Iggy poll records fed to this
// store's poll cursor, and serving it for aheadTTL is safe only because
// Iggy never changes a stored offset.
//
// A chunk is served only to a Poll whose start lies inside it, within
// aheadTTL of its poll; it holds messages by offset, which Iggy never
// changes once stored (no compaction; deletion only from the head, and the
// Fetch handler checks the log start itself). What a chunk cannot see is
// a topic deleted and made again under the same name by another gateway
// within aheadTTL: a consumer still fetching at its old offsets could then
// read the old topic's messages for that long (docs/IGGY.md, Read-ahead).
// Deletes through this gateway drop the topic's chunks at once.
//
// Memory: at most one chunk per partition, and aheadMax bytes over all of
// them (a read-ahead that would go over is not started).

const (
	aheadTTL = time.Second
	// aheadMaxDefault bounds the bytes held by read-ahead chunks.
	aheadMaxDefault = 64 << 20
)

// aheadChunk is one poll made ahead of the reader. Fields below done are
// written by the polling goroutine before it closes done, and read only
// after done is closed.
type aheadChunk struct {
	from     uint64
	reserved int // bytes counted against the cap until done
	started  time.Time
	done     chan struct{}

	// buf holds the poll's whole reply frame, read into it from the socket
	// (Client.pollKeep), and recs its stored batch records, aliasing it.
	buf  *bytebufferpool.ByteBuffer
	recs [][]byte
	last uint64 // offset of the last message held
	err  error
}

// readAhead holds the chunks. The zero value is off; any goroutine.
type readAhead struct {
	mu     sync.Mutex
	m      map[pollKey]*aheadChunk
	held   int // bytes reserved or held by chunks in m
	max    int
	ctx    context.Context // cancelled by Store.Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// served counts Polls that a chunk fed (tests, and the reason a
	// regression in the reader's pattern would show).
	served atomic.Int64
}

func (ra *readAhead) init(max int) {
	ra.m = make(map[pollKey]*aheadChunk)
	ra.max = max
	ra.ctx, ra.cancel = context.WithCancel(context.Background())
}

// stop cancels the polls in flight and waits for them.
func (ra *readAhead) stop() {
	if ra.cancel == nil {
		return
	}
	ra.cancel()
	ra.wg.Wait()
}

// take removes and returns key's chunk if it may serve a Poll from offset
// from: started within aheadTTL, and from at or after its start (whether
// from lies inside it is known only once the poll ended). A chunk that
// cannot serve is dropped, since the reader has moved elsewhere.
func (ra *readAhead) take(key pollKey, from uint64, now time.Time) *aheadChunk {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ch := ra.m[key]
	if ch == nil {
		return nil
	}
	delete(ra.m, key)
	ra.held -= ch.reserved
	if from < ch.from || now.Sub(ch.started) > aheadTTL {
		return nil
	}
	return ch
}

// forget drops a topic's chunks (its polls in flight end unseen).
func (ra *readAhead) forget(stream, topic string) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for k, ch := range ra.m {
		if k.stream == stream && k.topic == topic {
			delete(ra.m, k)
			ra.held -= ch.reserved
		}
	}
}

// reserve makes the chunk for key from offset from, or returns nil when
// read-ahead is off, the cap is reached, or a chunk for key exists.
// Expired chunks of other partitions are dropped first.
func (ra *readAhead) reserve(key pollKey, from uint64, bytes int, now time.Time) *aheadChunk {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.m == nil || ra.max <= 0 {
		return nil
	}
	if _, ok := ra.m[key]; ok {
		return nil
	}
	if ra.held+bytes > ra.max {
		for k, ch := range ra.m {
			if now.Sub(ch.started) > aheadTTL {
				delete(ra.m, k)
				ra.held -= ch.reserved
			}
		}
		if ra.held+bytes > ra.max {
			return nil
		}
	}
	ch := &aheadChunk{from: from, reserved: bytes, started: now, done: make(chan struct{})}
	ra.m[key] = ch
	ra.held += bytes
	return ch
}

// readAheadAfter starts polling key from offset from in the background,
// count messages within about maxBytes, unless reserve refuses. Any
// goroutine.
func (s *Store) readAheadAfter(key pollKey, from uint64, maxBytes int, count uint32) {
	ch := s.ahead.reserve(key, from, maxBytes, time.Now())
	if ch == nil {
		return
	}
	s.ahead.wg.Go(func() {
		defer close(ch.done)
		p := uint32(key.partition)
		// The connection reads the reply into a pooled buffer and trades
		// it for this one, so the records are not copied out of it.
		ch.buf = aheadPool.Get()
		_, err := s.c.pollKeep(s.ahead.ctx, &PollRequest{
			Consumer: pollConsumer, Stream: Name(key.stream), Topic: Name(key.topic),
			Partition: &p, Strategy: PollingStrategy{Kind: PollOffset, Value: from}, Count: count,
		}, func(rec []byte) bool {
			v, err := bridge.ParseIggyBatch(rec)
			if err != nil {
				return false
			}
			ch.recs = append(ch.recs, rec)
			ch.last = lastOffset(v)
			return true
		}, &ch.buf.B)
		if ch.err = err; err != nil {
			ch.recs = nil // they alias the connection's buffer, not buf
		}
	})
}

// release returns a served chunk's buffer to the pool. The chunk's poll
// has ended (serveAhead waited for it) or the chunk is dropped unserved,
// in which case its buffer is left to the collector: its goroutine may
// still be writing to it.
func (ra *readAhead) release(ch *aheadChunk) {
	select {
	case <-ch.done:
	default:
		return
	}
	if ch.buf != nil {
		ch.buf.Reset()
		aheadPool.Put(ch.buf)
		ch.buf, ch.recs = nil, nil
	}
}

// serveAhead feeds a taken chunk to the cursor, waiting for its poll if
// it is still in flight. A chunk that failed, is empty or does not hold
// pc.from feeds nothing; either way the caller goes on polling Iggy from
// pc.from until the cursor stops.
func (s *Store) serveAhead(ctx context.Context, key pollKey, ch *aheadChunk, pc *pollCursor) {
	select {
	case <-ch.done:
	case <-ctx.Done():
		return
	}
	if ch.err != nil || len(ch.recs) == 0 || pc.from > ch.last {
		return
	}
	pc.before, pc.bytes, pc.msgs = pc.from, 0, 0
	for _, rec := range ch.recs {
		v, err := bridge.ParseIggyBatch(rec)
		if err != nil {
			break
		}
		if lastOffset(v) < pc.from {
			continue // below the reader, already returned
		}
		if !pc.record(rec) {
			break
		}
	}
	s.ahead.served.Add(1)
	s.learn(key, pc.bytes, pc.msgs)
}
