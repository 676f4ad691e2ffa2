package handlers

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// topicNames maps the topic ids this gateway has handed out (Metadata,
// CreateTopics, DeleteTopics) back to names, for the requests that name a
// topic by id only (Fetch v13+, Produce v13+): a client learns ids from
// Metadata, so the usual id is found without a store call. An id not seen
// is looked up in the store's topic list once. An entry can outlive its
// topic (deleted, or created again under the same name with a new id):
// the caller checks the id of the topic it then finds (idOf) and forgets
// a stale entry. At most one entry per topic life this gateway served.
// Any goroutine; the zero value is ready.
type topicNames struct {
	mu   sync.RWMutex
	byID map[[16]byte]string
}

// idOf is ti's topic id, noted for lookups by id. Any goroutine.
func (n *topicNames) idOf(ti bridge.TopicInfo) [16]byte {
	id := topicID(ti)
	n.mu.RLock()
	known := n.byID[id] == ti.Name
	n.mu.RUnlock()
	if !known {
		n.mu.Lock()
		if n.byID == nil {
			n.byID = make(map[[16]byte]string)
		}
		n.byID[id] = ti.Name
		n.mu.Unlock()
	}
	return id
}

// forget drops a stale id. Any goroutine.
func (n *topicNames) forget(id [16]byte) {
	n.mu.Lock()
	delete(n.byID, id)
	n.mu.Unlock()
}

// topicNameByID is the name of the topic with id, or 0 and the error code
// a request by id gets: UNKNOWN_TOPIC_ID for an id no topic has (the zero
// id included), the store's code when the topic list cannot be read. The
// name may be of an earlier life of the topic: check the id of the topic
// found by it with sameTopicID.
func (c *Call) topicNameByID(id [16]byte) (string, int16) {
	if id == ([16]byte{}) {
		return "", kerr.UnknownTopicID.Code
	}
	names := &c.G.topicNames
	names.mu.RLock()
	name, ok := names.byID[id]
	names.mu.RUnlock()
	if ok {
		return name, 0
	}
	ti, ok, err := c.topicByID(id)
	switch {
	case err != nil:
		return "", errCode(err, opMeta)
	case !ok:
		return "", kerr.UnknownTopicID.Code
	}
	names.idOf(ti)
	return ti.Name, 0
}

// nameByID is topicNameByID for a request that keys its topics by name:
// an id that names no topic gets a placeholder no topic can have (a NUL
// byte, then the id), distinct per id, so two unknown ids never look like
// one topic.
func (c *Call) nameByID(id [16]byte) string {
	if name, code := c.topicNameByID(id); code == 0 {
		return name
	}
	return "\x00" + string(id[:])
}

// unnamed reports whether name is nameByID's placeholder for an id that
// names no topic.
func unnamed(name string) bool { return len(name) == 17 && name[0] == 0 }

// sameTopicID reports whether ti, found by a name topicNameByID gave for
// id, is the topic id names; a stale name is forgotten, so the next
// request by a newer id looks it up again.
func (c *Call) sameTopicID(ti bridge.TopicInfo, id [16]byte) bool {
	if topicID(ti) == id {
		return true
	}
	c.G.topicNames.forget(id)
	return false
}
