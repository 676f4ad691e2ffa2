// WordCount is a Kafka Streams application run against the gateway by
// e2e/streams_connect_test.go in source-file mode:
//
//	java -cp 'e2e/java/target/lib/*' e2e/java/src/WordCount.java BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR [GUARANTEE [KEY=VALUE...]]
//
// GUARANTEE is processing.guarantee: at_least_once (the default) or
// exactly_once_v2 (transactions). Each KEY=VALUE after it is one more
// Streams config, e.g. group.protocol=streams (KIP-1071's streams group;
// classic is Streams' default) or num.standby.replicas=1.
//
// Lines from INPUT are split into lowercase words, re-keyed by word (a
// repartition topic, which Streams purges with DeleteRecords), counted in a
// persistent (RocksDB) store backed by a compacted changelog topic, and
// each new count is written to OUTPUT as word -> decimal count. It runs
// until killed or its stdin closes; it prints "RUNNING" once the instance
// reaches the RUNNING state so the test knows it has joined its group.
//
// For the tests that watch tasks move, it also prints (each on a line):
//   TASKS active=[0_0, 1_1] standby=[1_0]  the tasks of this instance, on
//       every change (polled every 500 ms), sorted;
//   RESTORE_START topic-p from to / RESTORED topic-p n  an active task
//       restoring a store from its changelog (offsets from..to, n records);
//   STANDBY_LOADED topic-p task offset  a standby task applied changelog
//       records up to offset.
import java.io.InputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.TreeSet;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.state.KeyValueStore;

public class WordCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], stateDir = args[4];
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args.length > 5 ? args[5] : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        // -1: the broker's default replication factor (the gateway has one).
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "-1");
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "500");
        // Purge consumed repartition records (DeleteRecords) on every
        // commit after 1 s rather than 30 s, so the test sees it.
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, "1000");
        // No record cache: every count update goes downstream, so the
        // latest output per word is the store's value after each commit.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        for (int i = 6; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }

        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> lines = b.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        lines.flatMapValues(v -> Arrays.asList(v.toLowerCase(Locale.ROOT).split("\\W+")))
             .filter((k, w) -> !w.isEmpty())
             .map((k, w) -> KeyValue.pair(w, w))
             .groupByKey(Grouped.with("words", Serdes.String(), Serdes.String()))
             .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
             .toStream()
             .mapValues(c -> Long.toString(c))
             .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + before + " -> " + now);
            if (now == KafkaStreams.State.RUNNING) System.out.println("RUNNING");
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) done.countDown();
            System.out.flush();
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override public void onRestoreStart(TopicPartition tp, String store, long from, long to) {
                System.out.println("RESTORE_START " + tp + " " + from + " " + to);
            }
            @Override public void onBatchRestored(TopicPartition tp, String store, long end, long n) { }
            @Override public void onRestoreEnd(TopicPartition tp, String store, long n) {
                System.out.println("RESTORED " + tp + " " + n);
            }
        });
        streams.setStandbyUpdateListener(new StandbyUpdateListener() {
            @Override public void onUpdateStart(TopicPartition tp, String store, long from) { }
            @Override public void onBatchLoaded(TopicPartition tp, String store, TaskId task, long end, long n, long logEnd) {
                System.out.println("STANDBY_LOADED " + tp + " " + task + " " + end);
            }
            @Override public void onUpdateSuspended(TopicPartition tp, String store, long offset, long logEnd, SuspendReason why) { }
        });
        streams.start();
        Thread tasks = new Thread(() -> {
            String last = "";
            while (true) {
                TreeSet<String> active = new TreeSet<>(), standby = new TreeSet<>();
                try {
                    for (ThreadMetadata th : streams.metadataForLocalThreads()) {
                        for (TaskMetadata tm : th.activeTasks()) active.add(tm.taskId().toString());
                        for (TaskMetadata tm : th.standbyTasks()) standby.add(tm.taskId().toString());
                    }
                } catch (Exception e) {
                    // Not running (yet or any more): nothing to report.
                }
                String line = "TASKS active=" + active + " standby=" + standby;
                if (!line.equals(last)) {
                    System.out.println(line);
                    System.out.flush();
                    last = line;
                }
                try { Thread.sleep(500); } catch (InterruptedException e) { return; }
            }
        });
        tasks.setDaemon(true);
        tasks.start();
        // The test stops the app by closing stdin (a clean close commits)
        // or by killing it.
        Thread stdin = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() >= 0) { }
            } catch (Exception ignored) { }
            done.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        done.await();
        streams.close(Duration.ofSeconds(30));
        System.out.println("CLOSED " + streams.state());
        System.out.flush();
    }
}
