package e2e

// Streams groups (KIP-1071, group.protocol=streams) with the Kafka Streams
// 4.4 word count (e2e/java/src/WordCount.java) and kafka-streams-groups:
// the coordinator assigns the tasks, moves them when an instance dies,
// keeps a standby replica, and the tool lists, describes, resets and
// deletes the group.
//
// IGGY_KAFKA_E2E_KAFKA_ADDR=host:port runs these tests (all but the gateway
// restart) against that Apache Kafka broker instead of a gateway, which is
// how they were checked against Kafka 4.4.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// streamsGroupsClass is kafka-streams-groups' main class (Kafka 4.4).
const streamsGroupsClass = "org.apache.kafka.tools.streams.StreamsGroupCommand"

// wcParts is the partition count of the word count's input topic, so the
// topology has wcParts tasks in subtopology 0 (read the lines, re-key by
// word) and wcParts in subtopology 1 (count, with the store and its
// changelog partition of the same number).
const wcParts = 4

// wcAllTasks is every task of the word count topology.
var wcAllTasks = func() []string {
	var ts []string
	for sub := 0; sub < 2; sub++ {
		for p := 0; p < wcParts; p++ {
			ts = append(ts, fmt.Sprintf("%d_%d", sub, p))
		}
	}
	return ts
}()

// streamsRun is one word count test's world: where it runs, its
// application id (the group), its topics and the counts it expects.
type streamsRun struct {
	t        *testing.T
	addr     string
	app      string
	in, out  string
	cl       *kgo.Client
	want     map[string]int
	nextLine int
	apps     []*streamsApp // started, and not killed by the test
}

// newStreamsRun is streamsRunOn what the test runs against (shareTarget),
// once the Streams jars are there.
func newStreamsRun(t *testing.T, base string) *streamsRun {
	t.Helper()
	needJar(t, "kafka-streams-*.jar")
	addr, name := shareTarget(t)
	return streamsRunOn(t, addr, name, base)
}

// streamsRunOn creates the word count's input and output topics (wcParts
// partitions each) on addr, named by name (unique on a shared broker).
// The input topic must exist before the app starts: a streams group
// member whose source topic is missing gets status MISSING_SOURCE_TOPICS
// and the app fails after 10 s.
func streamsRunOn(t *testing.T, addr string, name func(string) string, base string) *streamsRun {
	t.Helper()
	r := &streamsRun{t: t, addr: addr, app: name(base + "-app"), in: name(base + "-lines"), out: name(base + "-counts"),
		cl: newClient(t, addr), want: map[string]int{}}
	createTopic(t, r.cl, r.in, wcParts)
	createTopic(t, r.cl, r.out, wcParts)
	return r
}

// produce produces n more lines of words (produceWordLines).
func (r *streamsRun) produce(n int) {
	r.t.Helper()
	produceWordLines(r.t, r.cl, r.in, r.nextLine, r.nextLine+n, r.want)
	r.nextLine += n
}

// repartition is the word count's repartition topic.
func (r *streamsRun) repartition() string { return r.app + "-words-repartition" }

// changelog is the count store's changelog topic.
func (r *streamsRun) changelog() string { return r.app + "-counts-changelog" }

// settled is nil once the output holds exactly the expected counts and the
// group committed the ends of its input and repartition topics: all the
// input is counted and a crash from here on reprocesses nothing, so even
// at_least_once counts stay exact after a kill -9.
func (r *streamsRun) settled() error {
	for _, a := range r.apps {
		select {
		case <-a.p.done:
			r.t.Fatalf("%s exited: %v", a.name, a.lines("STATE", 0))
		default:
		}
	}
	got, err := latestValues(r.t, r.addr, r.out)
	if err != nil {
		return err
	}
	if err := countsEqual(got, r.want); err != nil {
		return err
	}
	return committedAtEnd(r.t, r.cl, r.app, r.in, r.repartition())
}

// awaitSettled waits (3 min) for settled.
func (r *streamsRun) awaitSettled(what string) {
	r.t.Helper()
	var last error
	if err := await.Poll(3*time.Minute, time.Second, func() error { last = r.settled(); return last }); err != nil {
		r.t.Fatalf("%s: counts not settled after 3m: %v", what, last)
	}
}

