package iggytest

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// catalog maps Iggy's stream ids onto a bridge.Backend, which knows streams
// only by name. Stream ids are the lowest free slot, as in Iggy; a stream
// that holds topics in the store (after a restart) gets an id when first
// named.
type catalog struct {
	store   bridge.Backend
	mu      sync.Mutex
	byName  map[string]*stream
	byID    map[uint32]*stream
	offsets map[offsetKey]uint64
	rr      map[topicKey]uint32 // Balanced partitioning counters
	meta    map[topicKey]*topicMeta
	sizes   map[partKey]partSize
}

// topicMeta is what Iggy keeps of a topic that a bridge.Backend does not:
// its Iggy id (the lowest free slot in the stream, which also orders
// GetTopics), its options, and message counts the server keeps counting
// after DeletePartitions removed the partitions that held them.
type topicMeta struct {
	slot        uint32
	opts        map[string]optEntry
	compression uint8
	expiry      uint64
	maxSize     uint64
	segment     uint64
	carriedMsgs uint64
	carriedSize uint64
}

type partKey struct {
	stream, topic string
	partition     uint32
}

// partSize caches a partition's stored bytes up to offset next.
type partSize struct{ next, bytes uint64 }

type stream struct {
	id      uint32
	name    string
	created uint64
}

type topicKey struct{ stream, topic string }

type offsetKey struct {
	stream, topic string
	partition     uint32
	kind          uint8
	consumer      string // numeric ids as 4 raw bytes, names as is
}

func (c *catalog) init(store bridge.Backend) {
	c.store = store
	c.byName = make(map[string]*stream)
	c.byID = make(map[uint32]*stream)
	c.offsets = make(map[offsetKey]uint64)
	c.rr = make(map[topicKey]uint32)
	c.meta = make(map[topicKey]*topicMeta)
	c.sizes = make(map[partKey]partSize)
}

// topicMeta returns t's metadata, making it for a topic this server did
// not create (server defaults, next free slot). Caller holds mu.
func (c *catalog) topicMetaLocked(stream string, t bridge.TopicInfo) *topicMeta {
	k := topicKey{stream, t.Name}
	if m := c.meta[k]; m != nil {
		return m
	}
	m := &topicMeta{slot: c.freeSlot(stream), opts: defaultOptions(), compression: compressionNone,
		expiry: math.MaxUint64, maxSize: math.MaxUint64, segment: defaultSegment}
	c.meta[k] = m
	return m
}

// freeSlot is the lowest topic id not used in stream. Caller holds mu.
func (c *catalog) freeSlot(stream string) uint32 {
	used := map[uint32]bool{}
	for k, m := range c.meta {
		if k.stream == stream {
			used[m.slot] = true
		}
	}
	id := uint32(0)
	for used[id] {
		id++
	}
	return id
}

// metaOf is topicMetaLocked under mu.
func (c *catalog) metaOf(stream string, t bridge.TopicInfo) topicMeta {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := *c.topicMetaLocked(stream, t)
	return m
}

// topics lists a stream's topics in Iggy id order.
func (c *catalog) topics(stream string) ([]bridge.TopicInfo, error) {
	ts, err := c.store.Topics(ctx(), stream)
	if err != nil {
		return nil, err
	}
	// Slots are handed out in store order for topics met here first.
	slices.SortFunc(ts, func(a, b bridge.TopicInfo) int { return cmp.Compare(a.ID, b.ID) })
	c.mu.Lock()
	slot := make(map[string]uint32, len(ts))
	for _, t := range ts {
		slot[t.Name] = c.topicMetaLocked(stream, t).slot
	}
	c.mu.Unlock()
	slices.SortFunc(ts, func(a, b bridge.TopicInfo) int { return cmp.Compare(slot[a.Name], slot[b.Name]) })
	return ts, nil
}

// forgetTopic drops what the catalog keeps of a deleted topic.
func (c *catalog) forgetTopic(stream, topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.meta, topicKey{stream, topic})
	delete(c.rr, topicKey{stream, topic})
	for k := range c.offsets {
		if k.stream == stream && k.topic == topic {
			delete(c.offsets, k)
		}
	}
	for k := range c.sizes {
		if k.stream == stream && k.topic == topic {
			delete(c.sizes, k)
		}
	}
}

// renameTopic moves what the catalog keeps of a topic to its new name.
func (c *catalog) renameTopic(stream, from, to string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.meta[topicKey{stream, from}]; m != nil {
		c.meta[topicKey{stream, to}] = m
		delete(c.meta, topicKey{stream, from})
	}
	for k, v := range c.offsets {
		if k.stream == stream && k.topic == from {
			delete(c.offsets, k)
			k.topic = to
			c.offsets[k] = v
		}
	}
	for k, v := range c.sizes {
		if k.stream == stream && k.topic == from {
			delete(c.sizes, k)
			k.topic = to
			c.sizes[k] = v
		}
	}
}

