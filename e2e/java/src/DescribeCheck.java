// DescribeCheck drives the Java AdminClient's describeCluster and
// describeTopics, which a Kafka 4.x client asks with DescribeCluster (60)
// and DescribeTopicPartitions (75) before falling back to Metadata, and
// prints one "OK ..." line per answer, or fails with a stack trace. Run in
// source-file mode by e2e/java_tools_test.go:
//
//	java -cp 'e2e/java/target/lib/*' e2e/java/src/DescribeCheck.java BOOTSTRAP TOPIC_A TOPIC_B
//
// TOPIC_A is created with 3 partitions and TOPIC_B with 2; describeTopics
// pages through them 2 partitions at a time.
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

public class DescribeCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], a = args[1], b = args[2];
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(ap)) {
            // includeFencedBrokers needs DescribeCluster v2: there is no
            // Metadata fallback for it.
            DescribeClusterResult dc = admin.describeCluster(
                new DescribeClusterOptions().includeAuthorizedOperations(true).includeFencedBrokers(true));
            String nodes = dc.nodes().get().stream()
                .map(n -> n.id() + "@" + n.host() + ":" + n.port() + (n.isFenced() ? " fenced" : ""))
                .collect(Collectors.joining(","));
            System.out.println("OK cluster " + dc.clusterId().get() + " controller " + dc.controller().get().id()
                + " nodes " + nodes + " ops " + new TreeSet<>(dc.authorizedOperations().get()));

            admin.createTopics(List.of(new NewTopic(a, 3, (short) 1), new NewTopic(b, 2, (short) 1))).all().get();
            Map<String, TopicDescription> ds = admin.describeTopics(List.of(b, a),
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(2).includeAuthorizedOperations(true)).allTopicNames().get();
            for (String t : new TreeSet<>(ds.keySet())) {
                TopicDescription d = ds.get(t);
                StringBuilder ps = new StringBuilder();
                for (TopicPartitionInfo p : d.partitions()) {
                    ps.append(" ").append(p.partition()).append(":leader=").append(p.leader().id())
                        .append(":isr=").append(ids(p.isr())).append(":elr=").append(ids(p.elr()))
                        .append(":lastKnownElr=").append(ids(p.lastKnownElr()));
                }
                System.out.println("OK topic " + t + " internal=" + d.isInternal() + " ops=" + new TreeSet<>(d.authorizedOperations()) + ps);
            }

            try {
                admin.describeTopics(List.of("describe-check-missing")).allTopicNames().get();
                System.out.println("FAIL a missing topic described");
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) throw e;
                System.out.println("OK missing topic");
            }
        }
    }

    // ids prints a node list, or "null" for a list the answer did not
    // carry (Metadata has no ELR).
    static String ids(List<Node> ns) {
        return ns == null ? "null" : ns.stream().map(n -> String.valueOf(n.id())).collect(Collectors.joining(",", "[", "]"));
    }
}
