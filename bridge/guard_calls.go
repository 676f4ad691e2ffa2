package bridge

import (
	"context"
	"sync"
)

// Every Backend call, under the guard (guard.go): each runs the wrapped
// backend's call on one of the guard's workers with the guard's deadline,
// or inline where the backend answers from memory (Capabilities.MemoryReads).
// write says a call changes the store, so it fails at once while the
// backend reports bad health. Any goroutine.

// errTask is a job whose only result is an error.
type errTask struct {
	fn  func(context.Context) error
	err error
}

func (t *errTask) exec(ctx context.Context) { t.err = t.fn(ctx) }

// do runs a call whose only result is an error.
func do(g *Guarded, ctx context.Context, op string, write bool, fn func(context.Context) error) error {
	t := &errTask{fn: fn}
	if err := g.call(ctx, op, write, t); err != nil {
		return err
	}
	g.note(t.err)
	return t.err
}

// read runs a read that a backend with MemoryReads answers without waiting
// on its engine: then inline, with no worker and no deadline to enforce.
func read[T any](g *Guarded, ctx context.Context, op string, fn func(context.Context) (T, error)) (T, error) {
	if g.caps.MemoryReads {
		return fn(ctx)
	}
	return run(g, ctx, op, false, fn)
}

// pair carries a call's two results through run.
type pair[A, B any] struct {
	a A
	b B
}

// run2 is run for a call with two results and an error.
func run2[A, B any](g *Guarded, ctx context.Context, op string, write bool, fn func(context.Context) (A, B, error)) (A, B, error) {
	p, err := run(g, ctx, op, write, func(ctx context.Context) (pair[A, B], error) {
		a, b, err := fn(ctx)
		return pair[A, B]{a, b}, err
	})
	return p.a, p.b, err
}

func (g *Guarded) CreateTopic(ctx context.Context, stream, topic string, partitions int32) (TopicInfo, error) {
	return run(g, ctx, "create_topic", true, func(ctx context.Context) (TopicInfo, error) {
		return g.inner.CreateTopic(ctx, stream, topic, partitions)
	})
}

func (g *Guarded) CreateTopicWithConfigs(ctx context.Context, stream, topic string, partitions int32, cfg TopicConfigs) (TopicInfo, error) {
	return run(g, ctx, "create_topic", true, func(ctx context.Context) (TopicInfo, error) {
		return g.inner.CreateTopicWithConfigs(ctx, stream, topic, partitions, cfg)
	})
}

func (g *Guarded) DeleteTopic(ctx context.Context, stream, topic string) error {
	return do(g, ctx, "delete_topic", true, func(ctx context.Context) error { return g.inner.DeleteTopic(ctx, stream, topic) })
}

func (g *Guarded) Topic(ctx context.Context, stream, topic string) (TopicInfo, error) {
	return read(g, ctx, "topic", func(ctx context.Context) (TopicInfo, error) { return g.inner.Topic(ctx, stream, topic) })
}

func (g *Guarded) Topics(ctx context.Context, stream string) ([]TopicInfo, error) {
	return read(g, ctx, "topics", func(ctx context.Context) ([]TopicInfo, error) { return g.inner.Topics(ctx, stream) })
}

func (g *Guarded) TopicState(ctx context.Context, stream, topic string) (TopicInfo, []PartitionState, error) {
	if g.caps.MemoryReads {
		return g.inner.TopicState(ctx, stream, topic)
	}
	// Every Fetch of an Iggy gateway asks it per topic: one closure, as
	// Append (no run2 layer).
	st, err := run(g, ctx, "topic_state", false, func(ctx context.Context) (pair[TopicInfo, []PartitionState], error) {
		ti, states, err := g.inner.TopicState(ctx, stream, topic)
		return pair[TopicInfo, []PartitionState]{ti, states}, err
	})
	return st.a, st.b, err
}

func (g *Guarded) GrowPartitions(ctx context.Context, stream, topic string, total int32) (TopicInfo, error) {
	return run(g, ctx, "grow_partitions", true, func(ctx context.Context) (TopicInfo, error) {
		return g.inner.GrowPartitions(ctx, stream, topic, total)
	})
}

func (g *Guarded) PartitionSizes(ctx context.Context, stream, topic string) ([]int64, error) {
	return run(g, ctx, "partition_sizes", false, func(ctx context.Context) ([]int64, error) {
		return g.inner.PartitionSizes(ctx, stream, topic)
	})
}

func (g *Guarded) TopicConfigs(ctx context.Context, stream, topic string) (TopicConfigs, error) {
	return run(g, ctx, "topic_configs", false, func(ctx context.Context) (TopicConfigs, error) {
		return g.inner.TopicConfigs(ctx, stream, topic)
	})
}

func (g *Guarded) SetTopicConfigs(ctx context.Context, stream, topic string, cfg TopicConfigs) error {
	return do(g, ctx, "set_topic_configs", true, func(ctx context.Context) error {
		return g.inner.SetTopicConfigs(ctx, stream, topic, cfg)
	})
}

