package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

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

// kafkajs 2.2.4 (npm, e2e/js/package-lock.json): e2e/js/kafkajs_check.js.
func TestKafkajs(t *testing.T) {
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
	starts, err := kadm.NewClient(newClient(t, gw.Addr)).ListStartOffsets(adminCtx(t), "js-kafkajs")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("js-kafkajs", 0); o.Offset != 3 {
		t.Errorf("log start of js-kafkajs/0 after kafkajs deleteTopicRecords: %+v, want 3", o)
	}
}
