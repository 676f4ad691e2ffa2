package e2e

// Share groups (KIP-932) with the Java 4.4 KafkaShareConsumer
// (e2e/java/src/ShareCheck.java), kafka-share-groups and
// kafka-console-share-consumer. The group configs are set as a user sets
// them, with kafka-configs --entity-type groups.
//
// IGGY_KAFKA_E2E_KAFKA_ADDR=host:port runs these tests against that
// Apache Kafka broker instead of a gateway, which is how they were checked
// against Kafka 4.4.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// kafkaAddrEnv names an external Kafka broker for the share-group tests.
const kafkaAddrEnv = "IGGY_KAFKA_E2E_KAFKA_ADDR"

// shareTarget is the bootstrap address a share-group test runs against (a
// gateway of its own, or the broker kafkaAddrEnv names) and a function
// that makes topic and group names unique there: a broker outlives the
// test, a gateway does not.
func shareTarget(t *testing.T) (addr string, name func(string) string) {
	t.Helper()
	if a := os.Getenv(kafkaAddrEnv); a != "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		suffix := "-" + hex.EncodeToString(b[:])
		return a, func(s string) string { return s + suffix }
	}
	return startGateway(t).Addr, func(s string) string { return s }
}

// shareSetup starts what a share-group test runs against (shareTarget),
// creates a one-partition topic named after base holding n records
// (valueRecords: v0, v1, ...) and configures a group for it
// (shareGroupConfig with kv); it returns the address, topic and group.
func shareSetup(t *testing.T, base string, n int, kv ...string) (addr, topic, group string) {
	t.Helper()
	needJava(t)
	addr, name := shareTarget(t)
	topic, group = name(base), name(base+"-grp")
	filledTopic(t, addr, topic, n)
	shareGroupConfig(t, addr, group, kv...)
	return addr, topic, group
}

// shareGroupConfig sets share.auto.offset.reset=earliest and the given
// extra key=values on group with kafka-configs, as a user would.
func shareGroupConfig(t *testing.T, addr, group string, kv ...string) {
	t.Helper()
	cfg := strings.Join(append([]string{"share.auto.offset.reset=earliest"}, kv...), ",")
	out, _ := kafkaTool(t, addr, configsClass, "--alter", "--entity-type", "groups", "--entity-name", group, "--add-config", cfg)
	if !strings.Contains(out, "Completed updating config") {
		t.Fatalf("kafka-configs --alter --entity-type groups %s: %s", group, out)
	}
}

// shareRec is a REC line of ShareCheck: one delivery of a record.
type shareRec struct {
	partition, count int
	offset           int64
	value            string
}

// shareConsumer is a running ShareCheck.
type shareConsumer struct {
	name string
	p    *javaProc
}

// startShareConsumer runs ShareCheck on topic in group with mode
// (implicit|explicit) and rule (see ShareCheck.java), without a record or
// idle limit: the test stops it by closing its stdin or kills it.
func startShareConsumer(t *testing.T, addr, group, topic, name, mode, rule string) *shareConsumer {
	t.Helper()
	src := javaSource(t, "java/src/ShareCheck.java")
	return &shareConsumer{name: name, p: javaStart(t, name, src, addr, group, topic, mode, rule, "0", "0", "client.id="+name)}
}

// lines returns the output lines of c starting with prefix+" ", split
// into fields.
func (c *shareConsumer) lines(prefix string) [][]string {
	var out [][]string
	for _, l := range strings.Split(c.p.out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == prefix {
			out = append(out, f[1:])
		}
	}
	return out
}

// recs returns the deliveries c printed.
func (c *shareConsumer) recs() []shareRec {
	var out []shareRec
	for _, f := range c.lines("REC") {
		if len(f) < 4 {
			continue // a line being written
		}
		p, _ := strconv.Atoi(f[0])
		off, _ := strconv.ParseInt(f[1], 10, 64)
		n, _ := strconv.Atoi(f[2])
		out = append(out, shareRec{partition: p, offset: off, count: n, value: f[3]})
	}
	return out
}

// acks returns the acknowledgement types c saw confirmed, by
// "partition/offset", in order.
func (c *shareConsumer) acks() map[string][]string {
	out := map[string][]string{}
	for _, f := range c.lines("ACK") {
		if len(f) == 3 {
			out[f[0]+"/"+f[1]] = append(out[f[0]+"/"+f[1]], f[2])
		}
	}
	return out
}

