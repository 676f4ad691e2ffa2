package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Sarama (github.com/IBM/sarama), speaking as Kafka 2.8 and as Kafka 4.1:
// its ClusterAdmin creates a topic with configs, lists topics (ListTopics
// asks DescribeConfigs for every topic's configs), describes one topic's
// configs and adds partitions; a SyncProducer writes keyed records with
// headers over the grown topic, a partition consumer reads each back at
// its offset, and a consumer group reads them all and commits.
func TestSarama(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	for _, v := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V4_1_0_0} {
		t.Run("kafka-"+v.String(), func(t *testing.T) {
			testSarama(t, gw.Addr, v)
		})
	}
}

func saramaConfig(v sarama.KafkaVersion) *sarama.Config {
	conf := sarama.NewConfig()
	conf.Version = v
	conf.ClientID = "e2e-sarama"
	conf.Producer.Return.Successes = true
	conf.Producer.RequiredAcks = sarama.WaitForAll
	conf.Consumer.Offsets.Initial = sarama.OffsetOldest
	conf.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	conf.Consumer.Return.Errors = true
	conf.Metadata.AllowAutoTopicCreation = false
	return conf
}

func testSarama(t *testing.T, addr string, v sarama.KafkaVersion) {
	addrs := []string{addr}
	conf := saramaConfig(v)
	topic := "sarama-" + v.String()
	admin, err := sarama.NewClusterAdmin(addrs, conf)
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()

	ret, policy := "3600000", "compact,delete"
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     2,
		ReplicationFactor: 1,
		ConfigEntries:     map[string]*string{"retention.ms": &ret, "cleanup.policy": &policy},
	}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("CreateTopic of an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}

	// ListTopics: partitions and replication factor from Metadata, and the
	// configs the topic sets (Sarama keeps only non-default ones) from
	// DescribeConfigs.
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	td, ok := topics[topic]
	switch {
	case !ok:
		t.Fatalf("ListTopics has no %s: %v", topic, topics)
	case td.NumPartitions != 2 || td.ReplicationFactor != 1:
		t.Errorf("ListTopics %s: %d partitions, replication factor %d; want 2 and 1", topic, td.NumPartitions, td.ReplicationFactor)
	}
	if len(td.ConfigEntries) != 2 || deref(td.ConfigEntries["retention.ms"]) != ret || deref(td.ConfigEntries["cleanup.policy"]) != policy {
		t.Errorf("ListTopics %s configs: %v; want exactly retention.ms=%s cleanup.policy=%s", topic, derefAll(td.ConfigEntries), ret, policy)
	}

	// DescribeConfig: the set configs are the topic's, the rest defaults.
	// Deprecated in Sarama v1.61 for DescribeConfigs, but it is what
	// existing programs call.
	//lint:ignore SA1019 tested on purpose, as programs written for older Sarama call it
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	byName := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	if e := byName["retention.ms"]; e.Value != ret || e.Default || e.Source != sarama.SourceTopic {
		t.Errorf("retention.ms: %+v; want %s set on the topic", e, ret)
	}
	if e := byName["cleanup.policy"]; e.Value != policy || e.Source != sarama.SourceTopic {
		t.Errorf("cleanup.policy: %+v; want %s set on the topic", e, policy)
	}
	if e, ok := byName["retention.bytes"]; !ok || e.Value != "-1" || !e.Default {
		t.Errorf("retention.bytes: %+v (listed %v); want the default -1", e, ok)
	}
	// DescribeConfigs: two resources in one request, named configs only,
	// with synonyms and documentation.
	results, err := admin.DescribeConfigs([]*sarama.ConfigResource{
		{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms"}},
		{Type: sarama.BrokerResource, Name: "1", ConfigNames: []string{"default.replication.factor"}},
	}, sarama.DescribeConfigsOptions{IncludeSynonyms: true, IncludeDocumentation: true})
	if err != nil || len(results) != 2 {
		t.Fatalf("DescribeConfigs: %d results, %v", len(results), err)
	}
	for _, r := range results {
		if r.ErrorCode != sarama.ErrNoError || len(r.Configs) != 1 {
			t.Errorf("DescribeConfigs %s: %v %q, %d configs; want 1", r.Name, r.ErrorCode, r.ErrorMsg, len(r.Configs))
			continue
		}
		e := r.Configs[0]
		if e.Documentation == nil || *e.Documentation == "" {
			t.Errorf("%s: no documentation", e.Name)
		}
		switch r.Type {
		case sarama.TopicResource:
			if e.Name != "retention.ms" || e.Value != ret || len(e.Synonyms) == 0 || e.Synonyms[0].ConfigValue != ret {
				t.Errorf("topic retention.ms: %+v (synonyms %+v); want %s, first synonym the topic's", e, e.Synonyms, ret)
			}
		case sarama.BrokerResource:
			if e.Name != "default.replication.factor" || e.Value != "1" || !e.ReadOnly {
				t.Errorf("broker default.replication.factor: %+v; want 1, read-only", e)
			}
		}
	}

	// CreatePartitions: 2 -> 5; shrinking is refused.
	if err := admin.CreatePartitions(topic, 5, nil, false); err != nil {
		t.Fatalf("CreatePartitions: %v", err)
	}
	if err := admin.CreatePartitions(topic, 3, nil, false); !errors.Is(err, sarama.ErrInvalidPartitions) {
		t.Errorf("CreatePartitions to fewer: %v, want INVALID_PARTITIONS", err)
	}
	md, err := admin.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 || len(md[0].Partitions) != 5 {
		t.Fatalf("DescribeTopics after CreatePartitions: %+v, %v; want 5 partitions", md, err)
	}
	if topics, err := admin.ListTopics(); err != nil || topics[topic].NumPartitions != 5 {
		t.Errorf("ListTopics after CreatePartitions: %d partitions, %v; want 5", topics[topic].NumPartitions, err)
	}

	// SyncProducer over the five partitions (Sarama's hash partitioner).
	producer, err := sarama.NewSyncProducer(addrs, conf)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer producer.Close()
	const n = 40
	type sent struct{ key, value string }
	want := map[int32]map[int64]sent{}
	for i := range n {
		key, value := "k"+strconv.Itoa(i), fmt.Sprintf("value %d of %s", i, topic)
		p, off, err := producer.SendMessage(&sarama.ProducerMessage{
			Topic:   topic,
			Key:     sarama.StringEncoder(key),
			Value:   sarama.StringEncoder(value),
			Headers: []sarama.RecordHeader{{Key: []byte("i"), Value: []byte(strconv.Itoa(i))}},
		})
		if err != nil {
			t.Fatalf("SendMessage %d: %v", i, err)
		}
		if want[p] == nil {
			want[p] = map[int64]sent{}
		}
		if _, dup := want[p][off]; dup {
			t.Fatalf("two records acknowledged at %d/%d", p, off)
		}
		want[p][off] = sent{key, value}
	}
	if len(want) < 3 {
		t.Errorf("40 keys landed on %d of 5 partitions", len(want))
	}
	for p, offs := range want {
		for off := range int64(len(offs)) {
			if _, ok := offs[off]; !ok {
				t.Errorf("partition %d: offsets not 0..%d: %v", p, len(offs)-1, offs)
				break
			}
		}
	}

	// A partition consumer reads every record back at its offset.
	consumer, err := sarama.NewConsumer(addrs, conf)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer consumer.Close()
	for p, offs := range want {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition %d: %v", p, err)
		}
		for range offs {
			select {
			case m := <-pc.Messages():
				w := offs[m.Offset]
				if string(m.Key) != w.key || string(m.Value) != w.value || len(m.Headers) != 1 || string(m.Headers[0].Key) != "i" {
					t.Errorf("%d/%d: key %q value %q headers %d; want %q %q", p, m.Offset, m.Key, m.Value, len(m.Headers), w.key, w.value)
				}
			case err := <-pc.Errors():
				t.Fatalf("partition %d: %v", p, err)
			case <-time.After(30 * time.Second):
				t.Fatalf("partition %d: records not read back within 30s", p)
			}
		}
		if hwm := pc.HighWaterMarkOffset(); hwm != int64(len(offs)) {
			t.Errorf("partition %d: high watermark %d, want %d", p, hwm, len(offs))
		}
		pc.AsyncClose()
	}

	// A consumer group reads them all and commits; the committed offsets
	// are each partition's end.
	group := "sarama-group-" + v.String()
	cg, err := sarama.NewConsumerGroup(addrs, group, conf)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	h := &saramaHandler{seen: map[string]bool{}, all: make(chan struct{}), want: n}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case <-h.all:
	case err := <-done:
		t.Fatalf("consumer group: %v", err)
	case <-ctx.Done():
		t.Fatalf("the consumer group saw %d of %d records in 60s", h.count(), n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("consumer group: %v", err)
	}
	if err := cg.Close(); err != nil { // commits what was marked
		t.Fatalf("closing the consumer group: %v", err)
	}
	parts := map[string][]int32{topic: {0, 1, 2, 3, 4}}
	offsets, err := admin.ListConsumerGroupOffsets(group, parts)
	if err != nil {
		t.Fatalf("ListConsumerGroupOffsets: %v", err)
	}
	for p := range int32(5) {
		b := offsets.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError || b.Offset != int64(len(want[p])) {
			t.Errorf("committed offset of %d: %+v, want %d", p, b, len(want[p]))
		}
	}
}

// saramaHandler marks every record and closes all once want distinct
// records were seen.
type saramaHandler struct {
	mu   sync.Mutex
	seen map[string]bool
	want int
	all  chan struct{}
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		s.MarkMessage(m, "")
		h.mu.Lock()
		before := len(h.seen)
		h.seen[string(m.Key)] = true
		if before < h.want && len(h.seen) == h.want {
			close(h.all)
		}
		h.mu.Unlock()
	}
	return nil
}

func (h *saramaHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func derefAll(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = deref(v)
	}
	return out
}