// Append: an error matching ErrAbandoned means the store may still read
// batch: the caller must drop the buffer, not reuse it.
func (g *Guarded) Append(ctx context.Context, stream, topic string, partition int32, batch []byte) (uint64, error) {
	j := &appendJob{g: g, stream: stream, topic: topic, partition: partition, batch: batch}
	if err := g.call(ctx, "append", true, j); err != nil {
		return 0, err
	}
	g.note(j.err)
	return j.base, j.err
}

// AppendStaged: the write and the wait for durability are each a guarded
// call with its own deadline.
func (g *Guarded) AppendStaged(ctx context.Context, stream, topic string, partition int32, batch []byte, prep Prepared) (uint64, func(context.Context) error, error) {
	j := &appendJob{g: g, stream: stream, topic: topic, partition: partition, batch: batch, prep: prep, staged: true}
	if err := g.call(ctx, "append", true, j); err != nil {
		return 0, nil, err
	}
	g.note(j.err)
	if j.err != nil || j.durable == nil {
		return j.base, nil, j.err
	}
	return j.base, func(ctx context.Context) error { return do(g, ctx, "append_sync", true, j.durable) }, nil
}

// appendJob is an Append or an AppendStaged under the guard: on the
// produce path, so one allocation for the arguments and the results
// rather than a closure and a task.
type appendJob struct {
	g             *Guarded
	stream, topic string
	partition     int32
	batch         []byte
	prep          Prepared
	staged        bool
	base          uint64
	durable       func(context.Context) error
	err           error
}

func (j *appendJob) exec(ctx context.Context) {
	if j.staged {
		j.base, j.durable, j.err = j.g.inner.AppendStaged(ctx, j.stream, j.topic, j.partition, j.batch, j.prep)
		return
	}
	j.base, j.err = j.g.inner.Append(ctx, j.stream, j.topic, j.partition, j.batch)
}

// Poll: fn runs on the call's worker while the caller waits; once the
// call is abandoned fn is never called again, so it never touches the
// caller's state after Poll returned.
func (g *Guarded) Poll(ctx context.Context, stream, topic string, partition int32, from uint64, maxBytes int, fn func(batch []byte) bool) error {
	j := &pollJob{g: g, stream: stream, topic: topic, partition: partition, from: from, maxBytes: maxBytes, fn: fn}
	if err := g.call(ctx, "poll", false, j); err != nil {
		return err
	}
	g.note(j.err)
	return j.err
}

// pollJob is a Poll under the guard: one allocation for the arguments,
// the result and the cut-off of fn.
type pollJob struct {
	g             *Guarded
	stream, topic string
	partition     int32
	from          uint64
	maxBytes      int
	fn            func(batch []byte) bool
	err           error
	mu            sync.Mutex // gone
	gone          bool       // abandoned: fn is not called again
}

func (j *pollJob) exec(ctx context.Context) {
	j.err = j.g.inner.Poll(ctx, j.stream, j.topic, j.partition, j.from, j.maxBytes, j.feed)
}

func (j *pollJob) feed(b []byte) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.gone && j.fn(b)
}

func (j *pollJob) abandoned() {
	j.mu.Lock()
	j.gone = true
	j.mu.Unlock()
}

func (g *Guarded) Partition(ctx context.Context, stream, topic string, partition int32) (PartitionState, error) {
	return read(g, ctx, "partition", func(ctx context.Context) (PartitionState, error) {
		return g.inner.Partition(ctx, stream, topic, partition)
	})
}

func (g *Guarded) OffsetForTimestamp(ctx context.Context, stream, topic string, partition int32, ts uint64) (uint64, bool, error) {
	return run2(g, ctx, "offset_for_timestamp", false, func(ctx context.Context) (uint64, bool, error) {
		return g.inner.OffsetForTimestamp(ctx, stream, topic, partition, ts)
	})
}

func (g *Guarded) DeleteRecords(ctx context.Context, stream, topic string, partition int32, before uint64) (PartitionState, error) {
	return run(g, ctx, "delete_records", true, func(ctx context.Context) (PartitionState, error) {
		return g.inner.DeleteRecords(ctx, stream, topic, partition, before)
	})
}

func (g *Guarded) CommitOffset(ctx context.Context, stream, group, topic string, partition int32, o CommittedOffset) error {
	return do(g, ctx, "commit_offset", true, func(ctx context.Context) error {
		return g.inner.CommitOffset(ctx, stream, group, topic, partition, o)
	})
}

