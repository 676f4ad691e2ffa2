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
//   TxnCheck ctp-loop BOOTSTRAP TXNID GROUP INPUT OUTPUT INSTANCE [k=v ...]
//     A consume-transform-produce loop meant to be killed (or to see the
//     gateway killed) at any moment, which runs until its stdin closes and
//     recovers by the Java client's rules: an abortable error aborts the
//     transaction and rewinds the consumer to the group's committed
//     offsets; a fatal one (fenced, out of order sequence, ...) or a failed
//     abort closes producer and consumer and makes new ones (same
//     transactional id, whose initTransactions fences and ends what the
//     old one left). Each transaction is tagged INSTANCE.GEN.SEQ; each
//     output record is "out-VALUE|TAG|N", N the number of the
//     transaction's records on that output partition (records go to the
//     partitions round robin), so a read_committed reader can tell a
//     transaction it sees partly. It prints "READY tag-prefix",
//     "COMMITTING tag count" before commitTransaction, "COMMITTED tag",
//     "ABORTING tag exception", "ABORTED tag", "FATAL tag exception" and
//     "RESTART exception". k=v pairs are extra consumer properties (e.g.
//     group.instance.id). A CommitFailedException (the group does not know
//     the member, as after a gateway restart) also makes it rejoin.

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnCheck {
    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        return producer(bootstrap, txnId, new Properties());
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId, Properties extra) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "30000");
        p.put("request.timeout.ms", "15000");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation) {
        return consumer(bootstrap, group, isolation, new Properties());
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, String isolation, Properties extra) {
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
        p.putAll(extra);
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
            case "ctp-loop": ctpLoop(args); break;
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

    static void ctpLoop(String[] args) throws Exception {
        String bootstrap = args[1], txnId = args[2], group = args[3], input = args[4], output = args[5], instance = args[6];
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        for (int gen = 1; !stop.get(); gen++) {
            Properties pp = new Properties();
            pp.put("transaction.timeout.ms", "20000");
            pp.put("delivery.timeout.ms", "30000");
            pp.put("request.timeout.ms", "5000");
            pp.put("max.block.ms", "20000");
            pp.put("retry.backoff.ms", "100");
            pp.put("reconnect.backoff.max.ms", "500");
            Properties cp = new Properties();
            cp.put("max.poll.records", "40");
            cp.put("session.timeout.ms", "10000");
            cp.put("heartbeat.interval.ms", "1000");
            cp.put("request.timeout.ms", "5000");
            cp.put("default.api.timeout.ms", "20000");
            cp.put("reconnect.backoff.max.ms", "500");
            for (int i = 7; i < args.length; i++) {
                String[] kv = args[i].split("=", 2);
                cp.put(kv[0], kv[1]);
            }
            String prefix = instance + "." + gen;
            KafkaProducer<String, String> p = null;
            KafkaConsumer<String, String> c = null;
            try {
                p = producer(bootstrap, txnId, pp);
                c = consumer(bootstrap, group, "read_committed", cp);
                p.initTransactions();
                say("READY " + prefix);
                c.subscribe(List.of(input));
                int parts = p.partitionsFor(output).size();
                for (long seq = 1; !stop.get(); ) {
                    ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                    if (rs.isEmpty()) {
                        continue;
                    }
                    String tag = prefix + "." + seq++;
                    p.beginTransaction();
                    try {
                        int[] perPart = new int[parts];
                        for (int j = 0; j < rs.count(); j++) {
                            perPart[j % parts]++;
                        }
                        Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                        int j = 0;
                        for (ConsumerRecord<String, String> r : rs) {
                            int part = j++ % parts;
                            p.send(new ProducerRecord<>(output, part, r.key(), "out-" + r.value() + "|" + tag + "|" + perPart[part]));
                            offs.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        }
                        p.sendOffsetsToTransaction(offs, c.groupMetadata());
                        say("COMMITTING " + tag + " " + rs.count());
                        commit(p, tag);
                        say("COMMITTED " + tag);
                    } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                             | UnsupportedVersionException | IllegalStateException e) {
                        say("FATAL " + tag + " " + e);
                        throw e;
                    } catch (KafkaException e) {
                        say("ABORTING " + tag + " " + e);
                        p.abortTransaction();
                        if (e instanceof CommitFailedException) {
                            // The group does not know this member (any
                            // more): rejoin, as Kafka Streams does.
                            c.enforceRebalance();
                        }
                        rewind(c);
                        say("ABORTED " + tag);
                    }
                }
            } catch (Exception e) {
                say("RESTART " + e);
                Thread.sleep(300);
            } finally {
                if (p != null) {
                    p.close(Duration.ofSeconds(2));
                }
                if (c != null) {
                    try {
                        c.close(Duration.ofSeconds(2));
                    } catch (Exception e) {
                    }
                }
            }
        }
        say("STOPPED");
    }

    // commit commits p's transaction, retrying one that timed out (the
    // client's rule: commitTransaction may be called again after a
    // TimeoutException, and finishes the same commit).
    static void commit(KafkaProducer<String, String> p, String tag) {
        for (int attempt = 1; ; attempt++) {
            try {
                p.commitTransaction();
                return;
            } catch (TimeoutException e) {
                if (attempt == 5) {
                    throw e;
                }
                say("COMMIT-RETRY " + tag + " " + e);
            }
        }
    }

    // rewind seeks every assigned partition back to the group's committed
    // offset (the start when none), after an aborted transaction.
    static void rewind(KafkaConsumer<String, String> c) {
        var assigned = c.assignment();
        var committed = c.committed(assigned);
        for (TopicPartition tp : assigned) {
            OffsetAndMetadata o = committed.get(tp);
            if (o == null) {
                c.seekToBeginning(List.of(tp));
            } else {
                c.seek(tp, o.offset());
            }
        }
    }
}
