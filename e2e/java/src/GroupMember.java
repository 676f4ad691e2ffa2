// A Kafka consumer with group.protocol=consumer (KIP-848), for the e2e
// tests of the gateway's consumer protocol (e2e/consumer_protocol_*_test.go).
//
// Usage: GroupMember BOOTSTRAP GROUP TOPIC INSTANCE_ID|- [key=value ...]
// (group.protocol=classic among the key=values makes it a classic member)
//
// It subscribes to TOPIC, prints "OWNED p,p,..." (sorted partitions it
// owns) after every assignment change and "REC partition offset value" for
// every record, and commits synchronously after each poll, so what it
// printed is committed before its partitions can move (a commit that fails
// prints "COMMIT-FAILED error" and the member carries on). Closing stdin stops
// it cleanly (commit, close: a leave, or for a static member a temporary
// leave); it prints "CLOSED" last.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupMember {
    static final TreeSet<Integer> owned = new TreeSet<>();

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static void printOwned() {
        StringBuilder b = new StringBuilder("OWNED ");
        String sep = "";
        for (int p : owned) {
            b.append(sep).append(p);
            sep = ",";
        }
        say(b.toString());
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("group.protocol", "consumer");
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        if (!args[3].equals("-")) {
            props.put("group.instance.id", args[3]);
        }
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String topic = args[2];
        KafkaConsumer<String, String> c = new KafkaConsumer<>(props);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
            }
            // No wakeup(): a pending one would throw from the final
            // commitSync; polls are short anyway.
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> ps) {
                for (TopicPartition tp : ps) owned.remove(tp.partition());
                printOwned();
            }
            public void onPartitionsAssigned(Collection<TopicPartition> ps) {
                for (TopicPartition tp : ps) owned.add(tp.partition());
                printOwned();
            }
            public void onPartitionsLost(Collection<TopicPartition> ps) {
                for (TopicPartition tp : ps) owned.remove(tp.partition());
                say("LOST " + ps);
                printOwned();
            }
        });
        while (!stop.get()) {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
            for (ConsumerRecord<String, String> r : rs) {
                say("REC " + r.partition() + " " + r.offset() + " " + r.value());
            }
            if (!rs.isEmpty()) {
                try {
                    c.commitSync();
                } catch (KafkaException e) {
                    // A classic-protocol member's commit can fail while
                    // the group rebalances or its coordinator moves; the
                    // records are consumed again after the rebalance.
                    say("COMMIT-FAILED " + e);
                }
            }
        }
        try {
            c.commitSync();
        } catch (Exception e) {
            say("COMMIT-FAILED " + e);
        }
        c.close();
        say("CLOSED");
    }
}
