// TruncationCheck drives the Java consumer's position validation (KIP-320):
// a position seeked to with a leader epoch is checked with
// OffsetForLeaderEpoch (23) before the consumer fetches from it, and one
// past the end of the log is caught as truncation. Prints one "OK ..."
// line per step, or fails with a stack trace. Run in source-file mode by
// e2e/leader_epoch_test.go:
//
//	java -cp 'e2e/java/target/lib/*' e2e/java/src/TruncationCheck.java BOOTSTRAP TOPIC
//
// TOPIC is created with one partition holding 5 records.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TruncationCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
            }

            // No reset policy: truncation is thrown to the application.
            try (KafkaConsumer<String, String> c = consumer(bootstrap, "none")) {
                c.assign(List.of(tp));
                c.seek(tp, new OffsetAndMetadata(3, Optional.of(0), ""));
                List<Long> offsets = new ArrayList<>();
                Optional<Integer> epoch = Optional.empty();
                long deadline = System.currentTimeMillis() + 30000;
                while (offsets.size() < 2 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        offsets.add(r.offset());
                        epoch = r.leaderEpoch();
                    }
                }
                System.out.println("OK validated " + offsets + " epoch " + epoch.orElse(-1));

                c.seek(tp, new OffsetAndMetadata(8, Optional.of(0), ""));
                try {
                    deadline = System.currentTimeMillis() + 30000;
                    while (System.currentTimeMillis() < deadline) {
                        c.poll(Duration.ofMillis(200));
                    }
                    System.out.println("FAIL no error past the log end");
                } catch (LogTruncationException e) {
                    OffsetAndMetadata d = e.divergentOffsets().get(tp);
                    System.out.println("OK truncation at " + e.offsetOutOfRangePartitions().get(tp) + " diverging at "
                        + (d == null ? "none" : d.offset() + " epoch " + d.leaderEpoch().orElse(-1)));
                }
            }

            // With a reset policy the consumer resumes where the log
            // diverges (its end), not at the policy's offset.
            try (KafkaConsumer<String, String> c = consumer(bootstrap, "earliest")) {
                c.assign(List.of(tp));
                c.seek(tp, new OffsetAndMetadata(8, Optional.of(0), ""));
                long deadline = System.currentTimeMillis() + 30000;
                while (c.position(tp, Duration.ofSeconds(10)) == 8 && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(200));
                }
                p.send(new ProducerRecord<>(topic, 0, null, "v5")).get();
                long first = -1;
                deadline = System.currentTimeMillis() + 30000;
                while (first < 0 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        if (first < 0) first = r.offset();
                    }
                }
                System.out.println("OK resumed at " + first);
            }
        }
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String reset) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, reset);
        return new KafkaConsumer<>(cp);
    }
}
