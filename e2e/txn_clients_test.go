package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The transactional producers of librdkafka, kafkajs and Sarama against a
// gateway with --transactions enabled (transaction.version 2 finalized:
// none of them speaks KIP-890, so they use the version 1 protocol, as
// against Kafka 4.x).

// TestTransactionsConfluentKcat: confluent-kafka-python (librdkafka)
// commits, aborts, and commits with the group's offsets
// (e2e/python/confluent_txn_check.py); its read_committed consumer skips
// the aborted records. kcat, also librdkafka, reads the topic
// read_committed (its default) and read_uncommitted.
func TestTransactionsConfluentKcat(t *testing.T) {
	t.Parallel()
	py := needPython(t, "confluent_kafka", "python3-confluent-kafka")
	gw := startGateway(t, withTransactions(2))
	const topic = "py-txn"
	createTopic(t, newClient(t, gw.Addr), topic, 2)
	runClientCheck(t, py, "python/confluent_txn_check.py", gw.Addr, topic, topic+"-group", []string{
		"init_transactions",
		"committed 40",
		"aborted 40",
		"committed 40 with the group's offsets [7, 9]",
		"read_committed 80, no aborted record; high watermarks [63, 63]",
		"read_uncommitted 120",
	})
	for p, want := range []int64{7, 9} {
		if o := committedOffset(t, gw.Addr, topic+"-group", topic, int32(p)); o != want {
			t.Errorf("group offset of %s/%d: %d, want %d", topic, p, o, want)
		}
	}

	kcat := needKcat(t)
	read := func(iso string) []string {
		out, errOut, err := runCmd(t, 30*time.Second, "", kcat, "-b", gw.Addr, "-C", "-t", topic,
			"-o", "beginning", "-e", "-q", "-X", "isolation.level="+iso, "-f", "%s\n")
		if err != nil {
			t.Fatalf("kcat -C %s: %v\nstderr: %s", iso, err, errOut)
		}
		return strings.Fields(out)
	}
	committed := read("read_committed")
	checkTxnValues(t, "kcat read_committed", committed, []string{"committed", "last"}, 2, 20)
	if all := read("read_uncommitted"); len(all) != 120 {
		t.Errorf("kcat read_uncommitted read %d records, want 120", len(all))
	}
}

// checkTxnValues fails t unless values, in any order, are exactly tag-i
// for each tag of tags and each i below parts*n (n records of each
// transaction to each partition, as the producers here write them).
func checkTxnValues(t *testing.T, what string, values, tags []string, parts, n int) {
	t.Helper()
	var want []string
	for _, tag := range tags {
		for i := range parts * n {
			want = append(want, fmt.Sprintf("%s-%d", tag, i))
		}
	}
	got := append([]string(nil), values...)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: %d records %v, want %d %v", what, len(got), got, len(want), want)
	}
}

// TestTransactionsKafkajs: kafkajs commits, aborts, and commits with
// sendOffsets (e2e/js/kafkajs_txn_check.js); its consumer (read_committed
// by default) skips the aborted records, a readUncommitted one sees them.
func TestTransactionsKafkajs(t *testing.T) {
	t.Parallel()
	node := needKafkajs(t)
	gw := startGateway(t, withTransactions(2))
	const topic = "js-txn"
	createTopic(t, newClient(t, gw.Addr), topic, 2)
	runClientCheck(t, node, filepath.Join(kafkajsDir, "kafkajs_txn_check.js"), gw.Addr, topic, topic+"-group", []string{
		"connect (InitProducerId with a transactional id)",
		"committed 40",
		"aborted 40",
		"committed 40 with the group's offsets [7, 9]; ends [63,63]",
		"read_committed 80, no aborted record",
		"read_uncommitted 120",
	})
	if got := readAll(t, gw.Addr, kgo.ReadCommitted(), 80, topic); len(got) != 80 {
		t.Errorf("franz-go read_committed after kafkajs: %d records, want 80", len(got))
	}
}

