package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/cluster/clustertest"
	"github.com/iggy-kafka/gateway/internal/await"
)

// clusterGateways spawns gateway binaries 1..n in one cluster over one
// Iggy (the real server under the iggy-server backend, else the
// imitation over an embedded store) and an in-process etcd.
type clusterGateways struct {
	t       *testing.T
	dataDir string
	etcd    *clustertest.Etcd
	id      string // --cluster-id
	procs   map[int]*process
	all     []incarnation // every gateway process started, killed ones too
	extra   []string      // more flags of every gateway
}

// incarnation is one gateway process: its id and which start of it.
type incarnation struct {
	name string // "gw2#1": gateway 2, its second start
	p    *process
}

func newClusterGateways(t *testing.T) *clusterGateways {
	if os.Getenv(backendEnv) == "iggy" {
		// The default pass runs it on the same imitation server.
		t.Skip("cluster mode runs on the default and iggy-server passes")
	}
	return &clusterGateways{t: t, dataDir: t.TempDir(), etcd: clustertest.StartEtcd(t),
		id: fmt.Sprintf("e2e-%d", time.Now().UnixNano()), procs: map[int]*process{}}
}

// newCluster spawns gateways 1..n of a new cluster, and returns a context
// that ends after timeout or when cancelled.
func newCluster(t *testing.T, n int, timeout time.Duration) (*clusterGateways, context.Context, context.CancelFunc) {
	t.Helper()
	cg := newClusterGateways(t)
	for id := 1; id <= n; id++ {
		cg.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	return cg, ctx, cancel
}

// adminWithTopic is a franz-go client on gateway 1 (with opts) that has
// created topic with 12 partitions.
func (cg *clusterGateways) adminWithTopic(topic string, opts ...kgo.Opt) *kgo.Client {
	cg.t.Helper()
	admin := newClient(cg.t, cg.procs[1].Addr, opts...)
	createTopic(cg.t, admin, topic, 12)
	return admin
}

// waitBrokers waits until a Metadata request through admin lists n
// brokers.
func (cg *clusterGateways) waitBrokers(ctx context.Context, admin *kgo.Client, n int) {
	cg.t.Helper()
	await.Until(cg.t, 20*time.Second, func() error {
		if bs, err := cg.brokers(ctx, admin); err != nil || len(bs) != n {
			return fmt.Errorf("brokers %v (%v), want %d", bs, err, n)
		}
		return nil
	})
}

// client is a franz-go client of the cluster (opts added), seeded with
// every live gateway.
func (cg *clusterGateways) client(opts ...kgo.Opt) *kgo.Client {
	return newClient(cg.t, cg.procs[1].Addr, append([]kgo.Opt{kgo.SeedBrokers(cg.seeds()...)}, opts...)...)
}

// producer is a franz-go producer (idempotent and acks=all: kgo's
// defaults) of the cluster writing to topic's partitions in turn, retrying
// a record for up to a minute; opts are added.
func (cg *clusterGateways) producer(topic string, opts ...kgo.Opt) *kgo.Client {
	return cg.client(append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordRetries(1000), kgo.RetryTimeout(time.Minute)}, opts...)...)
}

// start spawns gateway id (again, after a kill).
func (cg *clusterGateways) start(id int) *process {
	cg.t.Helper()
	args := append(iggyArgs(cg.t, cg.dataDir),
		"--cluster-etcd-endpoints="+cg.etcd.Endpoint, "--cluster-id="+cg.id,
		"--instance-id="+strconv.Itoa(id), "--cluster-session-ttl-secs=3",
		"--default-partitions=12")
	p := spawnGateway(cg.t, cg.dataDir, append(args, cg.extra...)...)
	starts := 0
	for _, in := range cg.all {
		if strings.HasPrefix(in.name, fmt.Sprintf("gw%d#", id)) {
			starts++
		}
	}
	cg.procs[id] = p
	cg.all = append(cg.all, incarnation{name: fmt.Sprintf("gw%d#%d", id, starts), p: p})
	return p
}

func (cg *clusterGateways) seeds() []string {
	var out []string
	for _, p := range cg.procs {
		if !p.exited() {
			out = append(out, p.Addr)
		}
	}
	return out
}

// brokers is what a Metadata request to cl's seed answers now (kadm's
// metadata calls may be served from the client's cache).
func (cg *clusterGateways) brokers(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// readLog reads topic from its start through the live gateways until n
// records arrived (or a minute passed) and returns them in fetch order.
func (cg *clusterGateways) readLog(ctx context.Context, t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	reader := cg.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n && ctx.Err() == nil {
		recs = append(recs, reader.PollFetches(ctx).Records()...)
	}
	return recs
}

// onceInLog fails t unless every acknowledged value is in recs exactly
// once; it returns how often each value is there.
func onceInLog(t *testing.T, recs []*kgo.Record, acked []string) map[string]int {
	t.Helper()
	inLog := make(map[string]int, len(recs))
	for _, r := range recs {
		inLog[string(r.Value)]++
	}
	for _, v := range acked {
		if inLog[v] != 1 {
			t.Fatalf("acknowledged %s is in the log %d times (%d acked, %d read)", v, inLog[v], len(acked), len(recs))
		}
	}
	return inLog
}

// ackedRecord is one record a producer had acknowledged, and where.
type ackedRecord struct {
	value     string
	partition int32
	offset    int64
}

// steadyProducer is a franz-go producer (idempotent, acks=all) writing
// "<prefix>NNNNNN" to a topic through every gateway, one record every
// 2 ms until finish, keeping what was acknowledged, when, and what failed.
type steadyProducer struct {
	cl       *kgo.Client
	mu       sync.Mutex
	acked    []ackedRecord
	ackTimes []time.Time
	failed   []error
	stop     chan struct{}
	done     chan struct{}
}

func (cg *clusterGateways) startProducer(ctx context.Context, t *testing.T, topic, prefix string) *steadyProducer {
	p := &steadyProducer{
		cl:   cg.producer(topic, kgo.ProduceRequestTimeout(5*time.Second)),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			v := fmt.Sprintf("%s%06d", prefix, i)
			p.cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.failed = append(p.failed, err)
					return
				}
				p.acked = append(p.acked, ackedRecord{value: v, partition: r.Partition, offset: r.Offset})
				p.ackTimes = append(p.ackTimes, time.Now())
			})
			time.Sleep(2 * time.Millisecond) // the pace of the load, not a wait
		}
	}()
	return p
}

// ackedNow is how many records have been acknowledged so far.
func (p *steadyProducer) ackedNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// finish stops producing and waits for every record's outcome; the
// fields are then the producer's final account.
func (p *steadyProducer) finish(ctx context.Context, t *testing.T) {
	close(p.stop)
	<-p.done
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// values are the acknowledged records' values, in acknowledgement order.
func (p *steadyProducer) values() []string {
	out := make([]string, 0, len(p.acked))
	for _, a := range p.acked {
		out = append(out, a.value)
	}
	return out
}
