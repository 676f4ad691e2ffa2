package handlers

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// Auto-creation limits: a client may name any number of unknown topics in
// one Metadata or Produce, and each would become an Iggy topic (files,
// memory, a Metadata entry forever). Past the per-request cap or the rate,
// the topic is answered LEADER_NOT_AVAILABLE, which Kafka itself answers
// while a topic is being created and every client retries.
const (
	defaultAutoCreatePerRequest = 20
	defaultAutoCreatePerSec     = 10
)

var (
	// errAutoCreateLimited: over the per-request cap or the rate.
	errAutoCreateLimited = errors.New("auto-creation limit reached")
	// errTopicCollides: the name equals an existing topic's once '.' and
	// '_' are equated (Kafka's rule: both map to one metric name).
	errTopicCollides = errors.New("topic name collides with an existing topic")
)

// topic returns the Iggy topic behind Kafka topic name, creating it with
// Cfg.DefaultPartitions when create is true and Cfg.AutoCreateTopics is
// on, within the auto-creation limits and refusing a colliding name. A
// concurrent creator is not an error: the topic it made is returned. The
// caller has checked the name. Any goroutine.
func (c *Call) topic(name string, create bool) (bridge.TopicInfo, error) {
	g := c.G
	ti, err := g.Store.Topic(c.Ctx, g.Cfg.Stream, name)
	if err == nil || !errors.Is(err, bridge.ErrTopicNotFound) || !create || !g.Cfg.AutoCreateTopics {
		return ti, err
	}
	if !c.mayCreateTopic(name) || kafkaInternalTopic(name) {
		// Kafka: no CREATE, no auto-creation; the topic stays unknown.
		// Kafka's internal names are never made into ordinary topics.
		return ti, err
	}
	if c.autoCreated >= g.Cfg.autoCreatePerRequest() || !g.autoCreate.take(time.Now(), g.Cfg.autoCreatePerSec(), g.Cfg.autoCreatePerRequest()) {
		g.autoCreateRefused(name)
		return ti, errAutoCreateLimited
	}
	c.autoCreated++
	ti, err = c.createTopic(name, g.defaultPartitions())
	if errors.Is(err, bridge.ErrTopicExists) {
		return g.Store.Topic(c.Ctx, g.Cfg.Stream, name)
	}
	if err == nil && g.Log != nil {
		g.Log.Info("auto-created topic", "topic", name, "partitions", ti.Partitions)
	}
	return ti, err
}

// kafkaInternalTopic reports one of the names Kafka keeps for its own
// internal topics (Topic.INTERNAL_TOPICS: committed offsets, transaction
// state, share-group state). This gateway has no internal topics: it keeps
// committed offsets in the store (Iggy consumer offsets, or the embedded
// catalog), and has no transactions or share groups. A client asking
// Metadata for __consumer_offsets must not get an ordinary, empty topic of
// that name made for it (a regex subscription would then consume it and
// admin tools would list it as a user topic), so these names are never
// auto-created, and CreateTopics refuses them.
func kafkaInternalTopic(name string) bool {
	switch name {
	case "__consumer_offsets", "__transaction_state", "__share_group_state":
		return true
	}
	return false
}

// createTopic creates name unless it collides with an existing topic once
// '.' and '_' are equated (Kafka refuses both at creation: its metrics
// would share a name). Creations through this gateway are serialized so
// two colliding names cannot both pass the check; gateways sharing one
// Iggy can still race (docs/CONFIG.md, Limits). Worker goroutines only
// (it waits for other creators).
func (c *Call) createTopic(name string, partitions int32) (bridge.TopicInfo, error) {
	return c.createTopicWithConfigs(name, partitions, nil)
}

// createTopicWithConfigs is createTopic keeping cfg (checked by the
// caller) with the topic. A backend that cannot keep a config refuses it
// (*bridge.ConfigError) rather than dropping it.
func (c *Call) createTopicWithConfigs(name string, partitions int32, cfg bridge.TopicConfigs) (bridge.TopicInfo, error) {
	g := c.G
	// Held across two store calls, each bounded by the call's deadline.
	g.createMu.Lock()
	defer g.createMu.Unlock()
	if other, err := c.collidingTopic(name); err != nil {
		return bridge.TopicInfo{}, err
	} else if other != "" {
		return bridge.TopicInfo{}, &topicCollision{name: name, other: other}
	}
	// A policy cached for an earlier topic of this name is dropped (its
	// TopicInfo.ID differs anyway).
	defer g.forgetPolicy(name)
	defer g.forgetTopicHeaders(name)
	if len(cfg) > 0 {
		return g.Store.CreateTopicWithConfigs(c.Ctx, g.Cfg.Stream, name, partitions, cfg)
	}
	return g.Store.CreateTopic(c.Ctx, g.Cfg.Stream, name, partitions)
}

