package e2e

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/iggy-kafka/gateway/bridge/iggy"
)

// debianPython is the interpreter Debian's python3-* packages install
// into. A pyenv or venv python3 earlier in PATH does not see them, so it is
// tried first.
const debianPython = "/usr/bin/python3"

// needPython returns a Python 3 that imports module, or skips saying which
// Debian package to install.
func needPython(t testing.TB, module, debPackage string) string {
	t.Helper()
	py := debianPython
	if _, err := os.Stat(py); err != nil {
		if py, err = exec.LookPath("python3"); err != nil {
			missing(t, "python3", "apt-get install python3 "+debPackage)
		}
	}
	if out, err := exec.Command(py, "-c", "import "+module).CombinedOutput(); err != nil {
		missing(t, "the Python module "+module+" for "+py, "apt-get install "+debPackage+" ("+strings.TrimSpace(lastLine(string(out)))+")")
	}
	return py
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// kafkajsDir holds e2e/js/package.json; `npm ci` there installs kafkajs.
const kafkajsDir = "js"

// needKafkajs returns node's path, or skips unless kafkajs is installed in
// e2e/js/node_modules.
func needKafkajs(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node", "install Node.js and npm, then run npm ci in e2e/js")
	}
	if _, err := os.Stat(filepath.Join(kafkajsDir, "node_modules", "kafkajs", "package.json")); err != nil {
		missing(t, "kafkajs", "run npm ci in e2e/js")
	}
	return node
}

// runClientCheck runs one of the client scripts (e2e/python/*.py,
// e2e/js/*.js) with the gateway's address, a topic and a group, and fails
// unless it exits 0 having printed exactly the wanted "OK ..." lines, in
// order (each starting with its want). The scripts assert each answer
// themselves; the lines say which steps ran.
func runClientCheck(t *testing.T, interpreter, script, addr, topic, group string, want []string) string {
	t.Helper()
	src, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCmd(t, 180*time.Second, "", interpreter, src, addr, topic, group)
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", script, err, out, tail(errOut, 60))
	}
	var oks []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "OK ") {
			oks = append(oks, l)
		}
	}
	if len(oks) != len(want) {
		t.Errorf("%s printed %d OK lines, want %d:\n%s\nstderr:\n%s", script, len(oks), len(want), out, tail(errOut, 60))
	}
	for i, w := range want {
		if i < len(oks) && !strings.HasPrefix(oks[i], "OK "+w) {
			t.Errorf("%s step %d: %q, want it to start %q", script, i+1, oks[i], "OK "+w)
		}
	}
	return out
}

// checkAfterClient reads back, with franz-go, what a client script left:
// the partition count it grew the topic to, the topic configs it set, and
// the group's commits. On Iggy retention.ms must also be the Iggy topic's
// own message expiry.
func checkAfterClient(t *testing.T, gw *gateway, topic, group string, configs map[string]string, retentionMs int64) {
	t.Helper()
	if n := partitionsOf(t, gw.Addr, topic); n != 4 {
		t.Errorf("%s has %d partitions, want 4", topic, n)
	}
	ctx := adminCtx(t)
	adm := kadm.NewClient(newClient(t, gw.Addr))
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	have := map[string]string{}
	for _, c := range rc.Configs {
		have[c.Key] = c.MaybeValue()
	}
	for k, v := range configs {
		if have[k] != v {
			t.Errorf("%s: %s = %q, want %q", topic, k, have[k], v)
		}
	}
	if st, ok := gw.Store.(*iggy.Store); ok {
		tp, found, err := st.Client().GetTopic(ctx, iggy.Name(gw.Stream), iggy.Name(topic))
		// Never expiring is 0 (the server default, itself never) or
		// MaxUint64; a retention is in µs.
		good := tp.MessageExpiry == 0 || tp.MessageExpiry == math.MaxUint64
		if retentionMs > 0 {
			good = tp.MessageExpiry == uint64(retentionMs)*1000
		}
		if err != nil || !found || !good {
			t.Errorf("Iggy topic %s: message_expiry %d µs, want retention.ms %d (found %v, %v)", topic, tp.MessageExpiry, retentionMs, found, err)
		}
	} else if iggyBackend() {
		t.Fatalf("iggy backend but store %T", gw.Store)
	}
	for p := int32(0); p < 2; p++ {
		if o := committedOffset(t, gw.Addr, group, topic, p); o != 20 {
			t.Errorf("group %s committed %d on %s/%d, want 20", group, o, topic, p)
		}
	}
}

