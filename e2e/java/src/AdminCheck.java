// AdminCheck drives the Java AdminClient's partition and record admin calls
// against the gateway and prints one "OK ..." line per step, or fails with
// a stack trace. Run in source-file mode by e2e/java_tools_test.go:
//
//	java -cp 'e2e/java/target/lib/*' e2e/java/src/AdminCheck.java BOOTSTRAP TOPIC
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class AdminCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();

            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            long producerId;
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 10; i++) {
                    p.send(new ProducerRecord<>(topic, 0, "k", "v" + i)).get();
                }
            }

            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
            int n = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
            System.out.println("OK createPartitions " + n);

            try {
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
                System.out.println("FAIL shrink accepted");
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof InvalidPartitionsException)) throw e;
                System.out.println("OK shrink refused");
            }

            TopicPartition tp0 = new TopicPartition(topic, 0);
            long low = admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp0).get().lowWatermark();
            System.out.println("OK deleteRecords " + low);
            long earliest = admin.listOffsets(Map.of(tp0, OffsetSpec.earliest())).partitionResult(tp0).get().offset();
            System.out.println("OK earliest " + earliest);

            int broker = admin.describeCluster().nodes().get().iterator().next().id();
            Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(broker)).descriptions().get(broker).get();
            for (Map.Entry<String, LogDirDescription> d : dirs.entrySet()) {
                ReplicaInfo ri = d.getValue().replicaInfos().get(tp0);
                System.out.println("OK describeLogDirs " + d.getKey() + " " + dirs.size() + " " + (ri == null ? -1 : ri.size()));
            }

            int quotas = admin.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.all()).entities().get().size();
            System.out.println("OK describeClientQuotas " + quotas);
            int txns = admin.listTransactions().all().get().size();
            System.out.println("OK listTransactions " + txns);

            List<ProducerState> ps = admin.describeProducers(List.of(tp0)).partitionResult(tp0).get().activeProducers();
            for (ProducerState s : ps) {
                System.out.println("OK describeProducers " + s.producerId() + " " + s.producerEpoch() + " " + s.lastSequence());
            }
        }

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp0 = new TopicPartition(topic, 0);
            c.assign(List.of(tp0));
            long deadline = System.currentTimeMillis() + 30000;
            List<Long> offsets = new ArrayList<>();
            while (offsets.size() < 6 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) offsets.add(r.offset());
            }
            System.out.println("OK consumed " + offsets);
        }
    }
}