// topicCollision is errTopicCollides with the names, worded as Kafka's
// CreateTopics error message.
type topicCollision struct{ name, other string }

func (e *topicCollision) Error() string {
	return "Topic '" + e.name + "' collides with existing topic: " + e.other
}

func (e *topicCollision) Is(target error) bool { return target == errTopicCollides }

// collidingTopic returns the existing topic whose name equals name once
// '.' and '_' are equated, or "". Only names holding one of them can
// collide, so other names cost no listing.
func (c *Call) collidingTopic(name string) (string, error) {
	if !strings.ContainsAny(name, "._") {
		return "", nil
	}
	ts, err := c.G.Store.Topics(c.Ctx, c.G.Cfg.Stream)
	if err != nil {
		if errors.Is(err, bridge.ErrTopicNotFound) { // no stream yet: nothing to collide with
			return "", nil
		}
		return "", err
	}
	u := unifyCollisionChars(name)
	for _, t := range ts {
		if t.Name != name && unifyCollisionChars(t.Name) == u {
			return t.Name, nil
		}
	}
	return "", nil
}

// unifyCollisionChars maps '.' to '_', Kafka's Topic.unifyCollisionChars.
func unifyCollisionChars(name string) string { return strings.ReplaceAll(name, ".", "_") }

// tokenBucket paces auto-creation: up to burst at once, rate per second
// after. Any goroutine.
type tokenBucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	// refused counts refusals since the last log line (logLimiter-like,
	// one line per second at most).
	refused int
	nextLog time.Time
	started bool
}

// take spends one token if there is one.
func (b *tokenBucket) take(now time.Time, rate, burst int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if burst < rate {
		burst = rate
	}
	if !b.started {
		b.started, b.tokens, b.last = true, float64(burst), now
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens += d.Seconds() * float64(rate)
		if b.tokens > float64(burst) {
			b.tokens = float64(burst)
		}
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// autoCreateRefused logs a refused auto-creation, at most once a second
// with the count of the ones not logged.
func (g *Gateway) autoCreateRefused(name string) {
	b := &g.autoCreate
	now := time.Now()
	b.mu.Lock()
	b.refused++
	if now.Before(b.nextLog) {
		b.mu.Unlock()
		return
	}
	n := b.refused
	b.refused = 0
	b.nextLog = now.Add(time.Second)
	b.mu.Unlock()
	if g.Log != nil {
		g.Log.Warn("topic auto-creation refused: over the per-request cap or the rate (answered LEADER_NOT_AVAILABLE; clients retry)",
			"topic", name, "refused", n, "per_request", g.Cfg.autoCreatePerRequest(), "per_sec", g.Cfg.autoCreatePerSec())
	}
}

func (c *Config) autoCreatePerRequest() int {
	if c.AutoCreatePerRequest > 0 {
		return c.AutoCreatePerRequest
	}
	return defaultAutoCreatePerRequest
}

func (c *Config) autoCreatePerSec() int {
	if c.AutoCreatePerSec > 0 {
		return c.AutoCreatePerSec
	}
	return defaultAutoCreatePerSec
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

// sortedTopics lists the topics of the stream sorted by name, for the
// all-topics answers of Metadata and DescribeTopicPartitions. Workers
// only (a store call).
func (c *Call) sortedTopics() ([]bridge.TopicInfo, error) {
	ts, err := c.G.Store.Topics(c.Ctx, c.G.Cfg.Stream)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts, err
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

// topicFound is what topicOnce learned of a topic: its partition count,
// or the error code of looking it up.
type topicFound struct {
	partitions int32
	code       int16
}

// topicOnce is readTopic(name, opAdmin) remembered in seen, for requests
// that may name one topic in several entries (ElectLeaders,
// AlterPartitionReassignments): each is looked up once.
func (c *Call) topicOnce(seen map[string]topicFound, name string) topicFound {
	f, ok := seen[name]
	if !ok {
		ti, code := c.readTopic(name, opAdmin)
		f = topicFound{ti.Partitions, code}
		seen[name] = f
	}
	return f
}

// partitionCode is the code of partition p of a topic that readTopic (or
// authorizedTopic) answered with ti and code: that code, else
// UNKNOWN_TOPIC_OR_PARTITION for a partition the topic does not have.
func partitionCode(ti bridge.TopicInfo, code int16, p int32) int16 {
	if code == 0 && (p < 0 || p >= ti.Partitions) {
		return kerr.UnknownTopicOrPartition.Code
	}
	return code
}
