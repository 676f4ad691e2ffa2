package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// TestClusterStreamsGroupFailover: two instances of the Kafka Streams word
// count (e2e/java/src/WordCount.java, group.protocol=streams, bootstrap
// all three gateways) share the tasks of their streams group, which one
// gateway of three coordinates; that gateway is killed (-9) and not
// restarted. The group's placement moves to another gateway (FindCoordinator),
// the members rejoin it (membership is soft state: the new coordinator
// rebuilds the group from their heartbeats and topology),
// StreamsGroupDescribe there shows both members Stable with the tasks
// spread over them, both instances are RUNNING again, and the counts of
// the lines produced before and after the failover equal the input exactly.
//
// Why exact counts are the right assertion under at_least_once: the kill
// comes once the counts are settled (the output holds them and the group
// committed the ends of its input and repartition topics), and no line is
// produced until the group has re-formed on the new coordinator. The new
// coordinator does not know the members' epochs, so each member is fenced
// (UNKNOWN_MEMBER_ID) and closes its tasks dirty; at_least_once then redoes
// what was processed and not committed, which here is nothing. Committed
// offsets and the changelog are in the shared store, so a count below the
// input means the failover lost committed progress or state, and a count
// above it means the app redid committed work. (Lines arriving during the
// failover would be counted twice at least once: cluster mode keeps no
// streams-group membership across a coordinator move, docs/CONSUMER_GROUPS.md.)
func TestClusterStreamsGroupFailover(t *testing.T) {
	// Serial: three gateways, two JVMs and session leases of 3 s.
	w := startClusterWordCount(t, "csg")
	w.killCoordinator()
	w.awaitReformed()
	w.r.produce(200)
	w.awaitCounts("after the failover")
	w.stop()
}

// clusterWordCount is a word count in a streams group on three gateways.
type clusterWordCount struct {
	t      *testing.T
	cg     *clusterGateways
	ctx    context.Context
	cl     *kgo.Client // seeded with every gateway
	r      *streamsRun
	a, b   *streamsApp
	coord  int       // the gateway coordinating the group
	killed time.Time // when it was killed
}

// startClusterWordCount starts three gateways, creates the word count's
// topics (named after base), produces 200 lines, starts two instances
// bootstrapped with every gateway and waits until they share the tasks
// and the counts are settled; StreamsGroupDescribe on the coordinator
// shows the same. With --streams-groups=disabled Kafka Streams 4.4 does
// not fall back to the classic protocol: each instance stops with
// UnsupportedVersionException before RUNNING, and so does the test.
func startClusterWordCount(t *testing.T, base string) *clusterWordCount {
	t.Helper()
	needJar(t, "kafka-streams-*.jar")
	cg, ctx, cancel := newCluster(t, 3, 15*time.Minute)
	t.Cleanup(cancel)
	cl := cg.client()
	cg.waitBrokers(ctx, cl, 3)
	app := base + "-app"
	w := &clusterWordCount{t: t, cg: cg, ctx: ctx, cl: cl, coord: cg.coordinatorOf(ctx, t, cl, app)}
	// Placement does not depend on the group existing; the test reads
	// output and offsets through a gateway that survives the kill.
	var reader string
	for id, p := range cg.procs {
		if id != w.coord {
			reader = p.Addr
		}
	}
	w.r = &streamsRun{t: t, addr: reader, app: app, in: base + "-lines", out: base + "-counts", cl: cl, want: map[string]int{}}
	createTopic(t, cl, w.r.in, wcParts)
	createTopic(t, cl, w.r.out, wcParts)
	t.Cleanup(func() { cg.logStreamsOnFailure(t) })

	w.r.produce(200)
	bootstrap := strings.Join(cg.seeds(), ",")
	src := javaSource(t, "java/src/WordCount.java")
	startApp := func(name string) *streamsApp {
		return &streamsApp{name: name, p: javaStart(t, name, src, bootstrap, w.r.app, w.r.in, w.r.out, t.TempDir(),
			"at_least_once", "group.protocol=streams")}
	}
	w.a, w.b = startApp("WordCount A"), startApp("WordCount B")
	t.Cleanup(func() { logTasks(t, w.a, w.b) })
	w.a.p.waitOutput(t, "RUNNING", 3*time.Minute)
	w.b.p.waitOutput(t, "RUNNING", 3*time.Minute)
	await.Until(t, 3*time.Minute, func() error { return spread(w.a, w.b) })
	w.r.awaitSettled("two instances")
	// The placement read before the group existed may have moved while
	// the gateways' views settled: ask again, and read through another.
	w.coord = cg.coordinatorOf(ctx, t, cl, app)
	for id, p := range cg.procs {
		if id != w.coord {
			w.r.addr = p.Addr
		}
	}
	if err := describedSpread(ctx, cl, w.coord, app); err != nil {
		t.Fatalf("before the kill, gateway %d: %v", w.coord, err)
	}
	return w
}

// killCoordinator kills (-9) the gateway coordinating the group.
func (w *clusterWordCount) killCoordinator() {
	w.t.Logf("killing gateway %d, the coordinator of %s", w.coord, w.r.app)
	w.cg.procs[w.coord].Kill()
	w.killed = time.Now()
}