// partitionSize is the bytes of stored batches of a partition (what Iggy
// reports as size_bytes: batch headers and message frames), counted
// incrementally from the store.
func (c *catalog) partitionSize(s *stream, t bridge.TopicInfo, p uint32, next uint64) uint64 {
	k := partKey{s.name, t.Name, p}
	c.mu.Lock()
	ps := c.sizes[k]
	c.mu.Unlock()
	if ps.next > next {
		ps = partSize{} // the partition was cut back: count again
	}
	if ps.next == next {
		return ps.bytes
	}
	_ = c.store.Poll(ctx(), s.name, t.Name, int32(p), ps.next, 1<<40, func(b []byte) bool {
		v, err := bridge.ParseIggyBatch(b)
		if err != nil || v.BaseOffset < ps.next {
			return err == nil
		}
		if v.BaseOffset >= next {
			return false
		}
		ps.bytes += uint64(v.Length)
		ps.next = v.BaseOffset + uint64(v.Count)
		return ps.next < next
	})
	c.mu.Lock()
	c.sizes[k] = ps
	c.mu.Unlock()
	return ps.bytes
}

// ident is a decoded Identifier (PROTOCOL.md 5.2).
type ident struct {
	kind uint8
	num  uint32
	name string
}

// readIdent decodes an identifier; ok=false for any malformed one.
func readIdent(rd *wire.Reader) (ident, bool) {
	kind, n := rd.U8(), int(rd.U8())
	v := rd.Bytes(n)
	switch {
	case rd.Failed():
		return ident{}, false
	case kind == 1 && n == 4:
		return ident{kind: 1, num: le.Uint32(v)}, true
	case kind == 2 && n >= 1:
		return ident{kind: 2, name: string(v)}, true
	}
	return ident{}, false
}

// readTopicIdents decodes the stream and the topic identifier that open
// a topic-level body; ok=false when either is malformed.
func readTopicIdents(rd *wire.Reader) (sid, tid ident, ok bool) {
	sid, ok1 := readIdent(rd)
	tid, ok2 := readIdent(rd)
	return sid, tid, ok1 && ok2
}

// streamBody decodes a body that is one stream identifier.
func streamBody(body []byte) (ident, bool) {
	rd := wire.NewReader(body)
	id, ok := readIdent(rd)
	return id, ok && rd.Len() == 0
}

// topicBody decodes a body that is a stream and a topic identifier.
func topicBody(body []byte) (sid, tid ident, ok bool) {
	rd := wire.NewReader(body)
	sid, tid, ok = readTopicIdents(rd)
	return sid, tid, ok && rd.Len() == 0
}

func (i ident) key() string {
	if i.kind == 1 {
		return string(le.AppendUint32(nil, i.num))
	}
	return i.name
}

func ctx() context.Context { return context.Background() }

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

// addStream gives name the lowest free id. Caller holds mu.
func (c *catalog) addStream(name string, created uint64) *stream {
	id := uint32(0)
	for c.byID[id] != nil {
		id++
	}
	s := &stream{id: id, name: name, created: created}
	c.byName[name], c.byID[id] = s, s
	return s
}

// stream resolves a stream id; streams with topics in the store are
// adopted.
func (c *catalog) stream(id ident) (*stream, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id.kind == 1 {
		s := c.byID[id.num]
		return s, s != nil
	}
	if s := c.byName[id.name]; s != nil {
		return s, true
	}
	ts, err := c.store.Topics(ctx(), id.name)
	if err != nil || len(ts) == 0 {
		return nil, false
	}
	return c.addStream(id.name, ts[0].CreatedAt), true
}

// topic resolves a topic id inside a stream.
func (c *catalog) topic(s *stream, id ident) (bridge.TopicInfo, bool) {
	if id.kind == 2 {
		t, err := c.store.Topic(ctx(), s.name, id.name)
		return t, err == nil
	}
	ts, err := c.topics(s.name)
	if err != nil {
		return bridge.TopicInfo{}, false
	}
	for _, t := range ts {
		if c.metaOf(s.name, t).slot == id.num {
			return t, true
		}
	}
	return bridge.TopicInfo{}, false
}

// resolve finds stream and topic, or the status the real server sends.
func (c *catalog) resolve(sid, tid ident) (*stream, bridge.TopicInfo, uint32) {
	s, ok := c.stream(sid)
	if !ok {
		return nil, bridge.TopicInfo{}, wire.StatusStreamIDNotFound
	}
	t, ok := c.topic(s, tid)
	if !ok {
		return s, t, wire.StatusTopicIDNotFound
	}
	return s, t, wire.StatusOK
}

// partitionStats reads Iggy's view of a partition: last offset and
// message count.
func (c *catalog) partitionStats(s *stream, t bridge.TopicInfo, p uint32) (current, count uint64, err error) {
	st, err := c.store.Partition(ctx(), s.name, t.Name, int32(p))
	if err != nil {
		return 0, 0, err
	}
	if st.Next > 0 {
		current = st.Next - 1
	}
	return current, st.Next - st.Earliest, nil
}

// deleteStream removes a stream and its topics.
func (c *catalog) deleteStream(s *stream) error {
	ts, err := c.store.Topics(ctx(), s.name)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if err := c.store.DeleteTopic(ctx(), s.name, t.Name); err != nil && !errors.Is(err, bridge.ErrTopicNotFound) {
			return err
		}
		c.forgetTopic(s.name, t.Name)
	}
	c.mu.Lock()
	delete(c.byName, s.name)
	delete(c.byID, s.id)
	c.mu.Unlock()
	return nil
}