// deliveries groups the REC lines of cs by value.
func deliveries(cs ...*shareConsumer) map[string][]shareRec {
	out := map[string][]shareRec{}
	for _, c := range cs {
		for _, r := range c.recs() {
			out[r.value] = append(out[r.value], r)
		}
	}
	return out
}

// countsOf returns the delivery counts of rs.
func countsOf(rs []shareRec) []int {
	out := make([]int, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.count)
	}
	return out
}

// awaitDeliveries waits until every value of want was delivered to cs at
// least n[value] times (1 when absent from n).
func awaitDeliveries(t *testing.T, want []string, n map[string]int, cs ...*shareConsumer) {
	t.Helper()
	await.Until(t, 3*time.Minute, func() error {
		got := deliveries(cs...)
		for _, v := range want {
			need := 1
			if k, ok := n[v]; ok {
				need = k
			}
			if len(got[v]) < need {
				return fmt.Errorf("record %s delivered %d times, want %d (%d distinct records delivered)", v, len(got[v]), need, len(got))
			}
		}
		return nil
	})
}

// noAckFailures fails t if a consumer printed an acknowledgement failure.
func noAckFailures(t *testing.T, cs ...*shareConsumer) {
	t.Helper()
	for _, c := range cs {
		if out := c.p.out.String(); strings.Contains(out, "ACK-FAILED") {
			t.Errorf("%s: acknowledgement failed:\n%s", c.name, tail(out, 30))
		}
	}
}

// shareValues are the values valueRecords gives n records: v0 ... v<n-1>.
func shareValues(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "v" + strconv.Itoa(i)
	}
	return out
}

// produceMarker produces one record valued "end" to partition 0 of topic.
// A share partition hands out its lowest available records first, so once
// a consumer got the marker, a record that was to come back would have.
func produceMarker(t *testing.T, addr, topic string) {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, cl, []*kgo.Record{{Topic: topic, Value: []byte("end")}})
	cl.Close()
}

// Three share consumers on one partition, two acknowledging implicitly and
// one explicitly, accept everything: between them every record is
// delivered exactly once, with delivery count 1, and each acknowledgement
// is confirmed.
func TestShareGroupJavaAcceptAll(t *testing.T) {
	t.Parallel()
	addr, topic, group := shareSetup(t, "share-all", 300)
	cs := []*shareConsumer{
		startShareConsumer(t, addr, group, topic, "c1", "implicit", "accept"),
		startShareConsumer(t, addr, group, topic, "c2", "implicit", "accept"),
		startShareConsumer(t, addr, group, topic, "c3", "explicit", "accept"),
	}
	want := shareValues(300)
	awaitDeliveries(t, want, nil, cs...)
	produceMarker(t, addr, topic)
	awaitDeliveries(t, []string{"end"}, nil, cs...)
	for _, c := range cs {
		c.p.stop(t, time.Minute)
	}
	noAckFailures(t, cs...)
	got := deliveries(cs...)
	for _, v := range append(want, "end") {
		if len(got[v]) != 1 || got[v][0].count != 1 {
			t.Errorf("record %s: deliveries %+v, want one with delivery count 1", v, got[v])
		}
	}
	for _, c := range cs {
		acks := c.acks()
		for _, r := range c.recs() {
			if a := acks[fmt.Sprintf("%d/%d", r.partition, r.offset)]; !slices.Equal(a, []string{"ACCEPT"}) {
				t.Errorf("%s: offset %d acknowledged %v, want [ACCEPT]", c.name, r.offset, a)
			}
		}
	}
}

