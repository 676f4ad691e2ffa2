// A Kafka 4.4 KafkaShareConsumer (KIP-932) for the e2e tests of the
// gateway's share groups (e2e/share_java_test.go).
//
// Usage: ShareCheck BOOTSTRAP GROUP TOPIC MODE RULE MAX IDLE [key=value ...]
//   MODE  implicit | explicit (share.acknowledgement.mode)
//   RULE  accept            accept every record
//         release:D         release a record whose value ends in digit D when
//                           it is delivered the first time, accept it later
//         release-always:D  release every delivery of such a record
//         reject:D          reject such records
//         hold              acknowledge nothing and stop polling after the
//                           first records (the test kills it with kill -9)
//   (release and reject need MODE explicit; implicit mode accepts all.)
//   MAX   exit after this many records were delivered (0: no limit)
//   IDLE  exit after this many seconds without a record, counted from the
//         first record (0: never)
//
// It prints "REC partition offset deliveryCount value" for each delivered
// record and "ACK partition offset TYPE" once the broker confirmed its
// acknowledgement (the acknowledgement commit callback), "ACK-FAILED
// partition offset error" when it did not, and "CLOSED" after a clean
// close. Closing stdin stops it cleanly; every line is flushed at once.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareCheck {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    // The type given to each acknowledged record, by "partition offset",
    // until the broker's answer for it arrives in the callback.
    static final Map<String, AcknowledgeType> pending = new HashMap<>();

    public static void main(String[] args) throws Exception {
        String mode = args[3], rule = args[4];
        long max = Long.parseLong(args[5]);
        long idle = Long.parseLong(args[6]);
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[1]);
        props.put("share.acknowledgement.mode", mode);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        for (int i = 7; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String digit = rule.contains(":") ? rule.substring(rule.indexOf(':') + 1) : "";
        boolean explicit = mode.equals("explicit");
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

        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(props);
        c.setAcknowledgementCommitCallback((Map<TopicIdPartition, Set<Long>> offsets, Exception err) -> {
            for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
                int p = e.getKey().partition();
                for (long off : new TreeSet<>(e.getValue())) {
                    AcknowledgeType t;
                    synchronized (pending) {
                        t = pending.remove(p + " " + off);
                    }
                    if (err == null) {
                        say("ACK " + p + " " + off + " " + (t == null ? AcknowledgeType.ACCEPT : t).name());
                    } else {
                        say("ACK-FAILED " + p + " " + off + " " + err);
                    }
                }
            }
        });
        c.subscribe(List.of(args[2]));
        long delivered = 0;
        long last = 0;
        while (!stop.get()) {
            ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
            if (recs.isEmpty()) {
                if (idle > 0 && delivered > 0 && System.nanoTime() - last > idle * 1_000_000_000L) {
                    break;
                }
                continue;
            }
            last = System.nanoTime();
            for (ConsumerRecord<String, String> r : recs) {
                int count = r.deliveryCount().orElse((short) -1);
                say("REC " + r.partition() + " " + r.offset() + " " + count + " " + r.value());
                delivered++;
                if (rule.equals("hold")) {
                    continue;
                }
                AcknowledgeType t = AcknowledgeType.ACCEPT;
                boolean match = !digit.isEmpty() && r.value() != null && r.value().endsWith(digit);
                if (match && rule.startsWith("release:") && count == 1) {
                    t = AcknowledgeType.RELEASE;
                } else if (match && rule.startsWith("release-always:")) {
                    t = AcknowledgeType.RELEASE;
                } else if (match && rule.startsWith("reject:")) {
                    t = AcknowledgeType.REJECT;
                }
                synchronized (pending) {
                    pending.put(r.partition() + " " + r.offset(), t);
                }
                if (explicit) {
                    c.acknowledge(r, t);
                }
            }
            if (rule.equals("hold")) {
                // Keep the acquired records: no more polls, so nothing is
                // acknowledged, until the test kills the process.
                while (!stop.get()) {
                    Thread.sleep(100);
                }
                Runtime.getRuntime().halt(0);
            }
            c.commitSync();
            if (max > 0 && delivered >= max) {
                break;
            }
        }
        c.close();
        say("CLOSED");
    }
}
