package handlers

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// topic returns the Iggy topic behind Kafka topic name, creating it with
// Cfg.DefaultPartitions when create is true and Cfg.AutoCreateTopics is
// on. A concurrent creator is not an error: the topic it made is returned.
// The caller has checked the name. Any goroutine.
func (c *Call) topic(name string, create bool) (bridge.TopicInfo, error) {
	g := c.G
	ti, err := g.Store.Topic(c.Ctx, g.Cfg.Stream, name)
	if err == nil || !errors.Is(err, bridge.ErrTopicNotFound) || !create || !g.Cfg.AutoCreateTopics {
		return ti, err
	}
	ti, err = g.Store.CreateTopic(c.Ctx, g.Cfg.Stream, name, g.defaultPartitions())
	if errors.Is(err, bridge.ErrTopicExists) {
		return g.Store.Topic(c.Ctx, g.Cfg.Stream, name)
	}
	if err == nil && g.Log != nil {
		g.Log.Info("auto-created topic", "topic", name, "partitions", ti.Partitions)
	}
	return ti, err
}

// defaultPartitions is Cfg.DefaultPartitions, or 1 when unset.
func (g *Gateway) defaultPartitions() int32 {
	if g.Cfg.DefaultPartitions > 0 {
		return g.Cfg.DefaultPartitions
	}
	return 1
}

// topicByID finds the topic whose derived id (see topicID) is id by listing
// the stream. Cold path: only id-addressed requests (Metadata v12 by id,
// DeleteTopics v6) use it. ok is false when no topic has that id.
func (c *Call) topicByID(id [16]byte) (ti bridge.TopicInfo, ok bool, err error) {
	ts, err := c.G.Store.Topics(c.Ctx, c.G.Cfg.Stream)
	if err != nil {
		return ti, false, err
	}
	for _, t := range ts {
		if topicID(t) == id {
			return t, true, nil
		}
	}
	return ti, false, nil
}

// readTopic resolves a topic for a read (Fetch, ListOffsets): a name Kafka
// could never have created answers UNKNOWN_TOPIC_OR_PARTITION like a
// missing topic, and nothing is auto-created. code is 0 on success and o
// picks the store-error mapping.
func (c *Call) readTopic(name string, o op) (ti bridge.TopicInfo, code int16) {
	if !validTopicName(name) {
		return ti, kerr.UnknownTopicOrPartition.Code
	}
	ti, err := c.topic(name, false)
	if err != nil {
		return ti, errCode(err, o)
	}
	return ti, 0
}
