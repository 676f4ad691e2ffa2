// The Java AdminClient's config calls against the gateway: createTopics
// with configs and the replication factor Kafka Streams and Connect send
// (none: the broker default), createTopics of an existing topic (must be
// TopicExistsException whatever its configs), describeConfigs of a topic
// and of the broker, incrementalAlterConfigs (SET, APPEND, DELETE, a
// refusal naming the config, a broker config that cannot change at
// runtime). Prints OK, or the first mismatch and exits 1. Run by
// e2e/configs_test.go with the java source launcher: java -cp 'target/lib/*' ConfigsAdmin.java BOOTSTRAP TOPIC
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.*;

public class ConfigsAdmin {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL: " + what);
            System.exit(1);
        }
    }

    static Config describe(Admin admin, ConfigResource r) throws Exception {
        return admin.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true))
            .all().get().get(r);
    }

    static Throwable alterFails(Admin admin, ConfigResource r, AlterConfigOp... ops) throws Exception {
        try {
            admin.incrementalAlterConfigs(Map.of(r, List.of(ops))).all().get();
        } catch (ExecutionException e) {
            return e.getCause();
        }
        return null;
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        String topic = args[1];
        try (Admin admin = Admin.create(p)) {
            NewTopic nt = new NewTopic(topic, Optional.empty(), Optional.empty())
                .configs(Map.of("cleanup.policy", "compact", "segment.ms", "3600000"));
            CreateTopicsResult cr = admin.createTopics(List.of(nt));
            cr.all().get();
            check(cr.replicationFactor(topic).get() == 1, "replication factor " + cr.replicationFactor(topic).get());
            check("compact".equals(cr.config(topic).get().get("cleanup.policy").value()), "create result config " + cr.config(topic).get());

            // Existing topic, with configs (even bad ones): TopicExists.
            try {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("made.up", "1", "retention.ms", "5")))).all().get();
                check(false, "second create succeeded");
            } catch (ExecutionException e) {
                check(e.getCause() instanceof TopicExistsException, "second create: " + e.getCause());
            }

            ConfigResource tr = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config c = describe(admin, tr);
            ConfigEntry cp = c.get("cleanup.policy");
            check(cp != null && "compact".equals(cp.value()) && cp.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "cleanup.policy " + cp);
            check(cp.documentation() != null && cp.documentation().contains("never deletes"), "cleanup.policy documentation " + cp.documentation());
            ConfigEntry rb = c.get("retention.bytes");
            check(rb != null && "-1".equals(rb.value()) && rb.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG && rb.isDefault(), "retention.bytes " + rb);
            check(!rb.synonyms().isEmpty() && rb.synonyms().get(rb.synonyms().size() - 1).name().equals("log.retention.bytes"), "retention.bytes synonyms " + rb.synonyms());
            check("3600000".equals(c.get("segment.ms").value()), "segment.ms " + c.get("segment.ms"));

            admin.incrementalAlterConfigs(Map.of(tr, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND),
                new AlterConfigOp(new ConfigEntry("segment.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
            c = describe(admin, tr);
            check("compact,delete".equals(c.get("cleanup.policy").value()), "after alter cleanup.policy " + c.get("cleanup.policy"));
            check("86400000".equals(c.get("retention.ms").value()) && c.get("retention.ms").source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "after alter retention.ms " + c.get("retention.ms"));
            check(c.get("segment.ms").isDefault(), "after delete segment.ms " + c.get("segment.ms"));

            admin.incrementalAlterConfigs(Map.of(tr, List.of(
                new AlterConfigOp(new ConfigEntry("message.timestamp.type", "LogAppendTime"), AlterConfigOp.OpType.SET)))).all().get();
            check("LogAppendTime".equals(describe(admin, tr).get("message.timestamp.type").value()), "message.timestamp.type after alter");
            Throwable err = alterFails(admin, tr, new AlterConfigOp(new ConfigEntry("message.timestamp.type", "AppendTime"), AlterConfigOp.OpType.SET));
            check(err instanceof InvalidConfigurationException && err.getMessage().contains("message.timestamp.type"), "message.timestamp.type=AppendTime: " + err);
            err = alterFails(admin, tr, new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET));
            check(err instanceof InvalidConfigurationException && err.getMessage().contains("retention.ms"), "bad retention.ms: " + err);

            ConfigResource br = new ConfigResource(ConfigResource.Type.BROKER, "1");
            Config b = describe(admin, br);
            ConfigEntry ac = b.get("auto.create.topics.enable");
            check(ac != null && "true".equals(ac.value()) && ac.isReadOnly(), "auto.create.topics.enable " + ac);
            check(b.get("num.partitions") != null && "1".equals(b.get("num.partitions").value()), "num.partitions " + b.get("num.partitions"));
            err = alterFails(admin, br, new AlterConfigOp(new ConfigEntry("num.partitions", "4"), AlterConfigOp.OpType.SET));
            // As a Kafka 4.4.0 broker answers it.
            check(err instanceof InvalidRequestException
                    && "Cannot update these configs dynamically: [num.partitions]".equals(err.getMessage()), "broker alter: " + err);
        }
        System.out.println("OK");
    }
}