// committedAtEnd is nil once group's committed offset of every partition
// of topics is the partition's end offset.
func committedAtEnd(t testing.TB, cl *kgo.Client, group string, topics ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	var bad []string
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(o.Topic, o.Partition)
		if o.Offset > 0 && (!ok || c.At != o.Offset) {
			bad = append(bad, fmt.Sprintf("%s[%d] committed %d (present %v), end %d", o.Topic, o.Partition, c.At, ok, o.Offset))
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("group %s: %s", group, strings.Join(bad, "; "))
	}
	return nil
}

// streamsApp is one running instance of the word count in a streams group.
type streamsApp struct {
	name string
	p    *javaProc
}

// start runs an instance of the word count with group.protocol=streams and
// a state dir of its own.
func (r *streamsRun) start(name string) *streamsApp {
	r.t.Helper()
	src := javaSource(r.t, "java/src/WordCount.java")
	a := &streamsApp{name: name, p: javaStart(r.t, name, src, r.addr, r.app, r.in, r.out, r.t.TempDir(),
		"at_least_once", "group.protocol=streams")}
	a.p.waitOutput(r.t, "RUNNING", 3*time.Minute)
	r.apps = append(r.apps, a)
	return a
}

// kill kills instance a (-9).
func (r *streamsRun) kill(a *streamsApp) {
	r.apps = slices.DeleteFunc(r.apps, func(x *streamsApp) bool { return x == a })
	a.p.kill()
}

// stop stops instance a cleanly (stdin closed).
func (r *streamsRun) stop(a *streamsApp) {
	r.t.Helper()
	r.apps = slices.DeleteFunc(r.apps, func(x *streamsApp) bool { return x == a })
	a.p.stop(r.t, time.Minute)
}

// lines returns the output lines of a that start with prefix+" ", split
// into fields, from byte from of the output on.
func (a *streamsApp) lines(prefix string, from int) [][]string {
	out := a.p.out.String()
	if from > len(out) {
		from = len(out)
	}
	var ls [][]string
	for _, l := range strings.Split(out[from:], "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == prefix {
			ls = append(ls, f[1:])
		}
	}
	return ls
}

// mark is a position in a's output: lines(prefix, mark) are those printed
// after it.
func (a *streamsApp) mark() int { return len(a.p.out.String()) }

// tasks returns the instance's latest TASKS line: its active and standby
// tasks (nil before it printed one).
func (a *streamsApp) tasks() (active, standby []string) {
	ls := a.lines("TASKS", 0)
	for i := len(ls) - 1; i >= 0; i-- {
		l := strings.Join(ls[i], " ")
		if !strings.HasSuffix(l, "]") {
			continue // a line being written
		}
		act, stb, ok := strings.Cut(l, " standby=")
		if !ok {
			continue
		}
		return taskList(strings.TrimPrefix(act, "active=")), taskList(stb)
	}
	return nil, nil
}

// taskList parses "[0_0, 1_2]".
func taskList(s string) []string {
	var ts []string
	for _, f := range strings.Split(strings.Trim(s, "[]"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			ts = append(ts, f)
		}
	}
	return ts
}

// running is nil if the instance's latest state is RUNNING.
func (a *streamsApp) running() error {
	ls := a.lines("STATE", 0)
	if len(ls) == 0 || ls[len(ls)-1][len(ls[len(ls)-1])-1] != "RUNNING" {
		return fmt.Errorf("%s: states %v, want RUNNING last", a.name, ls)
	}
	return nil
}

// restoreStarts returns, by changelog partition ("topic-p"), the offset
// each store restoration printed after mark started from.
func (a *streamsApp) restoreStarts(mark int) map[string]int64 {
	out := map[string]int64{}
	for _, f := range a.lines("RESTORE_START", mark) {
		if len(f) == 3 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			out[f[0]] = n
		}
	}
	return out
}

// standbyLoaded returns, by changelog partition, the highest offset the
// instance's standby tasks printed they applied.
func (a *streamsApp) standbyLoaded() map[string]int64 {
	out := map[string]int64{}
	for _, f := range a.lines("STANDBY_LOADED", 0) {
		if len(f) == 3 {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			out[f[0]] = max(out[f[0]], n)
		}
	}
	return out
}

// countTasks returns the count (subtopology 1) tasks among tasks.
func countTasks(tasks []string) []string {
	var out []string
	for _, task := range tasks {
		if strings.HasPrefix(task, "1_") {
			out = append(out, task)
		}
	}
	return out
}

