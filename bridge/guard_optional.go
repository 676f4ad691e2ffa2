package bridge

import (
	"context"
	"errors"
	"sort"
)

// The optional store interfaces handlers find by type assertion
// (TopicConfigStore, OffsetBatchCommitter, ...) must be implemented by
// Guarded too, or a guarded gateway would silently lose the feature. Each
// method runs the inner store's call under the guard when the inner store
// has it, and otherwise answers as a store without the feature would.
// Any goroutine.

var _ TopicConfigStore = (*Guarded)(nil)

// CreateTopicWithConfigs implements TopicConfigStore. A store that keeps
// no configs creates the topic only when none are asked for.
func (g *Guarded) CreateTopicWithConfigs(ctx context.Context, stream, topic string, partitions int32, cfg TopicConfigs) (TopicInfo, error) {
	cs, ok := g.inner.(TopicConfigStore)
	if !ok {
		if len(cfg) > 0 {
			return TopicInfo{}, notKept(cfg)
		}
		return g.CreateTopic(ctx, stream, topic, partitions)
	}
	return run(g, ctx, "create_topic", true, nil, func(ctx context.Context) (TopicInfo, error) {
		return cs.CreateTopicWithConfigs(ctx, stream, topic, partitions, cfg)
	})
}

// TopicConfigs implements TopicConfigStore: none set on a store that keeps
// none.
func (g *Guarded) TopicConfigs(ctx context.Context, stream, topic string) (TopicConfigs, error) {
	cs, ok := g.inner.(TopicConfigStore)
	if !ok {
		_, err := g.Topic(ctx, stream, topic)
		return nil, err
	}
	return run(g, ctx, "topic_configs", false, nil, func(ctx context.Context) (TopicConfigs, error) {
		return cs.TopicConfigs(ctx, stream, topic)
	})
}

var _ GroupConfigStore = (*Guarded)(nil)

// GroupConfigs implements GroupConfigStore: none on a store that keeps
// none.
func (g *Guarded) GroupConfigs(ctx context.Context, stream, group string) (GroupConfigs, error) {
	cs, ok := g.inner.(GroupConfigStore)
	if !ok {
		return nil, nil
	}
	return run(g, ctx, "group_configs", false, nil, func(ctx context.Context) (GroupConfigs, error) {
		return cs.GroupConfigs(ctx, stream, group)
	})
}

// ConfiguredGroups implements GroupConfigStore: none on a store that
// keeps none.
func (g *Guarded) ConfiguredGroups(ctx context.Context, stream string) ([]string, error) {
	cs, ok := g.inner.(GroupConfigStore)
	if !ok {
		return nil, nil
	}
	return run(g, ctx, "configured_groups", false, nil, func(ctx context.Context) ([]string, error) {
		return cs.ConfiguredGroups(ctx, stream)
	})
}

// SetGroupConfigs implements GroupConfigStore.
func (g *Guarded) SetGroupConfigs(ctx context.Context, stream, group string, cfg GroupConfigs) error {
	cs, ok := g.inner.(GroupConfigStore)
	if !ok {
		if len(cfg) > 0 {
			return notKept(cfg, "group")
		}
		return nil
	}
	_, err := run(g, ctx, "set_group_configs", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, cs.SetGroupConfigs(ctx, stream, group, cfg)
	})
	return err
}

// SetTopicConfigs implements TopicConfigStore.
func (g *Guarded) SetTopicConfigs(ctx context.Context, stream, topic string, cfg TopicConfigs) error {
	cs, ok := g.inner.(TopicConfigStore)
	if !ok {
		if len(cfg) > 0 {
			return notKept(cfg)
		}
		return nil
	}
	_, err := run(g, ctx, "set_topic_configs", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, cs.SetTopicConfigs(ctx, stream, topic, cfg)
	})
	return err
}

// notKept names the first config (by name, so the answer is stable) of
// cfg that a store without config keeping refuses.
func notKept(cfg TopicConfigs, what ...string) error {
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	kind := "topic"
	if len(what) > 0 {
		kind = what[0]
	}
	return &ConfigError{Name: names[0], Reason: "this store keeps no " + kind + " configs"}
}

// ErrNotSupported is a guarded call to an optional store feature the
// wrapped store lacks.
var ErrNotSupported = errors.New("bridge: the store does not support this")

var (
	_ TopicStater     = (*Guarded)(nil)
	_ PartitionGrower = (*Guarded)(nil)
	_ RecordDeleter   = (*Guarded)(nil)
	_ SizeReporter    = (*Guarded)(nil)
)

