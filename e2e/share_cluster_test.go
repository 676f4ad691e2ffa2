package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// Share groups (KIP-932) in cluster mode (issue 28): three gateways over
// one Iggy, share consumers seeded with all of them, and the gateway
// coordinating the share group killed with kill -9 mid-load and not
// restarted. The two guarantees of the single-gateway crash tests
// (share_crash_test.go) hold across the handover: no record whose accept
// was answered is delivered again, and every record not accepted is.

// waitViews waits until each live gateway, asked itself, answers Metadata
// with n brokers: gateways apply a membership change at slightly different
// moments, and a placement read through a gateway that has not applied
// the last one names other leaders and coordinators.
func (cg *clusterGateways) waitViews(ctx context.Context, cl *kgo.Client, n int) {
	cg.t.Helper()
	await.Until(cg.t, 20*time.Second, func() error {
		for id, p := range cg.procs {
			if p.exited() {
				continue
			}
			resp, err := cl.Broker(id).Request(ctx, kmsg.NewPtrMetadataRequest())
			if err != nil {
				return fmt.Errorf("gateway %d: %w", id, err)
			}
			if bs := resp.(*kmsg.MetadataResponse).Brokers; len(bs) != n {
				return fmt.Errorf("gateway %d lists %d brokers, want %d", id, len(bs), n)
			}
		}
		return nil
	})
}

// shareClusterLeaders returns, by gateway id, the partitions of topic that
// gateway leads in a Metadata answer through cl.
func shareClusterLeaders(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) map[int][]int32 {
	t.Helper()
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("Metadata %s: %v", topic, err)
	}
	if err := td[topic].Err; err != nil {
		t.Fatalf("Metadata %s: %v", topic, err)
	}
	out := map[int][]int32{}
	for _, p := range td[topic].Partitions.Sorted() {
		out[int(p.Leader)] = append(out[int(p.Leader)], p.Partition)
	}
	return out
}

// shareClusterGroup picks a group id (base-0, base-1, ...) whose
// coordinator leads at least one partition in leaders, so that killing
// the coordinator moves both the group and share-partition state, and
// returns it with its coordinator. Placement is a hash of the id over the
// live gateways and does not depend on the group existing.
func shareClusterGroup(ctx context.Context, t *testing.T, cg *clusterGateways, cl *kgo.Client, base string, leaders map[int][]int32) (string, int) {
	t.Helper()
	for i := 0; i < 50; i++ {
		group := fmt.Sprintf("%s-%d", base, i)
		if coord := cg.coordinatorOf(ctx, t, cl, group); len(leaders[coord]) > 0 {
			return group, coord
		}
	}
	t.Fatalf("none of 50 group ids is coordinated by a gateway leading a partition (leaders %v)", leaders)
	return "", 0
}

// shareDescribedAfter is nil once ShareGroupDescribe (sent by kadm to the
// group's coordinator) shows group Stable on a gateway other than killed,
// with members members that together hold every partition of topic.
func shareDescribedAfter(ctx context.Context, adm *kadm.Client, group, topic string, parts, members, killed int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	described, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return err
	}
	d := described[group]
	if d.Err != nil {
		return d.Err
	}
	held := d.AssignedPartitions()[topic]
	if int(d.Coordinator.NodeID) == killed || d.GroupState != "Stable" || len(d.Members) != members || len(held) != parts {
		return fmt.Errorf("coordinator %d, state %s, %d members, partitions %v; want a gateway other than %d, Stable, %d members holding all %d partitions",
			d.Coordinator.NodeID, d.GroupState, len(d.Members), held, killed, members, parts)
	}
	return nil
}

// logShareOnFailure logs, if t failed, what each gateway process logged
// about share groups and the cluster.
func (cg *clusterGateways) logShareOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	for _, in := range cg.all {
		var ls []string
		for _, l := range strings.Split(in.p.Log(), "\n") {
			if strings.Contains(l, "cluster: appended") {
				continue // one line per produce batch: would crowd out the rest
			}
			if strings.Contains(l, "share") || strings.Contains(l, "cluster") ||
				strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
				ls = append(ls, l)
			}
		}
		t.Logf("%s log (share, cluster, warnings):\n%s", in.name, tail(strings.Join(ls, "\n"), 120))
	}
}