// logTasks logs every TASKS line of apps, so a run shows how the tasks
// were spread and moved.
func logTasks(t *testing.T, apps ...*streamsApp) {
	for _, a := range apps {
		var ls []string
		for _, f := range a.lines("TASKS", 0) {
			ls = append(ls, strings.Join(f, " "))
		}
		t.Logf("%s tasks over time:\n%s", a.name, strings.Join(ls, "\n"))
	}
}

// spread is nil once every instance has some active tasks and together
// they own each task of the topology exactly once.
func spread(apps ...*streamsApp) error {
	var all []string
	for _, a := range apps {
		act, _ := a.tasks()
		if len(act) == 0 {
			return fmt.Errorf("%s has no active task", a.name)
		}
		all = append(all, act...)
	}
	slices.Sort(all)
	if !slices.Equal(all, wcAllTasks) {
		return fmt.Errorf("active tasks of the instances: %v, want each of %v once", all, wcAllTasks)
	}
	return nil
}

// TestStreamsGroupWordCountFailover: two instances of the word count in a
// streams group share its tasks; one is killed (-9) and its tasks move to
// the other, which restores their counts from the changelog; the final
// counts equal the input exactly.
//
// The kill comes after the counts are right and committed (settled), so
// at_least_once reprocesses nothing: Kafka itself would double-count the
// records processed but not committed before a crash, and this test checks
// the coordinator, not that.
func TestStreamsGroupWordCountFailover(t *testing.T) {
	t.Parallel()
	r := newStreamsRun(t, "sg-failover")
	r.produce(200)
	a, b := r.start("WordCount A"), r.start("WordCount B")
	defer logTasks(t, a, b)
	// Kafka 4.4's sticky assignor spreads each subtopology's tasks over
	// both instances (A 0_0 0_1 1_0 1_1, B 0_2 0_3 1_2 1_3 when B joined
	// A): B owns count tasks, whose stores must move with them.
	await.Until(t, 3*time.Minute, func() error {
		if err := spread(a, b); err != nil {
			return err
		}
		if act, _ := b.tasks(); len(countTasks(act)) == 0 {
			return fmt.Errorf("B owns no count task: %v", act)
		}
		return nil
	})
	r.awaitSettled("two instances")

	gone, _ := b.tasks()
	mark := a.mark()
	r.kill(b)
	r.produce(200)
	// The coordinator notices the dead member when its session times out
	// (streams.session.timeout.ms, 45 s by default).
	await.Until(t, 3*time.Minute, func() error { return spread(a) })
	r.awaitSettled("after the kill")
	// Each count task that moved restored its store from the changelog.
	restored := a.restoreStarts(mark)
	for _, task := range countTasks(gone) {
		p := strings.TrimPrefix(task, "1_")
		if _, ok := restored[r.changelog()+"-"+p]; !ok {
			t.Errorf("task %s moved to A, which printed no restoration of %s-%s (restorations: %v)", task, r.changelog(), p, restored)
		}
	}
	if err := a.running(); err != nil {
		t.Fatal(err)
	}
	r.stop(a)
}

