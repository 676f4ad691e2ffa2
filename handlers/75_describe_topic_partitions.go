// DescribeTopicPartitions: v0-0
//
// Behavior:
//   - The Java admin client's describeTopics by name (kafka-topics
//     --describe) since Kafka 3.8. Answered as a KRaft broker does: the
//     topics named (duplicates once), or with none named every topic of
//     Cfg.Stream, in name order, from the cursor's topic on (names below it
//     are left out); the cursor's topic starts at the cursor's partition.
//   - Pagination: at most ResponsePartitionLimit partitions (clamped to
//     1..2000, Kafka's max.request.partition.size.limit default) over the
//     whole answer. A topic cut short is answered with the partitions that
//     fit and NextCursor names the topic and its next partition; when the
//     limit is reached exactly, NextCursor names the next topic and
//     partition 0. A cursor past a topic's partitions answers the topic
//     with none.
//   - Partitions as Metadata places them (Call.leadership): led by this
//     gateway with leader epoch 0, or in cluster mode by each partition's
//     leader with the view's epoch; replicas = ISR = [leader], no offline
//     replicas, and empty (never null) eligible leader replicas and last
//     known ELR (KIP-966: there is no ELR without replicas to elect).
//     Topic ids as Metadata hands them out; is_internal false (there are no
//     internal topics), except on the error answer for one of Kafka's
//     internal names, where Kafka sets it from the name.
//   - Topic authorized operations (KIP-430) always filled, also on topics
//     answered with an error.
//   - Errors, per topic, as Kafka: a named topic unknown is
//     UNKNOWN_TOPIC_OR_PARTITION, an impossible name INVALID_TOPIC_EXCEPTION
//     (neither counts against the limit; nothing is auto-created); without
//     DESCRIBE on a named topic TOPIC_AUTHORIZATION_FAILED, zero topic id,
//     listed after the others (with none named such topics are left out). A
//     cursor naming a topic not among the named ones, or a negative
//     partition, is INVALID_REQUEST on every named topic and no cursor.
//     A transient store failure on a named topic is LEADER_NOT_AVAILABLE
//     (as Metadata); a failed listing of all topics closes the connection
//     (clients retry a dropped connection).
//
// Version notes:
//   - v0 (KIP-966) is the only version.

package handlers

import (
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 75, MinVersion: 0, MaxVersion: 0, Handle: typed(describeTopicPartitions)})
}

// maxDescribePartitions is Kafka's max.request.partition.size.limit
// default: the most partitions one DescribeTopicPartitions answer holds.
const maxDescribePartitions = 2000

// noReplicas is an empty, non-null replica list, shared read-only.
var noReplicas = []int32{}

// describedTopic is one topic a DescribeTopicPartitions answer covers:
// the listing's entry (with none named), or a named one looked up.
type describedTopic struct {
	name   string
	ti     bridge.TopicInfo
	listed bool
}