// TestClusterShareGroupCoordinatorKill: three gateways; a topic of three
// partitions holding 3000 unique values; three franz-go share consumers,
// seeded with every gateway, accept every record they get with explicit
// acknowledgements, each delivery and each answered accept kept in a
// shareLedger. Once a third of the accepts were answered, the gateway
// coordinating the share group (FindCoordinator key type 0), chosen to
// lead a partition too, is killed with kill -9 and not restarted; the
// consumers go on through the other two. Then: no value whose accept was
// answered is delivered again (a delivery read after the answer came);
// every value is delivered and accepted, and the share-partition start
// offsets (DescribeShareGroupOffsets) reach the partitions' ends; another
// gateway describes the group Stable with the three consumers.
//
// An accept sent before the kill and not answered may or may not have been
// stored: such a value may stay unconfirmed. An accept answered with an
// error, or sent after the kill and not answered, was not stored, so its
// value must be delivered again (settled waits for it).
func TestClusterShareGroupCoordinatorKill(t *testing.T) {
	// Serial: three gateways against 3 s session leases.
	const (
		topic     = "share-cluster"
		n, parts  = 3000, 3
		consumers = 3
	)
	start := time.Now()
	cg, ctx, cancel := newCluster(t, 3, 8*time.Minute)
	defer cancel()
	t.Cleanup(func() { cg.logShareOnFailure(t) })
	admin := cg.client(kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(1000), kgo.RetryTimeout(time.Minute))
	cg.waitBrokers(ctx, admin, 3)
	cg.waitViews(ctx, admin, 3)
	createTopic(t, admin, topic, parts)
	leaders := shareClusterLeaders(ctx, t, admin, topic)
	group, coord := shareClusterGroup(ctx, t, cg, admin, "share-cluster-group", leaders)
	t.Logf("partition leaders %v; group %s coordinated by gateway %d", leaders, group, coord)

	values, ends := produceShareValues(t, admin, topic, "share-cluster", n, parts)
	setGroupConfigs(t, admin, group, "share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", strconv.Itoa(shareLockMs))

	l := newShareLedger(values)
	stop := l.startConsumers(ctx, t, consumers, cg.seeds(), group, topic)

	await.Until(t, 3*time.Minute, func() error {
		if c := l.confirmedCount(); c < n/3 {
			return fmt.Errorf("%d of %d accepts answered", c, n/3)
		}
		return nil
	})
	// The placement read before the group existed holds while the view
	// does; ask again right before the kill in case it moved.
	if now := cg.coordinatorOf(ctx, t, admin, group); now != coord {
		t.Logf("group %s moved from gateway %d to %d before the kill", group, coord, now)
		coord = now
	}
	led := shareClusterLeaders(ctx, t, admin, topic)[coord]
	cg.procs[coord].Kill()
	l.mu.Lock()
	l.killedAt = time.Now()
	l.mu.Unlock()
	atKill := l.confirmedCount()
	t.Logf("killed gateway %d (coordinator of %s, leader of partitions %v) with %d of %d accepts answered",
		coord, group, led, atKill, n)

	// The admin client is made again after an error: kgo keeps asking a
	// coordinator it cached while dials to it fail, and that was the
	// killed gateway.
	var adm *kadm.Client
	var lastErr error
	if err := await.Poll(4*time.Minute, 500*time.Millisecond, func() error {
		if adm == nil {
			adm = kadm.NewClient(cg.client())
		}
		defer func() {
			if lastErr != nil {
				adm.Close()
				adm = nil
			}
		}()
		startsErr := shareStartsAt(adm, group, topic, ends)
		if lastErr = l.settled(startsErr == nil); lastErr != nil {
			if startsErr != nil {
				lastErr = fmt.Errorf("%w; %w", lastErr, startsErr)
			}
			return lastErr
		}
		if lastErr = startsErr; lastErr != nil {
			return lastErr
		}
		lastErr = shareDescribedAfter(ctx, adm, group, topic, parts, consumers, coord)
		return lastErr
	}); err != nil {
		t.Fatalf("after the kill: %v", lastErr)
	}
	stop()
	summary := l.verify(t, values)
	t.Logf("%d values; %d accepts answered at the kill; %s; took %v", n, atKill, summary, time.Since(start).Round(time.Millisecond))
}

// javaShareWatch reads the output of ShareCheck consumers (share_java_test.go)
// as it grows. Each scan is one tick; a line is stamped with the tick of
// the scan that first saw it, so a line seen at an earlier tick was
// printed before a line seen at a later one, whichever consumer printed
// them. Only the caller's goroutine uses it.
type javaShareWatch struct {
	cs       []*shareConsumer
	pos      []int // bytes of each consumer's output read so far
	tick     int
	killTick int              // the last tick before the kill; 0 until then
	value    map[int64]string // by offset (one partition), from REC lines
	recs     map[string][]javaShareRec
	acked    map[string]javaShareAck // the first confirmed accept of a value
	failed   int                     // ACK-FAILED lines
	bad      []string                // deliveries after a confirmed accept
}

