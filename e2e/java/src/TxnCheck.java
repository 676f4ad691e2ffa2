// Kafka transactions through the Java client, for the e2e tests of
// --transactions enabled (e2e/txn_java_test.go).
//
// Usage:
//   TxnCheck commit-abort BOOTSTRAP TXNID TOPIC_A TOPIC_B
//     Three transactions of 20 records each over 2 partitions of each
//     topic: committed, aborted, committed. Then reads both topics from the
//     start read_committed and read_uncommitted and prints
//     "COMMITTED n aborted-seen k" and "UNCOMMITTED n".
//   TxnCheck fence BOOTSTRAP TXNID TOPIC
//     Two producers with one transactional id: the second's
//     initTransactions fences the first, whose commit must fail with
//     ProducerFencedException: prints "FENCED" then, after the second
//     commits, "SECOND-COMMITTED".
//   TxnCheck ctp BOOTSTRAP TXNID GROUP INPUT OUTPUT N
//     Consume-transform-produce: reads INPUT in group GROUP (read_committed,
//     no auto commit), writes each value with "out-" before it to OUTPUT in
//     a transaction with the consumer's offsets (sendOffsetsToTransaction),
//     committing every poll, until N records were processed in total by
//     the group (its committed offsets say), then prints "CTP-DONE".

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnCheck {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "30000");
        p.put("request.timeout.ms", "15000");
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        if (group != null) {
            p.put("group.id", group);
        }
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    // readAll reads the partitions from the start to their end offsets as
    // the isolation level sees them and returns the values.
    static List<String> readAll(String bootstrap, String isolation, List<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(bootstrap, null, isolation)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (c.position(tp) < end.get(tp)) {
                        done = false;
                    }
                }
                if (done) {
                    break;
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r.value());
                }
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "commit-abort": commitAbort(args[1], args[2], args[3], args[4]); break;
            case "fence": fence(args[1], args[2], args[3]); break;
            case "ctp": ctp(args[1], args[2], args[3], args[4], args[5], Integer.parseInt(args[6])); break;
            default: throw new IllegalArgumentException(args[0]);
        }
    }

    static void commitAbort(String bootstrap, String txnId, String a, String b) {
        try (KafkaProducer<String, String> p = producer(bootstrap, txnId)) {
            p.initTransactions();
            String[] tags = {"committed", "aborted", "last"};
            for (String tag : tags) {
                p.beginTransaction();
                for (int i = 0; i < 20; i++) {
                    String topic = i % 2 == 0 ? a : b;
                    p.send(new ProducerRecord<>(topic, (i / 2) % 2, null, tag + "-" + i));
                }
                if (tag.equals("aborted")) {
                    p.flush();
                    p.abortTransaction();
                } else {
                    p.commitTransaction();
                }
            }
        }
        List<TopicPartition> tps = List.of(new TopicPartition(a, 0), new TopicPartition(a, 1),
            new TopicPartition(b, 0), new TopicPartition(b, 1));
        List<String> committed = readAll(bootstrap, "read_committed", tps);
        int abortedSeen = 0;
        for (String v : committed) {
            if (v.startsWith("aborted")) {
                abortedSeen++;
            }
        }
        say("COMMITTED " + committed.size() + " aborted-seen " + abortedSeen);
        say("UNCOMMITTED " + readAll(bootstrap, "read_uncommitted", tps).size());
    }

    static void fence(String bootstrap, String txnId, String topic) {
        KafkaProducer<String, String> first = producer(bootstrap, txnId);
        first.initTransactions();
        first.beginTransaction();
        first.send(new ProducerRecord<>(topic, "zombie"));
        first.flush();
        try (KafkaProducer<String, String> second = producer(bootstrap, txnId)) {
            second.initTransactions();
            try {
                first.commitTransaction();
                say("NOT-FENCED");
            } catch (ProducerFencedException e) {
                say("FENCED");
            } catch (Exception e) {
                say("OTHER " + e);
            }
            first.close(Duration.ofSeconds(5));
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, "winner"));
            second.commitTransaction();
            say("SECOND-COMMITTED");
        }
        List<String> got = readAll(bootstrap, "read_committed", List.of(new TopicPartition(topic, 0)));
        say("READ " + String.join(",", got));
    }

    static void ctp(String bootstrap, String txnId, String group, String input, String output, int n) {
        try (KafkaProducer<String, String> p = producer(bootstrap, txnId);
             KafkaConsumer<String, String> c = consumer(bootstrap, group, "read_committed")) {
            p.initTransactions();
            c.subscribe(List.of(input));
            long deadline = System.currentTimeMillis() + 120000;
            long processed = 0;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) {
                    if (committedTotal(c, input) >= n) {
                        break;
                    }
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                for (ConsumerRecord<String, String> r : rs) {
                    p.send(new ProducerRecord<>(output, r.key(), "out-" + r.value()));
                    offs.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    processed++;
                }
                p.sendOffsetsToTransaction(offs, c.groupMetadata());
                p.commitTransaction();
            }
            say("CTP-DONE processed " + processed);
        }
    }

    static long committedTotal(KafkaConsumer<String, String> c, String topic) {
        long total = 0;
        var parts = c.partitionsFor(topic);
        java.util.Set<TopicPartition> tps = new java.util.HashSet<>();
        for (var pi : parts) {
            tps.add(new TopicPartition(topic, pi.partition()));
        }
        for (var e : c.committed(tps).entrySet()) {
            if (e.getValue() != null) {
                total += e.getValue().offset();
            }
        }
        return total;
    }
}