// GrowPartitions implements PartitionGrower.
func (g *Guarded) GrowPartitions(ctx context.Context, stream, topic string, total int32) (TopicInfo, error) {
	pg, ok := g.inner.(PartitionGrower)
	if !ok {
		return TopicInfo{}, ErrNotSupported
	}
	return run(g, ctx, "grow_partitions", true, nil, func(ctx context.Context) (TopicInfo, error) {
		return pg.GrowPartitions(ctx, stream, topic, total)
	})
}

// DeleteRecords implements RecordDeleter.
func (g *Guarded) DeleteRecords(ctx context.Context, stream, topic string, partition int32, before uint64) (PartitionState, error) {
	rd, ok := g.inner.(RecordDeleter)
	if !ok {
		return PartitionState{}, ErrNotSupported
	}
	return run(g, ctx, "delete_records", true, nil, func(ctx context.Context) (PartitionState, error) {
		return rd.DeleteRecords(ctx, stream, topic, partition, before)
	})
}

// PartitionSizes implements SizeReporter.
func (g *Guarded) PartitionSizes(ctx context.Context, stream, topic string) ([]int64, error) {
	sr, ok := g.inner.(SizeReporter)
	if !ok {
		return nil, ErrNotSupported
	}
	return run(g, ctx, "partition_sizes", false, nil, func(ctx context.Context) ([]int64, error) {
		return sr.PartitionSizes(ctx, stream, topic)
	})
}

var _ TrimNotifier = (*Guarded)(nil)

// OnTrim implements TrimNotifier; a store without it never trims by
// itself, so fn is never called. Registration touches no disk, so it runs
// outside the guard.
func (g *Guarded) OnTrim(fn func(stream, topic string, partition int32)) {
	if tn, ok := g.inner.(TrimNotifier); ok {
		tn.OnTrim(fn)
	}
}

var _ SecurityLog = (*Guarded)(nil)

// AppendSecurityRecord implements SecurityLog.
func (g *Guarded) AppendSecurityRecord(ctx context.Context, rec []byte) error {
	sl, ok := g.inner.(SecurityLog)
	if !ok {
		return ErrNotSupported
	}
	_, err := run(g, ctx, "append_security", true, nil, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, sl.AppendSecurityRecord(ctx, rec)
	})
	return err
}

// ReadSecurityRecords implements SecurityLog: an empty log on a store
// without one. fn runs on the goroutine of the inner call; an abandoned
// call's fn may still run after this returns, so callers collect into
// state they own only after a nil error (handlers copy into a fresh
// slice per read).
func (g *Guarded) ReadSecurityRecords(ctx context.Context, from uint64, fn func(rec []byte)) (uint64, error) {
	sl, ok := g.inner.(SecurityLog)
	if !ok {
		return from, nil
	}
	return run(g, ctx, "read_security", false, nil, func(ctx context.Context) (uint64, error) {
		return sl.ReadSecurityRecords(ctx, from, fn)
	})
}

// TopicState implements TopicStater; ErrNotSupported when the wrapped
// store lacks it (AsTopicStater says so before a call).
func (g *Guarded) TopicState(ctx context.Context, stream, topic string) (TopicInfo, []PartitionState, error) {
	ts, ok := g.inner.(TopicStater)
	if !ok {
		return TopicInfo{}, nil, ErrNotSupported
	}
	type answer struct {
		ti     TopicInfo
		states []PartitionState
	}
	a, err := run(g, ctx, "topic_state", false, nil, func(ctx context.Context) (answer, error) {
		ti, states, err := ts.TopicState(ctx, stream, topic)
		return answer{ti, states}, err
	})
	return a.ti, a.states, err
}

var _ StagedAppender = (*Guarded)(nil)

// AppendStaged implements StagedAppender: the write and the wait for
// durability are each a guarded call with its own deadline. Over a store
// without it, it is Append (durable nil).
func (g *Guarded) AppendStaged(ctx context.Context, stream, topic string, partition int32, batch []byte, prep Prepared) (uint64, func(context.Context) error, error) {
	sa, ok := g.inner.(StagedAppender)
	if !ok {
		base, err := g.Append(ctx, stream, topic, partition, batch)
		return base, nil, err
	}
	type staged struct {
		base    uint64
		durable func(context.Context) error
	}
	st, err := run(g, ctx, "append", true, nil, func(ctx context.Context) (staged, error) {
		base, durable, err := sa.AppendStaged(ctx, stream, topic, partition, batch, prep)
		return staged{base, durable}, err
	})
	if err != nil || st.durable == nil {
		return st.base, nil, err
	}
	return st.base, func(ctx context.Context) error {
		_, err := run(g, ctx, "append_sync", true, nil, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, st.durable(ctx)
		})
		return err
	}, nil
}
