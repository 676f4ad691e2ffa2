package e2e

// Kafka's operations tools against one gateway: kafka-leader-election
// (LeaderElectionCommand), kafka-reassign-partitions
// (ReassignPartitionsCommand) and kafka-metadata-quorum
// (MetadataQuorumCommand), each with --bootstrap-server. Leaders are
// computed and every partition has one replica, its leader, so no
// election is needed, no reassignment is ever in progress and the
// current assignment is the only one accepted; the quorum is the
// controller alone (handlers/43_*, 45_*, 46_*, 55_*).

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

const (
	electionClass = "org.apache.kafka.tools.LeaderElectionCommand"
	reassignClass = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
	quorumClass   = "org.apache.kafka.tools.MetadataQuorumCommand"
)

func TestJavaToolsLeaderElection(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	filledTopic(t, gw.Addr, "java-elect", 3)

	// Every partition: none needs an election, so nothing is printed.
	out, errOut := kafkaTool(t, gw.Addr, electionClass, "--election-type", "preferred", "--all-topic-partitions")
	if strings.Contains(out+errOut, "could not be elected") || strings.Contains(out, "Successfully") {
		t.Fatalf("--all-topic-partitions:\n%s\nstderr: %s", out, tail(errOut, 20))
	}
	for _, typ := range []string{"preferred", "unclean"} {
		out, errOut := kafkaTool(t, gw.Addr, electionClass, "--election-type", typ, "--topic", "java-elect", "--partition", "0")
		if !strings.Contains(out, "Valid replica already elected for partitions java-elect-0") {
			t.Fatalf("%s election of java-elect-0:\n%s\nstderr: %s", typ, out, tail(errOut, 20))
		}
	}
	// A partition that does not exist is the tool's error, from the answer.
	out, errOut, err := javaRun(t, 90*time.Second, "", electionClass, "--bootstrap-server", gw.Addr,
		"--election-type", "preferred", "--topic", "java-elect", "--partition", "7")
	if err == nil || !strings.Contains(out+errOut, "1 replica(s) could not be elected") {
		t.Fatalf("election of java-elect-7: %v\n%s\nstderr: %s", err, out, tail(errOut, 20))
	}
}