// TestStreamsGroupStandbyFailover: the group config
// streams.num.standby.replicas=1 (the streams protocol ignores the app's
// num.standby.replicas; the group config is where it is set) gives each
// instance standby tasks for the other's count tasks; the instance owning
// count tasks is killed (-9), its tasks become active on the other, which
// restores their stores from where its standby was, not from the
// changelog's start, and the counts are exact.
//
// On Kafka 4.4 the first instance keeps count tasks 1_0 1_1 when the
// second joins, and the second loads its standby stores for them from the
// changelog (STANDBY_LOADED up to the end); after the kill the second
// printed RESTORE_START from the changelog's end (114 of 114), nothing to
// replay. A standby task on the instance that had the task active before
// keeps its store and loads nothing, so the test waits for loads only
// where the standby printed some.
func TestStreamsGroupStandbyFailover(t *testing.T) {
	t.Parallel()
	r := newStreamsRun(t, "sg-standby")
	out, _ := kafkaTool(t, r.addr, configsClass, "--alter", "--entity-type", "groups", "--entity-name", r.app,
		"--add-config", "streams.num.standby.replicas=1")
	if !strings.Contains(out, "Completed updating config") {
		t.Fatalf("kafka-configs --alter --entity-type groups %s: %s", r.app, out)
	}
	r.produce(200)
	a := r.start("WordCount A")
	await.Until(t, 3*time.Minute, func() error { return spread(a) })
	b := r.start("WordCount B")
	defer logTasks(t, a, b)
	// Standby tasks exist only for stateful tasks (subtopology 1): each
	// count task active on one instance is a standby task of the other.
	var victim, survivor *streamsApp
	var gone []string
	await.Until(t, 3*time.Minute, func() error {
		if err := spread(a, b); err != nil {
			return err
		}
		victim, survivor, gone = nil, nil, nil
		for _, pair := range [][2]*streamsApp{{a, b}, {b, a}} {
			act, _ := pair[0].tasks()
			_, stb := pair[1].tasks()
			for _, task := range countTasks(act) {
				if !slices.Contains(stb, task) {
					return fmt.Errorf("%s's active task %s is not a standby task of %s (its standby tasks: %v)", pair[0].name, task, pair[1].name, stb)
				}
			}
			if victim == nil && len(countTasks(act)) > 0 {
				victim, survivor, gone = pair[0], pair[1], countTasks(act)
			}
		}
		return nil
	})
	r.awaitSettled("two instances")
	var moved []string
	for _, task := range gone {
		moved = append(moved, r.changelog()+"-"+strings.TrimPrefix(task, "1_"))
	}
	ends := changelogEnds(t, r.cl, r.changelog())
	await.Until(t, 2*time.Minute, func() error {
		loaded := survivor.standbyLoaded()
		for _, tp := range moved {
			// The offset printed is a batch's last record's.
			if n, ok := loaded[tp]; ok && n < ends[tp]-1 {
				return fmt.Errorf("%s's standby of %s loaded up to %d, changelog end %d", survivor.name, tp, n, ends[tp])
			}
		}
		return nil
	})

	mark := survivor.mark()
	r.kill(victim)
	r.produce(200)
	await.Until(t, 3*time.Minute, func() error { return spread(survivor) })
	r.awaitSettled("after the kill")
	restored := survivor.restoreStarts(mark)
	for _, tp := range moved {
		if from, ok := restored[tp]; ok && ends[tp] > 0 && from == 0 {
			t.Errorf("%s restored %s from offset 0 after the kill, not from its standby store (changelog end before the kill %d)", survivor.name, tp, ends[tp])
		}
	}
	t.Logf("killed %s; changelog ends %v; standby loaded %v; restorations after the kill %v", victim.name, ends, survivor.standbyLoaded(), restored)
	if err := survivor.running(); err != nil {
		t.Fatal(err)
	}
	r.stop(survivor)
}

// changelogEnds returns the end offsets of topic by "topic-p".
func changelogEnds(t testing.TB, cl *kgo.Client, topic string) map[string]int64 {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(adminCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[fmt.Sprintf("%s-%d", o.Topic, o.Partition)] = o.Offset })
	return out
}

