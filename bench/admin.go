package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminClient is a plain kgo client for topic administration; dial says
// how to reach the brokers beyond their addresses (TLS).
func adminClient(brokers []string, dial ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID("iggy-kafka-bench-admin")}, dial...)...)
}

// CreateTopic creates topic with n partitions (replication factor 1) and
// waits until Metadata lists a leader for every partition. A topic that
// already exists is not an error.
func CreateTopic(ctx context.Context, brokers []string, topic string, n int32, dial ...kgo.Opt) error {
	cl, err := adminClient(brokers, dial...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, n, 1
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	// A KRaft broker answers CreateTopics before the partition leaders are
	// visible in Metadata; clients started now would first see
	// LEADER_NOT_AVAILABLE and back off, which would be counted as the
	// target's time.
	for {
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		md.Topics = append(md.Topics, mt)
		mresp, err := md.RequestWith(ctx, cl)
		if err == nil && len(mresp.Topics) == 1 && mresp.Topics[0].ErrorCode == 0 &&
			int32(len(mresp.Topics[0].Partitions)) == n {
			ready := true
			for _, p := range mresp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					ready = false
				}
			}
			if ready {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leaders yet: %w", topic, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DeleteTopic deletes topic; errors are returned but a missing topic is not
// one.
func DeleteTopic(ctx context.Context, brokers []string, topic string, dial ...kgo.Opt) error {
	cl, err := adminClient(brokers, dial...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteTopicsRequest()
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	req.TopicNames = append(req.TopicNames, topic)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && err != kerr.UnknownTopicOrPartition {
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
	}
	return nil
}

// EndOffsets returns the sum over the partitions of topic of the high
// watermark: how many records it holds if it started empty.
func EndOffsets(ctx context.Context, brokers []string, topic string, partitions int32, dial ...kgo.Opt) (int64, error) {
	cl, err := adminClient(brokers, dial...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := int32(0); p < partitions; p++ {
		pp := kmsg.NewListOffsetsRequestTopicPartition()
		pp.Partition, pp.Timestamp, pp.CurrentLeaderEpoch = p, -1, -1
		t.Partitions = append(t.Partitions, pp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("list offsets %s: %w", topic, err)
	}
	var sum int64
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("list offsets %s/%d: %w", topic, p.Partition, err)
			}
			sum += p.Offset
		}
	}
	return sum, nil
}
