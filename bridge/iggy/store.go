package iggy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zeebo/xxh3"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/fetchcache"
)

// Store is a bridge.Backend on a real Iggy server. Kafka topic T lives as
// Iggy topic T in the stream the caller names (created on demand by
// CreateTopic); partitions are 0-based on both sides. Every request names
// streams and topics by name, so nothing caches Iggy's reusable ids.
type Store struct {
	c *Client

	est fetchcache.Samples[pollKey] // bytes per message seen by the last poll

	glog groupLog // the group log's fold (group_log.go)

	cfgMu sync.Mutex // guards cfg; held across the poll that refreshes it
	cfg   configCache

	starts logStarts // DeleteRecords' log start offsets (admin.go)

	ahead readAhead // polls made ahead of Fetch (readahead.go)

	txn txnStates // the transaction state's fold (txnstate.go)

	born births // creation times of the topics looked up (ghost.go)
}

type pollKey struct {
	stream, topic string
	partition     int32
}

var _ bridge.Backend = (*Store)(nil)

// Capabilities: batches in Iggy's form, sent to the server as they are;
// a request's offset commits go to the group log in one append; one
// GetTopic answers a topic and all its partitions' states. Every call is
// a round trip (no memory reads), an append is durable when the server
// answers (nothing staged), and the server's health is judged from the
// answers.
func (s *Store) Capabilities() bridge.Capabilities {
	return bridge.Capabilities{Format: bridge.IggyFormat, BatchedCommits: true, TopicStateInOneCall: true}
}

// Health is always Healthy: the guard judges an Iggy server by its answers.
func (s *Store) Health() (bridge.Health, <-chan struct{}) { return bridge.Health{}, nil }

// OnTrim never calls fn: the gateway never sees Iggy trim a partition
// (Iggy's retention runs in the server; Fetch checks the log start).
func (s *Store) OnTrim(func(stream, topic string, partition int32)) {}

// AppendStaged is Append: an Iggy append is durable when the server
// answers, so there is nothing left to wait for.
func (s *Store) AppendStaged(ctx context.Context, stream, topic string, partition int32, batch []byte, _ bridge.Prepared) (uint64, func(context.Context) error, error) {
	base, err := s.Append(ctx, stream, topic, partition, batch)
	return base, nil, err
}

// Open connects to the server (see Dial) and returns the Store.
func Open(ctx context.Context, opts Options) (*Store, error) {
	c, err := Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	return NewStore(c), nil
}

// NewStore serves the Store from an existing client, which the Store then
// owns (Close closes it).
func NewStore(c *Client) *Store {
	s := &Store{c: c, glog: newGroupLog()}
	max := c.opts.ReadAheadBytes
	if max == 0 {
		max = aheadMaxDefault
	}
	s.ahead.init(max)
	return s
}

// Client is the underlying client, for calls beyond the Store (consumer
// offsets, groups).
func (s *Store) Client() *Client { return s.c }

// Close closes the client.
func (s *Store) Close() error {
	s.ahead.cancel()
	err := s.c.Close()
	s.ahead.stop()
	return err
}

// topicInfo converts a topic header. ID mixes Iggy's topic id with its
// creation time: Iggy reuses the lowest free id after a delete, but Kafka
// topic ids (derived from TopicInfo.ID) must change when a topic is made
// again under the same name.
func topicInfo(stream string, t *Topic) bridge.TopicInfo {
	var b [12]byte
	le.PutUint32(b[:], t.ID)
	le.PutUint64(b[4:], t.CreatedAt)
	return bridge.TopicInfo{
		Stream:     stream,
		Name:       t.Name,
		ID:         uint32(xxh3.Hash(b[:])),
		Partitions: int32(t.PartitionsCount),
		CreatedAt:  t.CreatedAt,
	}
}

// CreateTopic creates the topic, and the stream first when it is missing,
// with the durability of Options.Durability. A create whose connection
// broke (outcome unknown) is sent once more on a fresh one; "already
// exists" on that second try means the first landed, and the topic is
// returned as created.
func (s *Store) CreateTopic(ctx context.Context, stream, topic string, partitions int32) (bridge.TopicInfo, error) {
	if partitions < 0 {
		return bridge.TopicInfo{}, fmt.Errorf("iggy: %d partitions: %w", partitions, ErrTooManyPartitions)
	}
	t, err := s.createTopicResent(ctx, stream, topic, uint32(partitions), nil)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	s.born.note(stream, topic, t.CreatedAt)
	return topicInfo(stream, &t), nil
}

func (s *Store) createTopic(ctx context.Context, stream, topic string, partitions uint32) (Topic, error) {
	d := s.c.opts.Durability
	t, err := s.c.CreateTopic(ctx, Name(stream), topic, partitions, d)
	if errors.Is(err, ErrStreamNotFound) {
		if _, err = s.c.CreateStream(ctx, stream); err != nil && !errors.Is(err, ErrStreamExists) {
			return Topic{}, err
		}
		t, err = s.c.CreateTopic(ctx, Name(stream), topic, partitions, d)
	}
	return t, err
}

// DeleteTopic deletes the topic; the stream stays. A delete whose
// connection broke is sent once more; "not found" then means the first
// landed.
func (s *Store) DeleteTopic(ctx context.Context, stream, topic string) error {
	s.forget(stream, topic)
	s.ahead.forget(stream, topic)
	s.born.forget(stream, topic)
	err := s.c.DeleteTopic(ctx, Name(stream), Name(topic))
	if brokenConn(err) && ctx.Err() == nil {
		if err = s.c.DeleteTopic(ctx, Name(stream), Name(topic)); errors.Is(err, bridge.ErrTopicNotFound) {
			return nil
		}
	}
	return err
}

