// LineFile is a pair of Kafka Connect connectors for e2e/connect_test.go:
// LineFile$Source appends each complete line of a file to a topic and keeps
// its place as {"position": BYTES} under the partition {"filename": PATH}
// in the worker's offsets topic; LineFile$Sink appends each record's value
// as a line to a file. They stand in for Kafka's FileStream connectors
// (connect-file), which the Maven registry this project builds from does
// not serve at the Connect worker's version; the connectors do no Kafka
// I/O of their own, the worker does all of it.
//
// The test compiles this file with javac against e2e/java/target/lib into
// a directory it puts on the worker's classpath, with the
// META-INF/services entries beside it.
package iggykafka.e2e;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.source.SourceRecord;

public final class LineFile {
    private LineFile() {}

    static final String VERSION = "1";

    static final ConfigDef SOURCE_CONFIG = new ConfigDef()
            .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "file to read lines from")
            .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "topic to write them to");

    static final ConfigDef SINK_CONFIG = new ConfigDef()
            .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "file to append values to");

    public static class Source extends org.apache.kafka.connect.source.SourceConnector {
        private Map<String, String> props;

        @Override public void start(Map<String, String> props) { this.props = props; }
        @Override public Class<? extends Task> taskClass() { return SourceTask.class; }
        @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
        @Override public void stop() {}
        @Override public ConfigDef config() { return SOURCE_CONFIG; }
        @Override public String version() { return VERSION; }
    }

    public static class SourceTask extends org.apache.kafka.connect.source.SourceTask {
        private String file;
        private String topic;
        private Map<String, String> partition;
        private long position;

        @Override public String version() { return VERSION; }

        @Override public void start(Map<String, String> props) {
            file = props.get("file");
            topic = props.get("topic");
            partition = Map.of("filename", file);
            Map<String, Object> committed = context.offsetStorageReader().offset(partition);
            position = committed == null ? 0 : ((Number) committed.get("position")).longValue();
        }

        // poll returns the complete lines past position, at most 100, or
        // waits a little and returns null when there are none.
        @Override public List<SourceRecord> poll() throws InterruptedException {
            List<SourceRecord> out = new ArrayList<>();
            try (RandomAccessFile f = new RandomAccessFile(file, "r")) {
                f.seek(position);
                byte[] rest = new byte[(int) Math.min(f.length() - position, 1 << 20)];
                f.readFully(rest);
                int start = 0;
                for (int i = 0; i < rest.length && out.size() < 100; i++) {
                    if (rest[i] != '\n') {
                        continue;
                    }
                    String line = new String(rest, start, i - start, StandardCharsets.UTF_8);
                    position += i + 1 - start;
                    start = i + 1;
                    out.add(new SourceRecord(partition, Map.of("position", position), topic, null,
                            null, null, Schema.STRING_SCHEMA, line));
                }
            } catch (IOException e) {
                throw new ConnectException("reading " + file, e);
            }
            if (out.isEmpty()) {
                Thread.sleep(200);
                return null;
            }
            return out;
        }

        @Override public void stop() {}
    }

    public static class Sink extends org.apache.kafka.connect.sink.SinkConnector {
        private Map<String, String> props;

        @Override public void start(Map<String, String> props) { this.props = props; }
        @Override public Class<? extends Task> taskClass() { return SinkTask.class; }
        @Override public List<Map<String, String>> taskConfigs(int maxTasks) { return List.of(props); }
        @Override public void stop() {}
        @Override public ConfigDef config() { return SINK_CONFIG; }
        @Override public String version() { return VERSION; }
    }

    public static class SinkTask extends org.apache.kafka.connect.sink.SinkTask {
        private PrintStream out;

        @Override public String version() { return VERSION; }

        @Override public void start(Map<String, String> props) {
            try {
                out = new PrintStream(new FileOutputStream(props.get("file"), true), false, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new ConnectException("opening " + props.get("file"), e);
            }
        }

        @Override public void put(Collection<SinkRecord> records) {
            for (SinkRecord r : records) {
                out.print(r.value() + "\n");
            }
            out.flush();
        }

        @Override public void stop() {
            if (out != null) {
                out.close();
            }
        }
    }
}
