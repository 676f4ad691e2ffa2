package bridge

import (
	"context"
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
func notKept(cfg TopicConfigs) error {
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	return &ConfigError{Name: names[0], Reason: "this store keeps no topic configs"}
}