// Released records come back, to either consumer, with delivery count 2
// (the rule releases a record ending in 3 on its first delivery and
// accepts it on the next); rejected ones (a second group rejecting records
// ending in 7) never come back. Both groups read the same topic on their
// own.
func TestShareGroupJavaReleaseReject(t *testing.T) {
	t.Parallel()
	addr, topic, relGroup := shareSetup(t, "share-rr", 100)
	rejGroup := relGroup + "-rej"
	shareGroupConfig(t, addr, rejGroup)
	rel := []*shareConsumer{
		startShareConsumer(t, addr, relGroup, topic, "rel1", "explicit", "release:3"),
		startShareConsumer(t, addr, relGroup, topic, "rel2", "explicit", "release:3"),
	}
	rej := startShareConsumer(t, addr, rejGroup, topic, "rej", "explicit", "reject:7")
	want := shareValues(100)
	twice := map[string]int{}
	for _, v := range want {
		if strings.HasSuffix(v, "3") {
			twice[v] = 2
		}
	}
	awaitDeliveries(t, want, twice, rel...)
	awaitDeliveries(t, want, nil, rej)
	produceMarker(t, addr, topic)
	awaitDeliveries(t, []string{"end"}, nil, rel...)
	awaitDeliveries(t, []string{"end"}, nil, rej)
	for _, c := range append(rel, rej) {
		c.p.stop(t, time.Minute)
	}
	noAckFailures(t, append(rel, rej)...)

	// Deliveries and acknowledgements are compared as sets: the two
	// consumers' outputs are not ordered between them.
	got := deliveries(rel...)
	for _, v := range want {
		counts := countsOf(got[v])
		slices.Sort(counts)
		wantCounts := []int{1}
		if twice[v] == 2 {
			wantCounts = []int{1, 2}
		}
		if !slices.Equal(counts, wantCounts) {
			t.Errorf("release group: record %s delivered with counts %v, want %v", v, counts, wantCounts)
		}
	}
	acks := map[string][]string{}
	for _, c := range rel {
		for k, a := range c.acks() {
			acks[k] = append(acks[k], a...)
		}
	}
	for i := range 100 {
		want := []string{"ACCEPT"}
		if i%10 == 3 {
			want = []string{"ACCEPT", "RELEASE"}
		}
		a := acks["0/"+strconv.Itoa(i)]
		slices.Sort(a)
		if !slices.Equal(a, want) {
			t.Errorf("release group: offset %d acknowledged %v, want %v", i, a, want)
		}
	}

	got = deliveries(rej)
	rejAcks := rej.acks()
	for i, v := range want {
		if len(got[v]) != 1 || got[v][0].count != 1 {
			t.Errorf("reject group: record %s deliveries %+v, want one", v, got[v])
		}
		wantAck := "ACCEPT"
		if strings.HasSuffix(v, "7") {
			wantAck = "REJECT"
		}
		if a := rejAcks["0/"+strconv.Itoa(i)]; !slices.Equal(a, []string{wantAck}) {
			t.Errorf("reject group: offset %d acknowledged %v, want [%s]", i, a, wantAck)
		}
	}
}

// A consumer killed with kill -9 while it holds acquired records: they are
// delivered to another consumer with delivery count 2. Kafka 4.4 releases
// them as soon as the dead consumer's connection closes (its share session
// goes with it); at the latest the acquisition lock
// (share.record.lock.duration.ms, set to its minimum, 15 s) frees them. The
// holder acknowledges implicitly, the other explicitly.
func TestShareGroupJavaKilledHolder(t *testing.T) {
	t.Parallel()
	addr, topic, group := shareSetup(t, "share-kill", 20, "share.record.lock.duration.ms=15000")
	holder := startShareConsumer(t, addr, group, topic, "holder", "implicit", "hold")
	holder.p.waitOutput(t, "REC ", 2*time.Minute)
	holder.p.kill()
	held := holder.recs()
	if len(held) == 0 {
		t.Fatal("the holder printed no record")
	}
	if a := holder.lines("ACK"); len(a) != 0 {
		t.Fatalf("the holder acknowledged %v", a)
	}
	other := startShareConsumer(t, addr, group, topic, "other", "explicit", "accept")
	want := shareValues(20)
	awaitDeliveries(t, want, nil, other)
	other.p.stop(t, time.Minute)
	noAckFailures(t, other)
	got := deliveries(other)
	for _, h := range held {
		if h.count != 1 {
			t.Errorf("the holder got %s with delivery count %d, want 1", h.value, h.count)
		}
		if rs := got[h.value]; len(rs) != 1 || rs[0].count != 2 {
			t.Errorf("held record %s redelivered as %+v, want once with delivery count 2", h.value, rs)
		}
	}
}

// A record released on every delivery is delivered exactly
// share.delivery.count.limit times (its minimum, 2) and then archived;
// the others once.
func TestShareGroupJavaDeliveryLimit(t *testing.T) {
	t.Parallel()
	addr, topic, group := shareSetup(t, "share-limit", 20, "share.delivery.count.limit=2")
	c := startShareConsumer(t, addr, group, topic, "c", "explicit", "release-always:5")
	want := shareValues(20)
	awaitDeliveries(t, want, map[string]int{"v5": 2, "v15": 2}, c)
	produceMarker(t, addr, topic)
	awaitDeliveries(t, []string{"end"}, nil, c)
	c.p.stop(t, time.Minute)
	noAckFailures(t, c)
	got := deliveries(c)
	for _, v := range want {
		counts := countsOf(got[v])
		wantCounts := []int{1}
		if v == "v5" || v == "v15" {
			wantCounts = []int{1, 2}
		}
		if !slices.Equal(counts, wantCounts) {
			t.Errorf("record %s delivered with counts %v, want %v", v, counts, wantCounts)
		}
	}
}