// javaShareRec is one REC line: a delivery of a value.
type javaShareRec struct {
	tick, count int
	consumer    string
}

// javaShareAck is the first ACK line of a value.
type javaShareAck struct {
	tick     int
	consumer string
}

func newJavaShareWatch(cs ...*shareConsumer) *javaShareWatch {
	return &javaShareWatch{cs: cs, pos: make([]int, len(cs)), value: map[int64]string{},
		recs: map[string][]javaShareRec{}, acked: map[string]javaShareAck{}}
}

// scan reads the complete lines each consumer printed since the last scan.
// A REC line of a value whose ACK line was seen at an earlier tick, or
// earlier in the same consumer's output, is a delivery after the accept
// was answered (ShareCheck prints ACK from the acknowledgement commit
// callback, after the broker answered). Lines of two consumers seen in
// the same tick are not ordered, so such a pair is not counted.
func (w *javaShareWatch) scan() {
	w.tick++
	for i, c := range w.cs {
		out := c.p.out.String()
		end := strings.LastIndexByte(out, '\n') + 1
		if end <= w.pos[i] {
			continue
		}
		for _, line := range strings.Split(out[w.pos[i]:end-1], "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			switch {
			case f[0] == "REC" && len(f) == 5:
				off, _ := strconv.ParseInt(f[2], 10, 64)
				count, _ := strconv.Atoi(f[3])
				v := f[4]
				w.value[off] = v
				if a, ok := w.acked[v]; ok && (a.tick < w.tick || a.consumer == c.name) {
					w.bad = append(w.bad, fmt.Sprintf("%s delivered to %s (count %d) after %s's accept was answered", v, c.name, count, a.consumer))
				}
				w.recs[v] = append(w.recs[v], javaShareRec{tick: w.tick, count: count, consumer: c.name})
			case f[0] == "ACK" && len(f) == 4:
				off, _ := strconv.ParseInt(f[2], 10, 64)
				if v, ok := w.value[off]; ok {
					if _, seen := w.acked[v]; !seen {
						w.acked[v] = javaShareAck{tick: w.tick, consumer: c.name}
					}
				}
			case f[0] == "ACK-FAILED":
				w.failed++
			}
		}
		w.pos[i] = end
	}
}

// settled is nil once every value was delivered and every value delivered
// after the kill has a confirmed accept. A value last delivered before the
// kill and never confirmed may have had its accept stored by the killed
// gateway without an answer; DescribeShareGroupOffsets decides for those.
func (w *javaShareWatch) settled(values []string) error {
	for _, v := range values {
		rs := w.recs[v]
		if len(rs) == 0 {
			return fmt.Errorf("%s not delivered yet (%d of %d values delivered)", v, len(w.recs), len(values))
		}
		if _, ok := w.acked[v]; !ok && (w.killTick == 0 || rs[len(rs)-1].tick > w.killTick) {
			return fmt.Errorf("%s delivered %d times, no accept confirmed yet", v, len(rs))
		}
	}
	return nil
}