// The Python clients, each driven by its script through the same story
// (e2e/python/*.py): confluent-kafka-python 1.7.0 (Debian's
// python3-confluent-kafka, on Debian's librdkafka) and kafka-python 2.0.2
// (Debian's python3-kafka).
func TestPythonClients(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, module, debPackage, script, topic string
		want                                    []string
		configs                                 map[string]string
		retentionMs                             int64
	}{
		{
			name: "confluent-kafka", module: "confluent_kafka", debPackage: "python3-confluent-kafka",
			script: "python/confluent_check.py", topic: "py-confluent",
			configs: map[string]string{"segment.ms": "600000", "retention.ms": "-1"}, retentionMs: -1,
			want: []string{
				"metadata broker 1 ",
				"create_topics 2 partitions; again: TOPIC_ALREADY_EXISTS",
				"describe_configs retention.ms=3600000 dynamic; cleanup.policy=delete default",
				"alter_configs segment.ms=600000; retention.ms back to default -1",
				"alter_configs unknown config refused: INVALID_CONFIG",
				"create_partitions 4",
				"produced 40",
				"consumed 40 in group, committed [20, 20]",
				"list_groups py-confluent-group Stable 1 member",
			},
		},
		{
			name: "kafka-python", module: "kafka", debPackage: "python3-kafka",
			script: "python/kafka_python_check.py", topic: "py-kafka",
			configs: map[string]string{"segment.ms": "600000", "retention.ms": "7200000"}, retentionMs: 7200000,
			want: []string{
				"describe_cluster broker 1 ",
				"create_topics 2 partitions; again: TOPIC_ALREADY_EXISTS",
				"describe_configs v2 retention.ms=3600000 dynamic; cleanup.policy=delete default",
				"alter_configs retention.ms=7200000 segment.ms=600000",
				"alter_configs unknown config refused: INVALID_CONFIG",
				"create_partitions 4",
				"produced 40",
				"consumed 40 in group",
				"list_consumer_groups, describe_consumer_groups py-kafka-group Stable 1 member; committed [20, 20]",
				"offsets [0, 0, 0, 0] to [20, 20, 0, 0]",
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			py := needPython(t, c.module, c.debPackage)
			gw := startGateway(t)
			runClientCheck(t, py, c.script, gw.Addr, c.topic, c.topic+"-group", c.want)
			checkAfterClient(t, gw, c.topic, c.topic+"-group", c.configs, c.retentionMs)
		})
	}
}

// librdkafka (confluent-kafka-python) looks records up by time in one batch
// spanning more than an Iggy batch's 71.6 minutes, whose later records are
// stored clamped (docs/MAPPING.md): e2e/python/confluent_times.py.
func TestPythonOffsetsForTimesWideBatch(t *testing.T) {
	t.Parallel()
	py := needPython(t, "confluent_kafka", "python3-confluent-kafka")
	gw := startGateway(t)
	runClientCheck(t, py, "python/confluent_times.py", gw.Addr, "py-times", "py-times-group", []string{
		"produced 5 records spanning 85 minutes in one batch",
		"offsets_for_times inside the span: the earliest offset at or after each time",
		"consumed from offset 2 with the records' own timestamps",
	})
}

// kafkajs 2.2.4 (npm, e2e/js/package-lock.json): e2e/js/kafkajs_check.js.
func TestKafkajs(t *testing.T) {
	t.Parallel()
	node := needKafkajs(t)
	gw := startGateway(t)
	runClientCheck(t, node, filepath.Join(kafkajsDir, "kafkajs_check.js"), gw.Addr, "js-kafkajs", "js-kafkajs-group", []string{
		"describeCluster broker 1 ",
		"createTopics 2 partitions; again: exists",
		"describeConfigs retention.ms=3600000 dynamic; cleanup.policy=delete default",
		"alterConfigs retention.ms=7200000 segment.ms=600000",
		"alterConfigs unknown config refused: INVALID_CONFIG",
		"createPartitions 4",
		"produced 40",
		"consumed 40 in group; listGroups, describeGroups Stable 1 member; committed [20, 20]",
		"deleteTopicRecords low watermark 3; a new group reads from it",
		"deleteGroups; listGroups no longer has it",
	})
	checkAfterClient(t, gw, "js-kafkajs", "js-kafkajs-group", map[string]string{"segment.ms": "600000", "retention.ms": "7200000"}, 7200000)
	if o := startOffset(t, newClient(t, gw.Addr), "js-kafkajs"); o != 3 {
		t.Errorf("log start of js-kafkajs/0 after kafkajs deleteTopicRecords: %d, want 3", o)
	}
}