// kafka-share-groups (--list, --describe with offsets, members and state,
// --reset-offsets, --delete-offsets, --delete) and
// kafka-console-share-consumer on a share group.
func TestShareGroupJavaTools(t *testing.T) {
	t.Parallel()
	addr, topic, group := shareSetup(t, "share-tools", 10)
	tool := func(args ...string) string {
		t.Helper()
		out, _ := kafkaTool(t, addr, "org.apache.kafka.tools.consumer.group.ShareGroupCommand", args...)
		t.Logf("kafka-share-groups %s\n%s", strings.Join(args, " "), out)
		return out
	}

	// The console share consumer reads (and accepts) three records; the
	// others it acquired go back when it closes (on Kafka 4.4 it acquires
	// all ten and releases seven, which member1 then gets with delivery
	// count 2).
	out, _ := kafkaTool(t, addr, "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
		"--topic", topic, "--group", group, "--max-messages", "3", "--timeout-ms", "60000")
	if got := strings.Fields(out); len(got) != 3 {
		t.Fatalf("kafka-console-share-consumer printed %q, want three records", out)
	}

	// stopMember stops c and waits until the group is Empty.
	stopMember := func(c *shareConsumer) {
		t.Helper()
		c.p.stop(t, time.Minute)
		if err := await.Poll(time.Minute, time.Second, func() error {
			if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Empty") {
				return fmt.Errorf("--describe --state after %s left:\n%s", c.name, out)
			}
			return nil
		}); err != nil {
			t.Fatalf("still not so after %v: %v", time.Minute, err)
		}
	}

	c := startShareConsumer(t, addr, group, topic, "member1", "explicit", "accept")
	awaitDeliveries(t, shareValues(10)[3:], nil, c)
	if err := await.Poll(time.Minute, time.Second, func() error {
		if out := tool("--list"); !strings.Contains(out, group) {
			return fmt.Errorf("--list lacks %s:\n%s", group, out)
		}
		if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Stable") {
			return fmt.Errorf("--describe --state:\n%s", out)
		}
		if out := tool("--describe", "--group", group, "--members"); !strings.Contains(out, "member1") || !strings.Contains(out, topic+":0") {
			return fmt.Errorf("--describe --members:\n%s", out)
		}
		// Every record is acknowledged: lag 0. Kafka moves the start offset
		// lazily (it showed 3 here, the first offset the second member got).
		if out := tool("--describe", "--group", group); !shareDescribeRow(out, group, topic, "0", "", "0") {
			return fmt.Errorf("--describe:\n%s", out)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	if out := tool("--list", "--state"); !strings.Contains(out, "Stable") {
		t.Fatalf("--list --state:\n%s", out)
	}

	stopMember(c)
	if out := tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute"); !strings.Contains(out, topic) {
		t.Fatalf("--reset-offsets:\n%s", out)
	}
	if out := tool("--describe", "--group", group); !shareDescribeRow(out, group, topic, "0", "0", "10") {
		t.Fatalf("--describe after --reset-offsets --to-earliest:\n%s", out)
	}
	// After the reset every record is delivered again.
	c = startShareConsumer(t, addr, group, topic, "member2", "implicit", "accept")
	awaitDeliveries(t, shareValues(10), nil, c)
	stopMember(c)
	if out := tool("--delete-offsets", "--group", group, "--topic", topic); !strings.Contains(out, topic) {
		t.Fatalf("--delete-offsets:\n%s", out)
	}
	if out := tool("--describe", "--group", group); shareDescribeRow(out, group, topic, "0", "", "") {
		t.Fatalf("--describe after --delete-offsets still shows the offsets:\n%s", out)
	}
	if out := tool("--delete", "--group", group); !strings.Contains(out, "was successful") {
		t.Fatalf("--delete:\n%s", out)
	}
	if out := tool("--list"); strings.Contains(out, group) {
		t.Fatalf("--list after --delete:\n%s", out)
	}
}

// shareDescribeRow reports whether kafka-share-groups --describe printed
// the row GROUP TOPIC PARTITION START-OFFSET LAG; an empty start or lag
// matches any.
func shareDescribeRow(out, group, topic, partition, start, lag string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == group && f[1] == topic && f[2] == partition &&
			(start == "" || f[3] == start) && (lag == "" || f[4] == lag) {
			return true
		}
	}
	return false
}