// TestClusterShareGroupJavaLeaderKill: three gateways; a one-partition
// topic that a steady producer (idempotent, acks=all, one record every
// 2 ms through every gateway) writes throughout; a share group coordinated
// by a gateway that does not lead the partition; three Java 4.4
// KafkaShareConsumers (ShareCheck, two acknowledging implicitly, one
// explicitly; accept everything; bootstrap all three gateways). Once 1000
// records have confirmed accepts, the gateway leading the partition is
// killed with kill -9 and not restarted: the partition and its
// share-partition state move to another gateway, and the load goes on
// until 3000 records were produced after the kill.
//
// How it counts (javaShareWatch): REC lines are deliveries, ACK lines
// accepts the broker answered (the commit callback), stamped by the scan
// that first saw them. Before the kill every record is delivered exactly
// once. Across it: no value is delivered after its accept was answered;
// every record the producer had acknowledged is delivered; every value
// delivered after the kill ends with a confirmed accept; and the
// share-partition start offset reaches the end of the partition (nothing
// left unacknowledged). Values delivered again are the ones acquired and
// not confirmed at the kill; they are counted and logged.
func TestClusterShareGroupJavaLeaderKill(t *testing.T) {
	// Serial: three gateways, three JVMs, 3 s session leases.
	needJava(t)
	const topic = "share-cluster-java"
	start := time.Now()
	cg, ctx, cancel := newCluster(t, 3, 8*time.Minute)
	defer cancel()
	t.Cleanup(func() { cg.logShareOnFailure(t) })
	admin := cg.client()
	cg.waitBrokers(ctx, admin, 3)
	cg.waitViews(ctx, admin, 3)
	createTopic(t, admin, topic, 1)
	leader := 0
	for id, ps := range shareClusterLeaders(ctx, t, admin, topic) {
		leader = id
		t.Logf("gateway %d leads %s partitions %v", id, topic, ps)
	}
	// The coordinator stays: only the partition and its state move.
	var group string
	for i := 0; group == ""; i++ {
		if i == 50 {
			t.Fatalf("50 group ids all coordinated by gateway %d", leader)
		}
		g := fmt.Sprintf("share-cluster-java-group-%d", i)
		if coord := cg.coordinatorOf(ctx, t, admin, g); coord != leader {
			group = g
			t.Logf("group %s coordinated by gateway %d", g, coord)
		}
	}
	setGroupConfigs(t, admin, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000")

	bootstrap := strings.Join(cg.seeds(), ",")
	src := javaSource(t, "java/src/ShareCheck.java")
	var cs []*shareConsumer
	for i, mode := range []string{"implicit", "implicit", "explicit"} {
		name := fmt.Sprintf("c%d", i+1)
		cs = append(cs, &shareConsumer{name: name, p: javaStart(t, name, src, bootstrap, group, topic, mode, "accept", "0", "0",
			"client.id="+name, "metadata.max.age.ms=5000", "reconnect.backoff.max.ms=1000")})
	}
	w := newJavaShareWatch(cs...)
	prod := cg.startProducer(ctx, t, topic, "j")
	finished := false
	t.Cleanup(func() {
		if !finished {
			close(prod.stop)
			<-prod.done
		}
	})

	if err := await.Poll(4*time.Minute, 20*time.Millisecond, func() error {
		w.scan()
		if len(w.acked) < 1000 {
			return fmt.Errorf("%d of 1000 accepts confirmed (%d records produced)", len(w.acked), prod.ackedNow())
		}
		return nil
	}); err != nil {
		t.Fatalf("before the kill: %v", err)
	}
	w.scan()
	w.killTick = w.tick
	cg.procs[leader].Kill()
	atKill, producedAtKill := len(w.acked), prod.ackedNow()
	t.Logf("killed gateway %d (leader of %s/0) with %d accepts confirmed, %d records produced", leader, topic, atKill, producedAtKill)
	if err := await.Poll(4*time.Minute, 20*time.Millisecond, func() error {
		w.scan()
		if c := prod.ackedNow(); c < producedAtKill+3000 {
			return fmt.Errorf("%d records produced since the kill, want 3000", c-producedAtKill)
		}
		return nil
	}); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	finished = true
	prod.finish(ctx, t)
	values := prod.values()
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	t.Logf("%d records produced and acknowledged (%d failed), partition end %d", len(values), len(prod.failed), end.Offset)

	adm := kadm.NewClient(admin)
	var lastErr error
	if err := await.Poll(4*time.Minute, 200*time.Millisecond, func() error {
		w.scan()
		if lastErr = w.settled(values); lastErr != nil {
			return lastErr
		}
		lastErr = shareStartsAt(adm, group, topic, map[int32]int64{0: end.Offset})
		return lastErr
	}); err != nil {
		t.Fatalf("after the kill: %v", lastErr)
	}
	for _, c := range cs {
		c.p.stop(t, time.Minute)
	}
	w.scan()

	for i, b := range w.bad {
		if i == 10 {
			t.Errorf("... %d more", len(w.bad)-10)
			break
		}
		t.Error(b)
	}
	var again, unconfirmed int
	for v, rs := range w.recs {
		before := 0
		for _, r := range rs {
			if r.tick <= w.killTick {
				before++
			}
		}
		if before > 1 {
			t.Errorf("%s delivered %d times before the kill: %+v", v, before, rs)
		}
		if len(rs) > 1 {
			again++
		}
		if _, ok := w.acked[v]; !ok {
			unconfirmed++
		}
	}
	t.Logf("%d values delivered (%d acknowledged to the producer); %d accepts confirmed at the kill; %d values delivered more than once (around the kill); %d never confirmed (accept sent to the killed gateway, stored, unanswered); %d ACK-FAILED lines; took %v",
		len(w.recs), len(values), atKill, again, unconfirmed, w.failed, time.Since(start).Round(time.Millisecond))
}
