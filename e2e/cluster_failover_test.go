package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/internal/await"
)

// javaAcks parses AckedProducer's ACK lines, failing t on a FAIL line (a
// record the producer gave up on: with retries past any failover, only a
// fatal error does that) or when it did not finish with DONE.
func javaAcks(t *testing.T, p *javaProc) []ackedRecord {
	t.Helper()
	out := p.out.String()
	if !strings.Contains(out, "\nDONE ") {
		t.Fatalf("the Java producer did not finish cleanly:\n%s\nstderr: %s", tail(out, 20), tail(p.err.String(), 60))
	}
	var acks []ackedRecord
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			t.Fatalf("the Java producer gave up on a record: %s", line)
		}
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "ACK" {
			continue
		}
		part, err1 := strconv.Atoi(f[1])
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad line from the Java producer: %q", line)
		}
		acks = append(acks, ackedRecord{value: f[3], partition: int32(part), offset: off})
	}
	return acks
}

// Three gateways in front of one Iggy: Metadata lists all three and
// spreads the partitions' leaders over them. Two idempotent acks=all
// producers (franz-go and the Java client, AckedProducer.java) and two
// groups (three franz-go members; two Java members on the classic
// protocol, GroupMember.java) run on the same 12 partitions while one
// gateway is killed with SIGKILL, restarted, and a fourth is added. Then:
// every record either producer had acknowledged is in the log exactly
// once, at the partition and offset acknowledged, in produce order per
// partition and producer (Kafka's exactly-once in the log for idempotent
// producers); each group consumed every acknowledged record at least
// once (a rebalance may hand on records consumed but not yet committed:
// duplicates are counted and logged, as Kafka allows them); and the
// appends the gateways logged show one writer per partition at a time.
func TestClusterThreeGatewaysFailover(t *testing.T) {
	// Serial: counts what is acknowledged in set times, against 3 s session leases.
	needJava(t)
	producerSrc := javaSource(t, "java/src/AckedProducer.java")
	memberSrc := javaSource(t, "java/src/GroupMember.java")
	cg, ctx, cancel := newCluster(t, 3, 4*time.Minute)
	defer cancel()
	const topic = "cluster-orders"
	admin := cg.adminWithTopic(topic)
	cg.waitBrokers(ctx, admin, 3)
	leaders := map[int32]int{}
	td, err := kadm.NewClient(admin).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range td[topic].Partitions {
		leaders[p.Leader]++
	}
	if len(leaders) < 2 {
		t.Fatalf("12 partitions led by %v: not spread", leaders)
	}

	// The Java clients start first: their JVMs compile and join while the
	// rest starts. Their bootstrap is the three first gateways; they learn
	// of the fourth from Metadata.
	bootstrap := strings.Join(cg.seeds(), ",")
	javaProd := javaStart(t, "java-producer", producerSrc, bootstrap, topic, "12", "j")
	var javaGroup []*javaMember
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("java-member-%d", i)
		javaGroup = append(javaGroup, &javaMember{name: name, p: javaStart(t, name, memberSrc, bootstrap, "cluster-java", topic, "-",
			"group.protocol=classic", "client.id="+name, "session.timeout.ms=10000", "heartbeat.interval.ms=1000",
			"metadata.max.age.ms=5000", "reconnect.backoff.max.ms=1000")})
	}

	// The franz-go group: three members, consuming throughout.
	var mu sync.Mutex
	consumed := map[string]int{}
	groupCtx, stopGroup := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		cl := cg.client(kgo.ConsumerGroup("cluster-group"),
			kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for groupCtx.Err() == nil {
				fs := cl.PollFetches(groupCtx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					consumed[string(r.Value)]++
					mu.Unlock()
				})
			}
		}()
	}

	// The franz-go producer: idempotent (kgo's default), acks=all.
	prod := cg.producer(topic)
	var acked []ackedRecord
	var ackMu sync.Mutex
	seq := 0
	// produceFor produces for d, whatever gets acknowledged meanwhile: the
	// load runs for set times around the kill, restart and addition below.
	produceFor := func(d time.Duration) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			var batch sync.WaitGroup
			for j := 0; j < 50; j++ {
				v := fmt.Sprintf("r%06d", seq)
				seq++
				batch.Add(1)
				prod.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
					defer batch.Done()
					if err == nil {
						ackMu.Lock()
						acked = append(acked, ackedRecord{value: v, partition: r.Partition, offset: r.Offset})
						ackMu.Unlock()
					}
				})
			}
			batch.Wait()
		}
	}

	// The Java producer has records acknowledged and both Java members hold
	// partitions before anything fails.
	javaProd.waitOutput(t, "ACK ", 2*time.Minute)
	await.Until(t, 2*time.Minute, func() error {
		held := 0
		for _, m := range javaGroup {
			if len(m.owned()) == 0 {
				return fmt.Errorf("%s holds no partition yet", m.name)
			}
			held += len(m.owned())
		}
		if held != 12 {
			return fmt.Errorf("the Java members hold %d partitions, want 12", held)
		}
		return nil
	})

	produceFor(2 * time.Second)
	cg.procs[2].Kill() // SIGKILL: its lease expires after the TTL
	produceFor(6 * time.Second)
	cg.start(2)
	produceFor(3 * time.Second)
	cg.start(4)
	produceFor(3 * time.Second)
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	javaProd.stop(t, time.Minute)
	jacked := javaAcks(t, javaProd)
	// franz-go's producer sends in waves of 50 and waits for each: a wave
	// caught in a move waits for the client's next metadata refresh (at
	// most every 5 s by default), and three moves can take most of the
	// 14 s (800 records in one run on two busy cores).
	if len(acked) < 200 || len(jacked) < 1000 {
		t.Fatalf("only %d (franz-go) and %d (Java) records acknowledged", len(acked), len(jacked))
	}
	all := append(slices.Clip(acked), jacked...)

	// The log: every acknowledged record exactly once, where it was
	// acknowledged, in produce order per partition and producer (each
	// producer's values grow; "r" and "j" tell them apart).
	recs := cg.readLog(ctx, t, topic, len(all))
	last := map[string]string{}
	at := map[string]*kgo.Record{}
	for _, r := range recs {
		v := string(r.Value)
		k := fmt.Sprintf("%d/%c", r.Partition, v[0])
		if v <= last[k] {
			t.Errorf("partition %d: %s after %s", r.Partition, v, last[k])
		}
		last[k] = v
		at[v] = r
	}
	values := make([]string, len(all))
	for i, a := range all {
		values[i] = a.value
	}
	onceInLog(t, recs, values)
	for _, a := range all {
		if r := at[a.value]; r.Partition != a.partition || r.Offset != a.offset {
			t.Fatalf("%s was acknowledged at %d/%d but is at %d/%d", a.value, a.partition, a.offset, r.Partition, r.Offset)
		}
	}

	// Each group consumed every acknowledged record, at least once.
	await.Until(t, time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range all {
			if consumed[a.value] == 0 {
				return fmt.Errorf("the franz-go group has not consumed %s (of %d acked)", a.value, len(all))
			}
		}
		return nil
	})
	stopGroup()
	wg.Wait()
	javaConsumed := map[string]int{}
	if err := await.Poll(time.Minute, 500*time.Millisecond, func() error {
		clear(javaConsumed)
		for _, m := range javaGroup {
			for _, v := range m.records() {
				javaConsumed[v]++
			}
		}
		for _, a := range all {
			if javaConsumed[a.value] == 0 {
				return fmt.Errorf("the Java group has not consumed %s (of %d acked)", a.value, len(all))
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	for _, m := range javaGroup {
		m.p.stop(t, 30*time.Second)
	}
	again := func(c map[string]int) (n int) {
		for _, k := range c {
			if k > 1 {
				n++
			}
		}
		return n
	}
	t.Logf("%d records acknowledged (%d by the Java producer), each once in the log; consumed more than once (rebalances): %d by the franz-go group, %d by the Java group",
		len(all), len(jacked), again(consumed), again(javaConsumed))

	// One writer per partition at a time, and the partitions did move.
	if cg.oneWriterAtATime(t, topic, recs) == 0 {
		t.Error("no partition changed writer: the failover moved nothing")
	}

	// The fourth gateway joined: Metadata lists four brokers.
	bs, err := cg.brokers(ctx, admin)
	if err != nil || len(bs) != 4 {
		t.Fatalf("brokers after adding a fourth: %v %v", bs, err)
	}
}
