package e2e

// A gateway that cannot show its session is live stops writing: one frozen
// past its session TTL is fenced and comes back; with etcd itself down
// nobody writes, and once it is back each partition has one writer.

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// A gateway frozen with SIGSTOP past its session TTL loses its partitions
// to the others; after SIGCONT it notices the lost session by its own
// clock and does not write until it has registered again and the new
// membership settled. An idempotent producer running throughout has every
// acknowledged record in the log exactly once, and the gateways' logged
// appends show one writer per partition at a time.
func TestClusterFrozenGatewayIsFenced(t *testing.T) {
	// Serial: a 6 s freeze against 3 s session leases, and counts what is acknowledged meanwhile.
	cg, ctx, cancel := newCluster(t, 2, 2*time.Minute)
	defer cancel()
	const topic = "cluster-frozen"
	admin := cg.adminWithTopic(topic)
	cg.waitBrokers(ctx, admin, 2)
	prod := cg.startProducer(ctx, t, topic, "f")
	// Gateway 2 writes its partitions before it is frozen (else the
	// freeze would fence nothing).
	frozen := cg.procs[2]
	if err := await.Poll(30*time.Second, 100*time.Millisecond, func() error {
		if n := appendsOf(frozen, topic); n < 20 {
			return fmt.Errorf("gateway 2 appended %d batches", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 30*time.Second, err)
	}
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Frozen for twice the TTL (the freeze is what the test is about): etcd
	// expires its lease and gateway 1 takes over.
	time.Sleep(6 * time.Second)
	if err := frozen.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := await.Poll(30*time.Second, 100*time.Millisecond, func() error {
		if !strings.Contains(frozen.Log(), "the session lease expired") {
			return fmt.Errorf("gateway 2 did not notice its lost session")
		}
		if !strings.Contains(frozen.Log(), "registered again") {
			return fmt.Errorf("gateway 2 did not register again")
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 30*time.Second, err)
	}
	// And it takes its partitions back: the producer's records reach it
	// again.
	before := appendsOf(frozen, topic)
	if err := await.Poll(30*time.Second, 100*time.Millisecond, func() error {
		if n := appendsOf(frozen, topic); n < before+20 {
			return fmt.Errorf("gateway 2 appended %d batches since it registered again", n-before)
		}
		return nil
	}); err != nil {
		t.Fatalf("still not so after %v: %v", 30*time.Second, err)
	}
	prod.finish(ctx, t)
	acked := prod.values()
	if len(acked) < 500 {
		t.Fatalf("only %d records acknowledged", len(acked))
	}
	recs := cg.readLog(ctx, t, topic, len(acked))
	onceInLog(t, recs, acked)
	// The frozen gateway's partitions went to gateway 1 and came back; the
	// requests it had read before the freeze must not have been written by
	// it, under its old epoch, after gateway 1 took over. (How many
	// partitions changed writer depends on where the producer's requests
	// were when the freeze came, so it is logged, not asserted.)
	cg.oneWriterAtATime(t, topic, recs)
	t.Logf("%d acknowledged across the freeze, each once in the log", len(acked))
}

// probeWrites sends one non-idempotent record to each of the 12
// partitions of topic through each live gateway (raw Produce v9, acks=-1)
// and returns, per gateway id, the error code of each partition. Records
// a gateway accepted are in the log; their values are returned too.
func (cg *clusterGateways) probeWrites(t *testing.T, topic string, n *int) (map[int][]int16, []string) {
	t.Helper()
	codes := map[int][]int16{}
	var stored []string
	for id, p := range cg.procs {
		if p.exited() {
			continue
		}
		w := dialWire(t, p.Addr)
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		var vals []string
		for part := int32(0); part < 12; part++ {
			*n++
			v := fmt.Sprintf("p%06d", *n)
			vals = append(vals, v)
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = part
			rp.Records = recordBatch(-1, 0, v)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := w.roundTrip(req, 9, int32(*n)).(*kmsg.ProduceResponse)
		w.c.Close()
		cs := make([]int16, 12)
		for _, rp := range resp.Topics[0].Partitions {
			cs[rp.Partition] = rp.ErrorCode
			if rp.ErrorCode == 0 {
				stored = append(stored, vals[rp.Partition])
			}
		}
		codes[id] = cs
	}
	return codes, stored
}

// etcd itself stopped under load and kept down past the session TTL,
// then restarted on the same data directory and port. Two gateways and an
// idempotent franz-go producer: while etcd is down every gateway stops
// accepting writes once its session is no longer known live (raw probes
// to every partition through every gateway get only retriable
// NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT), and nobody takes over, so
// no partition is written twice; once etcd is back each partition is
// accepted by exactly one gateway and the producer carries on. In the end
// every acknowledged record is in the log exactly once, where it was
// acknowledged, in order per partition, with no record failed.
func TestClusterEtcdRestartUnderLoad(t *testing.T) {
	// Serial: restarts etcd on the same ports and times the refusals against the 3 s session TTL.
	cg, ctx, cancel := newCluster(t, 2, 3*time.Minute)
	defer cancel()
	const topic = "cluster-etcd-restart"
	admin := cg.adminWithTopic(topic)
	cg.waitBrokers(ctx, admin, 2)
	// acceptedOnce: each partition accepted by exactly one gateway, the
	// other answering NOT_LEADER_OR_FOLLOWER.
	probes := 0
	var probed []string
	acceptedOnce := func() error {
		codes, stored := cg.probeWrites(t, topic, &probes)
		probed = append(probed, stored...)
		for part := 0; part < 12; part++ {
			ok := 0
			for id, cs := range codes {
				switch cs[part] {
				case 0:
					ok++
				case 6: // NOT_LEADER_OR_FOLLOWER
				default:
					return fmt.Errorf("gateway %d answered partition %d with error %d", id, part, cs[part])
				}
			}
			if ok != 1 {
				return fmt.Errorf("partition %d accepted by %d gateways: %v", part, ok, codes)
			}
		}
		return nil
	}
	if err := await.Poll(20*time.Second, 200*time.Millisecond, acceptedOnce); err != nil {
		t.Fatalf("still not so after %v: %v", 20*time.Second, err)
	}

	prod := cg.startProducer(ctx, t, topic, "e")
	ackedNow := prod.ackedNow
	await.Until(t, 30*time.Second, func() error {
		if n := ackedNow(); n < 300 {
			return fmt.Errorf("%d acknowledged before the outage", n)
		}
		return nil
	})

	// etcd goes away: within the TTL every gateway refuses every write.
	const ttl = 3 * time.Second // --cluster-session-ttl-secs of clusterGateways
	// Stop takes seconds (etcd shuts down gracefully, still expiring the
	// leases nobody can renew): probe meanwhile. It answers no client
	// from the start.
	stopped := time.Now()
	stopDone := make(chan struct{})
	go func() {
		defer close(stopDone)
		cg.etcd.Stop()
	}()
	refuseAll := func() error {
		codes, stored := cg.probeWrites(t, topic, &probes)
		probed = append(probed, stored...)
		for id, cs := range codes {
			for part, c := range cs {
				switch c {
				case 6, 7: // NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT: retriable
				case 0:
					return fmt.Errorf("gateway %d still accepts partition %d", id, part)
				default:
					t.Fatalf("gateway %d answered partition %d with error %d while etcd is down", id, part, c)
				}
			}
		}
		return nil
	}
	if err := await.Poll(2*ttl, 50*time.Millisecond, refuseAll); err != nil {
		t.Fatalf("still not so after %v: %v", 2*ttl, err)
	}
	refusedAfter := time.Since(stopped)
	ackedAtRefusal := ackedNow()

	// Down for at least twice the TTL: the leases expire, but nobody can
	// take over either; the gateways keep refusing.
	<-stopDone
	time.Sleep(time.Until(stopped.Add(2 * ttl)))
	if err := refuseAll(); err != nil {
		t.Fatalf("with etcd down for %v: %v", time.Since(stopped), err)
	}
	for _, p := range cg.procs {
		if !strings.Contains(p.Log(), "etcd unreachable past the session") {
			t.Errorf("a gateway did not warn that etcd is unreachable")
		}
	}
	cg.etcd.Restart(t)
	restarted := time.Now()
	if err := await.Poll(time.Minute, 100*time.Millisecond, acceptedOnce); err != nil {
		t.Fatalf("still not so after %v: %v", time.Minute, err)
	}
	resumedAfter := time.Since(restarted)
	// The producer's own records flow again.
	await.Until(t, time.Minute, func() error {
		if n := ackedNow(); n < ackedAtRefusal+300 {
			return fmt.Errorf("%d acknowledged, %d at the outage", n, ackedAtRefusal)
		}
		return nil
	})
	prod.finish(ctx, t)
	acked, ackTimes, failed := prod.acked, prod.ackTimes, prod.failed
	if len(failed) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failed), failed[0])
	}
	// The clients' view of the outage: the longest wait between two acks.
	var gap time.Duration
	for i := 1; i < len(ackTimes); i++ {
		gap = max(gap, ackTimes[i].Sub(ackTimes[i-1]))
	}

	recs := cg.readLog(ctx, t, topic, len(acked)+len(probed))
	last := map[int32]string{}
	at := map[string]*kgo.Record{}
	for _, r := range recs {
		v := string(r.Value)
		at[v] = r
		if v[0] != 'e' {
			continue
		}
		if v <= last[r.Partition] {
			t.Errorf("partition %d: %s after %s", r.Partition, v, last[r.Partition])
		}
		last[r.Partition] = v
	}
	onceInLog(t, recs, append(prod.values(), probed...))
	for _, a := range acked {
		if r := at[a.value]; r.Partition != a.partition || r.Offset != a.offset {
			t.Fatalf("%s was acknowledged at %d/%d but is at %d/%d", a.value, a.partition, a.offset, r.Partition, r.Offset)
		}
	}
	cg.oneWriterAtATime(t, topic, recs)
	t.Logf("etcd down %v: writes refused %v after it stopped, accepted again %v after it restarted; longest wait between two acks %v; %d acknowledged, each once in the log",
		restarted.Sub(stopped).Round(10*time.Millisecond), refusedAfter.Round(10*time.Millisecond),
		resumedAfter.Round(10*time.Millisecond), gap.Round(10*time.Millisecond), len(acked))
}