// TestStreamsGroupsTool: kafka-streams-groups lists a running word count's
// group, describes its state, its member with its tasks and its offsets
// with lag; once the app stopped (its member leaves the group on close) it
// resets the group's input offsets to the earliest and deletes the group.
// The lines asserted are those Kafka 4.4 prints (recorded below against a
// 4.4.0 broker, app "A", input "L").
func TestStreamsGroupsTool(t *testing.T) {
	t.Parallel()
	r := newStreamsRun(t, "sg-tool")
	tool := func(args ...string) string {
		t.Helper()
		out, _ := kafkaTool(t, r.addr, streamsGroupsClass, args...)
		return out
	}
	// rows returns the lines of out that start with the group, split into
	// fields (the tool pads columns with spaces).
	rows := func(out string) [][]string {
		var rs [][]string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == r.app {
				rs = append(rs, f[1:])
			}
		}
		return rs
	}
	r.produce(100)
	a := r.start("WordCount")
	await.Until(t, 3*time.Minute, func() error { return spread(a) })
	r.awaitSettled("one instance")
	inEnds := map[string]string{}
	for tp, end := range changelogEnds(t, r.cl, r.in) {
		inEnds[tp] = strconv.FormatInt(end, 10)
	}

	// "A\n" among the other groups.
	if out := tool("--list"); !slices.Contains(strings.Split(out, "\n"), r.app) {
		t.Errorf("--list: %q, want a line %q", out, r.app)
	}
	// GROUP COORDINATOR (ID)          ASSIGNOR STATE  #MEMBERS
	// A     127.0.0.1:19192 (1)       sticky   Stable 1
	out := tool("--describe", "--group", r.app, "--state")
	if rs := rows(out); len(rs) != 1 || len(rs[0]) != 5 || rs[0][0] != r.addr || rs[0][2] != "sticky" || rs[0][3] != "Stable" || rs[0][4] != "1" {
		t.Errorf("--describe --state:\n%s\nwant one row: %s (id) sticky Stable 1", out, r.addr)
	}
	// GROUP COORDINATOR (ID) ASSIGNOR STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS
	// A     127.0.0.1:19192 (1) sticky Stable 3       3                       1
	out = tool("--describe", "--group", r.app, "--state", "--verbose")
	if rs := rows(out); len(rs) != 1 || len(rs[0]) != 7 || rs[0][3] != "Stable" || rs[0][4] != rs[0][5] || rs[0][6] != "1" {
		t.Errorf("--describe --state --verbose:\n%s\nwant one Stable row, group epoch = target assignment epoch, 1 member", out)
	}
	// GROUP MEMBER                 PROCESS   CLIENT-ID                              ASSIGNMENTS
	// A     NR0Zt1DmTYKgE8oVfLE0hQ <uuid>    A-<uuid>-StreamThread-1-consumer      ACTIVE: 0:[0,1,2,3]; 1:[0,1,2,3];
	const allActive = "ACTIVE: 0:[0,1,2,3]; 1:[0,1,2,3];"
	out = tool("--describe", "--group", r.app, "--members")
	if rs := rows(out); len(rs) != 1 || len(rs[0]) < 4 || strings.Join(rs[0][3:], " ") != allActive ||
		rs[0][2] != r.app+"-"+rs[0][1]+"-StreamThread-1-consumer" {
		t.Errorf("--describe --members:\n%s\nwant one member: ID PROCESS %s-PROCESS-StreamThread-1-consumer %s", out, r.app, allActive)
	}
	// GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL MEMBER-EPOCH PROCESS CLIENT-ID ASSIGNMENTS
	// A     3                       0              NR0Z.. streams         3            <uuid>  A-..      ACTIVE: 0:[0,1,2,3]; 1:[0,1,2,3]; TARGET-ACTIVE: 0:[0,1,2,3]; 1:[0,1,2,3];
	out = tool("--describe", "--group", r.app, "--members", "--verbose")
	if rs := rows(out); len(rs) != 1 || len(rs[0]) < 8 || rs[0][0] != rs[0][4] || rs[0][1] != "0" || rs[0][3] != "streams" ||
		strings.Join(rs[0][7:], " ") != allActive+" TARGET-"+allActive {
		t.Errorf("--describe --members --verbose:\n%s\nwant one member: epoch = target assignment epoch, topology epoch 0, protocol streams, %s TARGET-%s", out, allActive, allActive)
	}
	// --describe is --describe --offsets:
	// GROUP TOPIC             PARTITION OFFSET-LAG
	// A     A-words-repartition 0       0
	// A     L                   0       0      (each partition of both)
	for _, args := range [][]string{{"--describe", "--group", r.app}, {"--describe", "--group", r.app, "--offsets"}} {
		out = tool(args...)
		var got []string
		for _, f := range rows(out) {
			if len(f) == 3 && f[2] == "0" {
				got = append(got, f[0]+"-"+f[1])
			}
		}
		slices.Sort(got)
		var want []string
		for _, topic := range []string{r.repartition(), r.in} {
			for p := 0; p < wcParts; p++ {
				want = append(want, fmt.Sprintf("%s-%d", topic, p))
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%v:\n%s\nwant a row with lag 0 for each of %v", args, out, want)
		}
	}
	// GROUP TOPIC PARTITION CURRENT-OFFSET LEADER-EPOCH LOG-END-OFFSET OFFSET-LAG
	// A     L     2         37             0            37             0
	// A     A-words-repartition 3 -        -            0              0   (nothing committed, empty)
	out = tool("--describe", "--group", r.app, "--offsets", "--verbose")
	seen := 0
	for _, f := range rows(out) {
		if len(f) == 6 && f[0] == r.in {
			seen++
			if end := inEnds[f[0]+"-"+f[1]]; f[2] != end || f[4] != end || f[5] != "0" {
				t.Errorf("--describe --offsets --verbose: %v, want current and log end offset %s, lag 0", f, end)
			}
		}
	}
	if seen != wcParts {
		t.Errorf("--describe --offsets --verbose:\n%s\nwant %d rows of %s", out, wcParts, r.in)
	}

	r.stop(a)
	// GROUP STATE
	// A     Empty
	if out := tool("--list", "--state"); !slices.ContainsFunc(rows(out), func(f []string) bool { return slices.Equal(f, []string{"Empty"}) }) {
		t.Errorf("--list --state after the app stopped:\n%s\nwant %s Empty", out, r.app)
	}
	// stderr "Error: Streams group 'A' has no active members." and
	// GROUP COORDINATOR (ID) ASSIGNOR STATE #MEMBERS
	// A     127.0.0.1:19192 (1) sticky Empty 0
	if out := tool("--describe", "--group", r.app, "--state"); !slices.ContainsFunc(rows(out), func(f []string) bool {
		return len(f) == 5 && f[3] == "Empty" && f[4] == "0"
	}) {
		t.Errorf("--describe --state after the app stopped:\n%s\nwant the group Empty with 0 members", out)
	}

	// GROUP TOPIC PARTITION NEW-OFFSET
	// A     L     2         0          (each partition of the input)
	out = tool("--reset-offsets", "--group", r.app, "--all-input-topics", "--to-earliest", "--execute")
	var reset []string
	for _, f := range rows(out) {
		if len(f) == 3 && f[0] == r.in && f[2] == "0" {
			reset = append(reset, f[1])
		}
	}
	if slices.Sort(reset); !slices.Equal(reset, []string{"0", "1", "2", "3"}) {
		t.Errorf("--reset-offsets --to-earliest --execute:\n%s\nwant %s partitions 0-3 at new offset 0", out, r.in)
	}
	committed, err := kadm.NewClient(r.cl).FetchOffsets(adminCtx(t), r.app)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < wcParts; p++ {
		if c, ok := committed.Lookup(r.in, p); !ok || c.At != 0 {
			t.Errorf("committed offset of %s[%d] after the reset: %d (present %v), want 0", r.in, p, c.At, ok)
		}
	}

	out = tool("--delete", "--group", r.app)
	if want := fmt.Sprintf("Deletion of requested streams groups ('%s') was successful.", r.app); !strings.Contains(out, want) {
		t.Errorf("--delete: %q, want %q", out, want)
	}
	if out := tool("--list"); slices.Contains(strings.Split(out, "\n"), r.app) {
		t.Errorf("--list after --delete: %q still lists %s", out, r.app)
	}
}