// CommitOffsets is one guarded call when the backend commits a request's
// offsets in one write (BatchedCommits), else one guarded CommitOffset
// each. A call that fails as a whole (deadline, refused) fails every entry.
func (g *Guarded) CommitOffsets(ctx context.Context, stream, group string, offs []GroupOffset) []error {
	if !g.caps.BatchedCommits {
		errs := make([]error, len(offs))
		for i, o := range offs {
			errs[i] = g.CommitOffset(ctx, stream, group, o.Topic, o.Partition, o.CommittedOffset)
		}
		return errs
	}
	errs, err := run(g, ctx, "commit_offsets", true, func(ctx context.Context) ([]error, error) {
		return g.inner.CommitOffsets(ctx, stream, group, offs), nil
	})
	if err != nil {
		errs = make([]error, len(offs))
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

func (g *Guarded) FetchOffset(ctx context.Context, stream, group, topic string, partition int32) (CommittedOffset, bool, error) {
	return run2(g, ctx, "fetch_offset", false, func(ctx context.Context) (CommittedOffset, bool, error) {
		return g.inner.FetchOffset(ctx, stream, group, topic, partition)
	})
}

func (g *Guarded) GroupOffsets(ctx context.Context, stream, group string) ([]GroupOffset, error) {
	return run(g, ctx, "group_offsets", false, func(ctx context.Context) ([]GroupOffset, error) {
		return g.inner.GroupOffsets(ctx, stream, group)
	})
}

func (g *Guarded) DeleteOffset(ctx context.Context, stream, group, topic string, partition int32) error {
	return do(g, ctx, "delete_offset", true, func(ctx context.Context) error {
		return g.inner.DeleteOffset(ctx, stream, group, topic, partition)
	})
}

func (g *Guarded) DeleteGroupOffsets(ctx context.Context, stream, group string) error {
	return do(g, ctx, "delete_group_offsets", true, func(ctx context.Context) error {
		return g.inner.DeleteGroupOffsets(ctx, stream, group)
	})
}

func (g *Guarded) OffsetGroups(ctx context.Context, stream string) ([]string, bool, error) {
	return run2(g, ctx, "offset_groups", false, func(ctx context.Context) ([]string, bool, error) {
		return g.inner.OffsetGroups(ctx, stream)
	})
}

func (g *Guarded) GroupConfigs(ctx context.Context, stream, group string) (GroupConfigs, error) {
	return run(g, ctx, "group_configs", false, func(ctx context.Context) (GroupConfigs, error) {
		return g.inner.GroupConfigs(ctx, stream, group)
	})
}

func (g *Guarded) SetGroupConfigs(ctx context.Context, stream, group string, cfg GroupConfigs) error {
	return do(g, ctx, "set_group_configs", true, func(ctx context.Context) error {
		return g.inner.SetGroupConfigs(ctx, stream, group, cfg)
	})
}

func (g *Guarded) ConfiguredGroups(ctx context.Context, stream string) ([]string, error) {
	return run(g, ctx, "configured_groups", false, func(ctx context.Context) ([]string, error) {
		return g.inner.ConfiguredGroups(ctx, stream)
	})
}

func (g *Guarded) LoadProducerIDMark(ctx context.Context, instance uint16) (uint64, error) {
	return run(g, ctx, "load_producer_mark", false, func(ctx context.Context) (uint64, error) {
		return g.inner.LoadProducerIDMark(ctx, instance)
	})
}

func (g *Guarded) StoreProducerIDMark(ctx context.Context, instance uint16, mark uint64) error {
	return do(g, ctx, "store_producer_mark", true, func(ctx context.Context) error {
		return g.inner.StoreProducerIDMark(ctx, instance, mark)
	})
}

func (g *Guarded) AppendSecurityRecord(ctx context.Context, rec []byte) error {
	return do(g, ctx, "append_security", true, func(ctx context.Context) error { return g.inner.AppendSecurityRecord(ctx, rec) })
}

// ReadSecurityRecords: fn runs on the worker of the inner call; an
// abandoned call's fn may still run after this returns, so callers collect
// into state they own only after a nil error (handlers copy into a fresh
// slice per read).
func (g *Guarded) ReadSecurityRecords(ctx context.Context, from uint64, fn func(rec []byte)) (uint64, error) {
	return run(g, ctx, "read_security", false, func(ctx context.Context) (uint64, error) {
		return g.inner.ReadSecurityRecords(ctx, from, fn)
	})
}

func (g *Guarded) PutTxnStates(ctx context.Context, entries []TxnStateEntry) error {
	return do(g, ctx, "put_txn_states", true, func(ctx context.Context) error { return g.inner.PutTxnStates(ctx, entries) })
}

func (g *Guarded) PutTxnStatesLazy(ctx context.Context, entries []TxnStateEntry) error {
	return do(g, ctx, "put_txn_states", true, func(ctx context.Context) error { return g.inner.PutTxnStatesLazy(ctx, entries) })
}

// TxnStates: fn runs on the worker of the inner call; an abandoned
// call's fn may still run after this returns, so callers collect into
// state they own only after a nil error.
func (g *Guarded) TxnStates(ctx context.Context, fn func(key string, value []byte)) error {
	return do(g, ctx, "txn_states", false, func(ctx context.Context) error { return g.inner.TxnStates(ctx, fn) })
}