// awaitReformed waits until another gateway coordinates the group and
// describes it Stable with both members sharing the tasks, and both
// instances are RUNNING with the tasks spread over them.
func (w *clusterWordCount) awaitReformed() {
	w.t.Helper()
	killed := w.coord
	await.Until(w.t, 4*time.Minute, func() error {
		w.coord = w.cg.coordinatorOf(w.ctx, w.t, w.cl, w.r.app)
		if w.coord == killed {
			return fmt.Errorf("the killed gateway %d still coordinates %s", killed, w.r.app)
		}
		if err := describedSpread(w.ctx, w.cl, w.coord, w.r.app); err != nil {
			return fmt.Errorf("gateway %d: %w", w.coord, err)
		}
		for _, x := range []*streamsApp{w.a, w.b} {
			// An instance in ERROR never recovers.
			if strings.Contains(x.p.out.String(), "-> ERROR") {
				w.t.Fatalf("%s stopped (ERROR) during the failover:\n%s", x.name, tail(x.p.err.String(), 40))
			}
			if err := x.running(); err != nil {
				return err
			}
		}
		return spread(w.a, w.b)
	})
	w.t.Logf("gateway %d coordinates %s now; re-formed %v after the kill", w.coord, w.r.app, time.Since(w.killed).Round(time.Second))
}

// awaitCounts waits (3 min) until the output holds exactly the counts of
// the input and the group committed the ends of its input and repartition
// topics (streamsRun.settled). It fails at once on a count above the
// input's: counts only grow, so that is final.
func (w *clusterWordCount) awaitCounts(what string) {
	w.t.Helper()
	await.Until(w.t, 3*time.Minute, func() error {
		got, err := latestValues(w.t, w.r.addr, w.r.out)
		if err != nil {
			return err
		}
		var over []string
		for word, n := range w.r.want {
			if c, _ := strconv.Atoi(got[word]); c > n {
				over = append(over, fmt.Sprintf("%s %d, input %d", word, c, n))
			}
		}
		if len(over) > 0 {
			slices.Sort(over)
			w.t.Fatalf("%s: counts above the input's (work redone): %s", what, strings.Join(over, "; "))
		}
		if err := countsEqual(got, w.r.want); err != nil {
			return err
		}
		return committedAtEnd(w.t, w.cl, w.r.app, w.r.in, w.r.repartition())
	})
}

// stop checks both instances are still RUNNING and stops them.
func (w *clusterWordCount) stop() {
	w.t.Helper()
	for _, x := range []*streamsApp{w.a, w.b} {
		if err := x.running(); err != nil {
			w.t.Fatal(err)
		}
	}
	w.a.p.stop(w.t, time.Minute)
	w.b.p.stop(w.t, time.Minute)
}

// coordinatorOf returns the id of the live gateway a FindCoordinator (key
// type 0) through cl names as group's coordinator, failing t on an error
// answer or a gateway the test does not know.
func (cg *clusterGateways) coordinatorOf(ctx context.Context, t *testing.T, cl *kgo.Client, group string) int {
	t.Helper()
	return cg.coordinatorOfType(ctx, t, cl, group, 0)
}

// coordinatorOfType is coordinatorOf for key type typ (1: a
// transactional id).
func (cg *clusterGateways) coordinatorOfType(ctx context.Context, t *testing.T, cl *kgo.Client, group string, typ int8) int {
	t.Helper()
	var id int
	await.Until(t, time.Minute, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = typ
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Coordinators) != 1 {
			return fmt.Errorf("FindCoordinator answered %d coordinators", len(resp.Coordinators))
		}
		c := resp.Coordinators[0]
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return fmt.Errorf("FindCoordinator %s: %w", group, err)
		}
		addr := fmt.Sprintf("%s:%d", c.Host, c.Port)
		for i, p := range cg.procs {
			if p.Addr == addr && !p.exited() {
				id = i
				return nil
			}
		}
		return fmt.Errorf("FindCoordinator %s: node %d at %s, no live gateway there", group, c.NodeID, addr)
	})
	return id
}

// describedSpread is nil once StreamsGroupDescribe sent to gateway id
// shows group Stable with two members, each with some active tasks and
// together each task of the word count once.
func describedSpread(ctx context.Context, cl *kgo.Client, id int, group string) error {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	kresp, err := cl.Broker(id).Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.StreamsGroupDescribeResponse)
	if len(resp.Groups) != 1 {
		return fmt.Errorf("StreamsGroupDescribe answered %d groups", len(resp.Groups))
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return fmt.Errorf("StreamsGroupDescribe %s: %w", group, err)
	}
	var all, per []string
	for _, m := range g.Members {
		var mine []string
		for _, ts := range m.Assignment.ActiveTasks {
			for _, p := range ts.Partitions {
				mine = append(mine, fmt.Sprintf("%s_%d", ts.SubtopologyID, p))
			}
		}
		all = append(all, mine...)
		per = append(per, fmt.Sprintf("%s epoch %d %v", m.MemberID, m.MemberEpoch, mine))
		if len(mine) == 0 {
			return fmt.Errorf("%s %s: member %s has no active task (members: %v)", group, g.State, m.MemberID, per)
		}
	}
	slices.Sort(all)
	if g.State != "Stable" || len(g.Members) != 2 || !slices.Equal(all, wcAllTasks) {
		return fmt.Errorf("%s: %s with members %v; want Stable, 2 members owning each of %v once", group, g.State, per, wcAllTasks)
	}
	return nil
}

// logStreamsOnFailure logs, if t failed, what each gateway process logged
// about streams groups and group membership.
func (cg *clusterGateways) logStreamsOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	for _, in := range cg.all {
		var ls []string
		for _, l := range strings.Split(in.p.Log(), "\n") {
			if strings.Contains(l, "streams") || strings.Contains(l, "group") || strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
				ls = append(ls, l)
			}
		}
		t.Logf("%s log (streams, group, warnings):\n%s", in.name, tail(strings.Join(ls, "\n"), 80))
	}
}