// TestStreamsGroupGatewayRestart: the gateway binary is stopped (SIGTERM)
// or killed (SIGKILL) and started again on the same data behind the same
// address while one instance of the word count runs; the app carries on
// (RUNNING, all tasks active) and counts the input produced after the
// restart on top of the counts from before, none lost. The restart comes
// after the counts are settled, so the exact counts do not depend on
// at_least_once.
//
// A single Kafka 4.4 broker restarted (SIGTERM) under the same app, by
// hand: the app stays RUNNING throughout, without a rebalance (no state
// change), and the counts are exact; its member keeps its id and epoch,
// because Kafka keeps the streams group in __consumer_offsets.
func TestStreamsGroupGatewayRestart(t *testing.T) {
	if os.Getenv(kafkaAddrEnv) != "" {
		t.Skip("restarts a gateway binary")
	}
	t.Parallel()
	needJar(t, "kafka-streams-*.jar")
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "SIGTERM", true: "SIGKILL"}[kill], func(t *testing.T) {
			t.Parallel()
			g := newProxiedGateway(t, 1<<62, t.TempDir())
			r := streamsRunOn(t, g.proxy.Addr(), func(s string) string { return s }, "sg-restart")
			r.produce(200)
			a := r.start("WordCount")
			defer logTasks(t, a)
			await.Until(t, 3*time.Minute, func() error { return spread(a) })
			r.awaitSettled("before the restart")

			if kill {
				g.cur.Kill()
			} else {
				g.cur.Stop()
			}
			g.start()
			// The group's committed offsets are where they were: the app
			// resumes from them instead of re-counting from the start.
			if err := committedAtEnd(t, r.cl, r.app, r.in, r.repartition()); err != nil {
				t.Errorf("right after the restart: %v", err)
			}
			r.produce(200)
			r.awaitSettled("after the restart")
			await.Until(t, 3*time.Minute, func() error {
				if err := a.running(); err != nil {
					return err
				}
				return spread(a)
			})
			r.stop(a)
		})
	}
}