// TestTransactionsSarama: Sarama's transactional producer (speaking as
// Kafka 2.8 and as 4.1) commits one transaction with the group's offsets
// (AddOffsetsToTxn) and aborts the next; its read_committed consumer reads
// exactly the committed records, and a read_uncommitted one all of them.
func TestTransactionsSarama(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withTransactions(2))
	for _, v := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V4_1_0_0} {
		t.Run("kafka-"+v.String(), func(t *testing.T) {
			topic := "sarama-txn-" + v.String()
			createTopic(t, newClient(t, gw.Addr), topic, 2)
			conf := saramaConfig(v)
			conf.Producer.Idempotent = true
			conf.Producer.Transaction.ID = topic + "-txn"
			conf.Producer.Partitioner = sarama.NewManualPartitioner
			conf.Net.MaxOpenRequests = 1
			p, err := sarama.NewSyncProducer([]string{gw.Addr}, conf)
			if err != nil {
				t.Fatalf("NewSyncProducer (InitProducerId with a transactional id): %v", err)
			}
			defer p.Close()
			const n = 10
			send := func(tag string) {
				t.Helper()
				if err := p.BeginTxn(); err != nil {
					t.Fatalf("BeginTxn: %v", err)
				}
				for i := range 2 * n {
					if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(i % 2), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", tag, i))}); err != nil {
						t.Fatalf("SendMessage %s-%d: %v", tag, i, err)
					}
				}
			}
			send("committed")
			group := topic + "-group"
			if err := p.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{
				topic: {{Partition: 0, Offset: 5}, {Partition: 1, Offset: 6}},
			}, group); err != nil {
				t.Fatalf("AddOffsetsToTxn: %v", err)
			}
			if err := p.CommitTxn(); err != nil {
				t.Fatalf("CommitTxn: %v", err)
			}
			send("aborted")
			if err := p.AbortTxn(); err != nil {
				t.Fatalf("AbortTxn: %v", err)
			}
			if p.TxnStatus()&sarama.ProducerTxnFlagReady == 0 {
				t.Errorf("producer status after abort: %v, want ready", p.TxnStatus())
			}
			for part, want := range []int64{5, 6} {
				if o := committedOffset(t, gw.Addr, group, topic, int32(part)); o != want {
					t.Errorf("group offset of %s/%d: %d, want %d", topic, part, o, want)
				}
			}

			checkTxnValues(t, "Sarama read_committed", saramaRead(t, gw.Addr, v, topic, sarama.ReadCommitted, 2*n), []string{"committed"}, 2, n)
			if all := saramaRead(t, gw.Addr, v, topic, sarama.ReadUncommitted, 4*n); len(all) != 4*n {
				t.Errorf("Sarama read_uncommitted: %d records, want %d", len(all), 4*n)
			}
		})
	}
}

// saramaRead reads both partitions of topic from the start with Sarama's
// partition consumer at isolation level iso until want records came (or
// 30 s passed), then a moment more for any beyond want.
func saramaRead(t *testing.T, addr string, v sarama.KafkaVersion, topic string, iso sarama.IsolationLevel, want int) []string {
	t.Helper()
	conf := saramaConfig(v)
	conf.Consumer.IsolationLevel = iso
	conf.Consumer.MaxWaitTime = 200 * time.Millisecond
	c, err := sarama.NewConsumer([]string{addr}, conf)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	msgs, done := make(chan *sarama.ConsumerMessage), make(chan struct{})
	var pcs []sarama.PartitionConsumer
	defer func() {
		close(done) // the readers below stop sending, so the partition consumers drain
		for _, pc := range pcs {
			pc.Close()
		}
	}()
	for p := range int32(2) {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition %d: %v", p, err)
		}
		pcs = append(pcs, pc)
		go func() {
			for m := range pc.Messages() {
				select {
				case msgs <- m:
				case <-done:
				}
			}
		}()
	}
	var got []string
	deadline := time.After(30 * time.Second)
	for settle := (<-chan time.Time)(nil); ; {
		if len(got) >= want && settle == nil {
			settle = time.After(time.Second)
		}
		select {
		case m := <-msgs:
			got = append(got, string(m.Value))
		case <-settle:
			return got
		case <-deadline:
			return got
		}
	}
}
