package iggytest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// catalog maps Iggy's stream ids onto a bridge.Store, which knows streams
// only by name. Stream ids are the lowest free slot, as in Iggy; a stream
// that holds topics in the store (after a restart) gets an id when first
// named.
type catalog struct {
	store   bridge.Store
	mu      sync.Mutex
	byName  map[string]*stream
	byID    map[uint32]*stream
	offsets map[offsetKey]uint64
	rr      map[topicKey]uint32 // Balanced partitioning counters
}

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

func (c *catalog) init(store bridge.Store) {
	c.store = store
	c.byName = make(map[string]*stream)
	c.byID = make(map[uint32]*stream)
	c.offsets = make(map[offsetKey]uint64)
	c.rr = make(map[topicKey]uint32)
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
	ts, err := c.store.Topics(ctx(), s.name)
	if err != nil {
		return bridge.TopicInfo{}, false
	}
	for _, t := range ts {
		if t.ID == id.num {
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
	}
	c.mu.Lock()
	delete(c.byName, s.name)
	delete(c.byID, s.id)
	c.mu.Unlock()
	return nil
}