// reassignmentFile writes a kafka-reassign-partitions JSON file moving
// topic's partition 0 to replicas.
func reassignmentFile(t *testing.T, topic, replicas string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "reassign.json")
	js := `{"version":1,"partitions":[{"topic":"` + topic + `","partition":0,"replicas":[` + replicas + `]}]}`
	if err := os.WriteFile(f, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestJavaToolsReassignPartitions(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)
	filledTopic(t, gw.Addr, "java-reassign", 3)

	out, errOut := kafkaTool(t, gw.Addr, reassignClass, "--list")
	if !strings.Contains(out, "No partition reassignments found.") {
		t.Fatalf("--list:\n%s\nstderr: %s", out, tail(errOut, 20))
	}

	// The current assignment (node 1 alone) is accepted and changes
	// nothing; the throttle asked for is set on the broker (a dynamic
	// broker config the gateway keeps and reports).
	same := reassignmentFile(t, "java-reassign", "1")
	out, errOut = kafkaTool(t, gw.Addr, reassignClass, "--execute", "--throttle", "1000", "--reassignment-json-file", same)
	if !strings.Contains(out, `"partition":0,"replicas":[1]`) || !strings.Contains(out, "Successfully started partition reassignment for java-reassign-0") ||
		!strings.Contains(out, "The inter-broker throttle limit was set to 1000 B/s") {
		t.Fatalf("--execute of the current assignment:\n%s\nstderr: %s", out, tail(errOut, 20))
	}
	throttles := func() string {
		t.Helper()
		out, _ := kafkaTool(t, gw.Addr, configsClass, "--describe", "--entity-type", "brokers", "--entity-name", "1")
		return out
	}
	if out := throttles(); !strings.Contains(out, "leader.replication.throttled.rate=1000") || !strings.Contains(out, "follower.replication.throttled.rate=1000") {
		t.Fatalf("broker 1 after --execute --throttle:\n%s", out)
	}
	// --verify and --cancel clear the broker and topic throttles.
	out, errOut = kafkaTool(t, gw.Addr, reassignClass, "--verify", "--reassignment-json-file", same)
	for _, want := range []string{"Reassignment of partition java-reassign-0 is completed.",
		"Clearing broker-level throttles on broker 1", "Clearing topic-level throttles on topic java-reassign"} {
		if !strings.Contains(out, want) {
			t.Fatalf("--verify lacks %q:\n%s\nstderr: %s", want, out, tail(errOut, 20))
		}
	}
	if out := throttles(); strings.Contains(out, "throttled.rate") {
		t.Fatalf("broker 1 after --verify:\n%s", out)
	}
	out, errOut = kafkaTool(t, gw.Addr, reassignClass, "--cancel", "--reassignment-json-file", same)
	if !strings.Contains(out, "None of the specified partition reassignments are active.") {
		t.Fatalf("--cancel:\n%s\nstderr: %s", out, tail(errOut, 20))
	}

	// With log dirs: the one dir (DescribeLogDirs') is where the replica
	// is already (AlterReplicaLogDirs answers so); another dir is refused
	// by the broker (LOG_DIR_NOT_FOUND).
	withDir := func(dir string) string {
		f := filepath.Join(t.TempDir(), "reassign-dirs.json")
		js := `{"version":1,"partitions":[{"topic":"java-reassign","partition":0,"replicas":[1],"log_dirs":["` + dir + `"]}]}`
		if err := os.WriteFile(f, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	out, errOut = kafkaTool(t, gw.Addr, reassignClass, "--execute", "--reassignment-json-file", withDir("iggy:"+gw.Stream))
	if !strings.Contains(out, "Successfully started moving log directory to iggy:"+gw.Stream+" for replica java-reassign-0 with broker 1") {
		t.Fatalf("--execute into the gateway's log dir:\n%s\nstderr: %s", out, tail(errOut, 20))
	}
	out, errOut, err := javaRun(t, 90*time.Second, "", reassignClass, "--bootstrap-server", gw.Addr,
		"--execute", "--reassignment-json-file", withDir("/var/kafka-logs"))
	if err == nil || !strings.Contains(out+errOut, "LogDirNotFoundException") {
		t.Fatalf("--execute into another log dir: %v\n%s\nstderr: %s", err, out, tail(errOut, 20))
	}

	// Another broker: there is none (the tool checks the brokers
	// Metadata lists before it asks).
	out, errOut, err = javaRun(t, 90*time.Second, "", reassignClass, "--bootstrap-server", gw.Addr,
		"--execute", "--reassignment-json-file", reassignmentFile(t, "java-reassign", "2"))
	if err == nil || !strings.Contains(out+errOut, "Unknown broker id 2") {
		t.Fatalf("--execute to broker 2: %v\n%s\nstderr: %s", err, out, tail(errOut, 20))
	}
}

func TestJavaToolsMetadataQuorum(t *testing.T) {
	t.Parallel()
	needJava(t)
	gw := startGateway(t)

	out, errOut := kafkaTool(t, gw.Addr, quorumClass, "describe", "--status")
	for _, want := range []string{
		`(?m)^ClusterId:\s+e2e$`,
		`(?m)^LeaderId:\s+1$`,
		`(?m)^LeaderEpoch:\s+0$`,
		`(?m)^HighWatermark:\s+0$`,
		`(?m)^MaxFollowerLag:\s+0$`,
		`(?m)^MaxFollowerLagTimeMs:\s+0$`,
		`(?m)^CurrentVoters:\s+\[\{"id": 1, "endpoints": \["PLAINTEXT://127\.0\.0\.1:\d+"\]\}\]$`,
		`(?m)^CurrentObservers:\s+\[\]$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("describe --status lacks %s:\n%s\nstderr: %s", want, out, tail(errOut, 20))
		}
	}

	out, errOut = kafkaTool(t, gw.Addr, quorumClass, "describe", "--replication")
	if !regexp.MustCompile(`(?m)^1\s+AAAAAAAAAAAAAAAAAAAAAA\s+0\s+0\s+\d+\s+\d+\s+Leader\s*$`).MatchString(out) || strings.Count(strings.TrimSpace(out), "\n") != 1 {
		t.Fatalf("describe --replication:\n%s\nstderr: %s", out, tail(errOut, 20))
	}
}

// Two gateways: each answers DescribeQuorum alike once the membership
// settled (the controller, the lowest id, leads and is the one voter; the
// other gateway observes), and Kafka's tools, pointed at either, see
// that; a partition's replicas are [its computed leader]: the tool's
// --execute of that is a no-op success, of the other gateway (a broker
// that exists) refused by the gateway with the reason.
func TestClusterJavaOpsTools(t *testing.T) {
	t.Parallel()
	needJava(t)
	cg, ctx, cancel := newCluster(t, 2, 3*time.Minute)
	defer cancel()
	const topic = "cluster-ops"
	admin := cg.adminWithTopic(topic, kgo.SeedBrokers(cg.seeds()...))

	// Both gateways have applied the membership of two.
	for id := 1; id <= 2; id++ {
		seed := newClient(t, cg.procs[id].Addr).SeedBrokers()[0]
		await.Until(t, 30*time.Second, func() error {
			req := kmsg.NewPtrDescribeQuorumRequest()
			rt := kmsg.NewDescribeQuorumRequestTopic()
			rt.Topic = "__cluster_metadata"
			rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
			r, err := seed.Request(ctx, req)
			if err != nil {
				return err
			}
			resp := r.(*kmsg.DescribeQuorumResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				return fmt.Errorf("gateway %d: %+v", id, resp)
			}
			p := resp.Topics[0].Partitions[0]
			if p.LeaderID != 1 || len(p.CurrentVoters) != 1 || len(p.Observers) != 1 || p.Observers[0].ReplicaID != 2 ||
				p.Observers[0].LogEndOffset != p.HighWatermark || p.HighWatermark <= 0 {
				return fmt.Errorf("gateway %d: %+v", id, p)
			}
			return nil
		})
	}

	out, errOut := kafkaTool(t, cg.procs[2].Addr, quorumClass, "describe", "--status")
	for _, want := range []string{
		`(?m)^LeaderId:\s+1$`,
		`(?m)^MaxFollowerLag:\s+0$`,
		`(?m)^CurrentVoters:\s+\[\{"id": 1, "endpoints": \["PLAINTEXT://127\.0\.0\.1:\d+"\]\}\]$`,
		`(?m)^CurrentObservers:\s+\[\{"id": 2\}\]$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("describe --status through gateway 2 lacks %s:\n%s\nstderr: %s", want, out, tail(errOut, 20))
		}
	}
	out, errOut = kafkaTool(t, cg.procs[1].Addr, quorumClass, "describe", "--replication")
	if !regexp.MustCompile(`(?m)^1\s+\S+\s+(\d+)\s+0\s+\d+\s+\d+\s+Leader\s*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^2\s+\S+\s+(\d+)\s+0\s+-1\s+-1\s+Observer\s*$`).MatchString(out) {
		t.Errorf("describe --replication:\n%s\nstderr: %s", out, tail(errOut, 20))
	}

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mr, err := md.RequestWith(ctx, admin)
	if err != nil || len(mr.Topics) != 1 || len(mr.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata: %v %+v", err, mr)
	}
	leader := int32(-1)
	for _, p := range mr.Topics[0].Partitions {
		if p.Partition == 0 {
			leader = p.Leader
		}
	}
	if leader != 1 && leader != 2 {
		t.Fatalf("partition 0 led by %d: %+v", leader, mr.Topics[0].Partitions)
	}
	other := 3 - leader

	out, errOut = kafkaTool(t, cg.procs[1].Addr, reassignClass, "--execute",
		"--reassignment-json-file", reassignmentFile(t, topic, strconv.Itoa(int(leader))))
	if !strings.Contains(out, "Successfully started partition reassignment for "+topic+"-0") {
		t.Fatalf("--execute of the current assignment [%d]:\n%s\nstderr: %s", leader, out, tail(errOut, 20))
	}
	out, errOut, err = javaRun(t, 90*time.Second, "", reassignClass, "--bootstrap-server", cg.procs[1].Addr,
		"--execute", "--reassignment-json-file", reassignmentFile(t, topic, strconv.Itoa(int(other))))
	if err == nil || !strings.Contains(out+errOut, topic+"-0: Replicas cannot move here") {
		t.Fatalf("--execute to gateway %d (partition led by %d): %v\n%s\nstderr: %s", other, leader, err, out, tail(errOut, 20))
	}

	out, errOut = kafkaTool(t, cg.procs[2].Addr, electionClass, "--election-type", "preferred", "--topic", topic, "--partition", "0")
	if !strings.Contains(out, "Valid replica already elected for partitions "+topic+"-0") {
		t.Fatalf("election of %s-0:\n%s\nstderr: %s", topic, out, tail(errOut, 20))
	}
}
