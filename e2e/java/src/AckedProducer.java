// An idempotent (acks=all) Kafka producer that reports each record the
// brokers acknowledged, for the e2e tests of cluster mode
// (e2e/cluster_failover_test.go): the test checks that each acknowledged record is
// in the log exactly once and was consumed.
//
// Usage: AckedProducer BOOTSTRAP TOPIC PARTITIONS PREFIX [key=value ...]
//
// It sends PREFIX000000, PREFIX000001, ... to partitions 0, 1, ...,
// PARTITIONS-1 in turn, at most one record per millisecond (a load the
// tests' two cores carry beside the gateways), and prints
// "ACK partition offset value" for every acknowledged record and
// "FAIL value error" for every record it gave up on. Closing stdin stops
// it: it flushes what is in flight, closes and prints "DONE sent acked".

import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class AckedProducer {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("enable.idempotence", "true");
        props.put("acks", "all");
        props.put("max.in.flight.requests.per.connection", "5");
        props.put("linger.ms", "5");
        // Through a failover: a killed gateway's partitions are refused
        // until its session expires, so retry for well past that.
        props.put("retry.backoff.ms", "100");
        props.put("reconnect.backoff.ms", "100");
        props.put("reconnect.backoff.max.ms", "1000");
        props.put("request.timeout.ms", "10000");
        props.put("delivery.timeout.ms", "120000");
        props.put("metadata.max.age.ms", "5000");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String topic = args[1], prefix = args[3];
        int parts = Integer.parseInt(args[2]);
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
        AtomicLong acked = new AtomicLong();
        long sent = 0;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            while (!stop.get()) {
                String v = String.format("%s%06d", prefix, sent);
                p.send(new ProducerRecord<>(topic, (int) (sent % parts), null, v), (md, e) -> {
                    if (e != null) {
                        say("FAIL " + v + " " + e);
                        return;
                    }
                    acked.incrementAndGet();
                    say("ACK " + md.partition() + " " + md.offset() + " " + v);
                });
                sent++;
                Thread.sleep(1);
            }
            p.flush();
        }
        say("DONE " + sent + " " + acked.get());
    }
}