func describeTopicPartitions(c *Call, req *kmsg.DescribeTopicPartitionsRequest, resp *kmsg.DescribeTopicPartitionsResponse) (kmsg.Response, error) {
	cur := req.Cursor
	topics, bad, err := c.describedTopics(req.Topics, cur)
	if err != nil {
		return nil, err
	}
	if bad || cur != nil && cur.Partition < 0 {
		return invalidDescribeTopics(req, resp), nil
	}

	c.metaView = c.G.Cfg.Cluster.View() // nil: one node
	l := c.leadership()
	limit := min(max(req.ResponsePartitionLimit, 1), maxDescribePartitions)
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	for _, dt := range topics {
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, dt.name) {
			if len(req.Topics) > 0 {
				t := kmsg.NewDescribeTopicPartitionsResponseTopic()
				t.ErrorCode, t.Topic, t.Partitions = kerr.TopicAuthorizationFailed.Code, strp(dt.name), []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
				denied = append(denied, t)
			}
			continue
		}
		if limit == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: dt.name}
			break
		}
		t := kmsg.NewDescribeTopicPartitionsResponseTopic()
		t.Topic = strp(dt.name)
		t.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeTopic, dt.name, topicOps)
		ti, code := dt.ti, int16(0)
		if !dt.listed {
			ti, code = c.lookupDescribed(dt.name)
		}
		if code != 0 {
			t.ErrorCode, t.Partitions = code, []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			t.IsInternal = kafkaInternalTopic(dt.name) // Kafka's flag on the name, topic or not
			resp.Topics = append(resp.Topics, t)
			continue
		}
		first := int32(0)
		if cur != nil && dt.name == cur.Topic {
			first = cur.Partition
		}
		// In int64: a cursor partition near MaxInt32 must not wrap.
		end := min(int64(first)+int64(limit), int64(ti.Partitions))
		t.TopicID = c.G.topicNames.idOf(ti)
		t.Partitions = make([]kmsg.DescribeTopicPartitionsResponseTopicPartition, 0, max(end-int64(first), 0))
		for p := first; int64(p) < end; p++ {
			tp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			tp.Partition = p
			tp.LeaderID, tp.Replicas = l.of(dt.name, p)
			tp.LeaderEpoch, tp.ISR = l.epoch, tp.Replicas
			tp.EligibleLeaderReplicas, tp.LastKnownELR, tp.OfflineReplicas = noReplicas, noReplicas, noReplicas
			t.Partitions = append(t.Partitions, tp)
		}
		resp.Topics = append(resp.Topics, t)
		if end < int64(ti.Partitions) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: dt.name, Partition: int32(end)}
			break
		}
		limit -= int32(len(t.Partitions))
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp, nil
}

// describedTopics is what a DescribeTopicPartitions request covers, in
// name order, from the cursor's topic on: every topic of the stream when
// none is named, else the named ones, each once. bad reports a cursor
// whose topic is not among the named ones. A failed listing is a Go error
// (the connection closes, as Metadata's).
func (c *Call) describedTopics(named []kmsg.DescribeTopicPartitionsRequestTopic, cur *kmsg.DescribeTopicPartitionsRequestCursor) (ts []describedTopic, bad bool, err error) {
	from := ""
	if cur != nil {
		from = cur.Topic
	}
	if len(named) == 0 {
		all, err := c.sortedTopics()
		if err != nil {
			return nil, false, fmt.Errorf("describe topic partitions: list topics: %w", err)
		}
		for _, ti := range all {
			if ti.Name >= from {
				ts = append(ts, describedTopic{name: ti.Name, ti: ti, listed: true})
			}
		}
		return ts, false, nil
	}
	seen := make(map[string]bool, len(named))
	for _, rt := range named {
		if rt.Topic >= from && !seen[rt.Topic] {
			seen[rt.Topic] = true
			ts = append(ts, describedTopic{name: rt.Topic})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
	return ts, cur != nil && !seen[from], nil
}

// lookupDescribed finds a named topic (never auto-created) or says why
// not: INVALID_TOPIC_EXCEPTION for a name Kafka could not hold,
// UNKNOWN_TOPIC_OR_PARTITION for a missing one, else the store failure
// as Metadata answers it.
func (c *Call) lookupDescribed(name string) (bridge.TopicInfo, int16) {
	if !validTopicName(name) {
		return bridge.TopicInfo{}, kerr.InvalidTopicException.Code
	}
	ti, err := c.topic(name, false)
	if errors.Is(err, bridge.ErrTopicNotFound) {
		return ti, kerr.UnknownTopicOrPartition.Code
	}
	return ti, errCode(err, opMeta)
}

// invalidDescribeTopics is Kafka's answer to a bad cursor: every named
// topic, in request order, INVALID_REQUEST.
func invalidDescribeTopics(req *kmsg.DescribeTopicPartitionsRequest, resp *kmsg.DescribeTopicPartitionsResponse) kmsg.Response {
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeTopicPartitionsResponseTopic()
		t.ErrorCode, t.Topic, t.Partitions = kerr.InvalidRequest.Code, strp(rt.Topic), []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