// lookupTopic reads a topic's header: bridge.ErrTopicNotFound when the
// stream or the topic does not exist.
func (s *Store) lookupTopic(ctx context.Context, stream, topic string) (Topic, error) {
	t, ok, err := s.c.GetTopic(ctx, Name(stream), Name(topic))
	if err == nil && !ok {
		err = bridge.ErrTopicNotFound
	}
	if err == nil {
		s.born.note(stream, topic, t.CreatedAt)
	}
	return t, err
}

// Topic returns one topic or bridge.ErrTopicNotFound.
func (s *Store) Topic(ctx context.Context, stream, topic string) (bridge.TopicInfo, error) {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	return topicInfo(stream, &t), nil
}

// Topics lists the stream's topics; none when the stream is missing.
func (s *Store) Topics(ctx context.Context, stream string) ([]bridge.TopicInfo, error) {
	ts, err := s.c.GetTopics(ctx, Name(stream))
	if err != nil {
		return nil, err
	}
	out := make([]bridge.TopicInfo, len(ts))
	for i := range ts {
		out[i] = topicInfo(stream, &ts[i])
		s.born.note(stream, ts[i].Name, ts[i].CreatedAt)
	}
	return out, nil
}

// Append sends the batch as one SendMessages to the partition.
func (s *Store) Append(ctx context.Context, stream, topic string, partition int32, batch []byte) (uint64, error) {
	if partition < 0 {
		return 0, bridge.ErrPartitionNotFound
	}
	conf, ok, err := s.c.SendMessages(ctx, Name(stream), Name(topic), uint32(partition), batch)
	if errors.Is(err, ErrResourceNotFound) {
		return 0, s.whichMissing(ctx, stream, topic, err)
	}
	if err != nil {
		return 0, err
	}
	if ok {
		return conf.BaseOffset, nil
	}
	return s.baseFromState(ctx, stream, topic, partition, batch)
}

// whichMissing turns a send's status 20 (stream, topic or partition
// unresolved) into the bridge error that fits.
func (s *Store) whichMissing(ctx context.Context, stream, topic string, cause error) error {
	_, ok, err := s.c.GetTopic(ctx, Name(stream), Name(topic))
	switch {
	case err != nil:
		return cause
	case !ok:
		return fmt.Errorf("%w: %w", bridge.ErrTopicNotFound, cause)
	}
	return fmt.Errorf("%w: %w", bridge.ErrPartitionNotFound, cause)
}

// baseFromState recovers the base offset of a batch the server committed
// without a confirmation (a server that confirms nothing). Exact when this
// gateway is the partition's only writer: sends to one partition are
// serialised on its pinned connection.
func (s *Store) baseFromState(ctx context.Context, stream, topic string, partition int32, batch []byte) (uint64, error) {
	v, _ := bridge.ParseIggyBatch(batch)
	st, err := s.Partition(ctx, stream, topic, partition)
	if err != nil {
		return 0, fmt.Errorf("%w: committed without offsets, state unreadable: %w", ErrSendOutcomeUnknown, err)
	}
	if st.Next < uint64(v.Count) {
		return 0, fmt.Errorf("%w: committed without offsets", ErrSendOutcomeUnknown)
	}
	return st.Next - uint64(v.Count), nil
}

// TopicState is one GetTopic for the topic and
// all its partitions' states, each as Partition gives it.
func (s *Store) TopicState(ctx context.Context, stream, topic string) (bridge.TopicInfo, []bridge.PartitionState, error) {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return bridge.TopicInfo{}, nil, err
	}
	ti := topicInfo(stream, &t)
	states := make([]bridge.PartitionState, ti.Partitions)
	for i := range t.Partitions {
		p := &t.Partitions[i]
		if int64(p.ID) >= int64(len(states)) {
			continue
		}
		if states[p.ID], err = s.partitionState(ctx, stream, topic, ti.ID, p); err != nil {
			return bridge.TopicInfo{}, nil, err
		}
	}
	return ti, states, nil
}

// Partition reads the partition's offsets from GetTopic (partitionState).
func (s *Store) Partition(ctx context.Context, stream, topic string, partition int32) (bridge.PartitionState, error) {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return bridge.PartitionState{}, err
	}
	for i := range t.Partitions {
		if p := &t.Partitions[i]; int64(p.ID) == int64(partition) {
			return s.partitionState(ctx, stream, topic, topicInfo(stream, &t).ID, p)
		}
	}
	return bridge.PartitionState{}, bridge.ErrPartitionNotFound
}

// partitionState is p's offsets as GetTopic reported them, Earliest raised
// to the log start DeleteRecords stored, if that is higher (keyed, as
// DeleteRecords keys it, by the name asked for and the derived topic id).
func (s *Store) partitionState(ctx context.Context, stream, topic string, id uint32, p *Partition) (bridge.PartitionState, error) {
	st := p.State()
	start, err := s.logStart(ctx, startKey{stream: stream, topic: topic, id: id, partition: int32(p.ID)})
	if err != nil {
		return bridge.PartitionState{}, err
	}
	if start > st.Earliest {
		st.Earliest = min(start, st.Next)
	}
	return st, nil
}
