package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// kgoMember is a franz-go group member that records what it consumed.
type kgoMember struct {
	cl     *kgo.Client
	mu     sync.Mutex
	got    map[string]int
	cancel context.CancelFunc
	done   chan struct{}
}

func startKgoMember(t *testing.T, addr string, opts ...kgo.Opt) *kgoMember {
	t.Helper()
	m := &kgoMember{got: map[string]int{}, done: make(chan struct{})}
	m.cl = newClient(t, addr, append([]kgo.Opt{kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			m.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { m.got[string(r.Value)]++ })
			m.mu.Unlock()
		}
	}()
	t.Cleanup(m.stop)
	return m
}

func (m *kgoMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close() // commits and leaves
}

// franz-go's KIP-848 consumer (kgo.ServerSideBalancer, franz-go v1.22.3,
// ConsumerGroupHeartbeat v1): three members share 12 partitions 4/4/4 as
// ConsumerGroupDescribe shows; one leaves and the others take its share;
// CreatePartitions reaches the assignment without a rejoin; every record
// is consumed (at least once: franz-go autocommits). A regex
// subscription (SubscribedTopicRegex) picks up a matching topic created
// while the member runs, without a rejoin.
func TestConsumerProtocolFranzGo(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withConsumerHeartbeat(300*time.Millisecond))
	const topic, group = "kip848-kgo", "kip848-kgo-grp"
	admin := clientWithTopic(t, gw.Addr, topic, 12)
	want := produceTagged(t, gw.Addr, topic, "a", 12, 20)
	opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic)}
	ms := []*kgoMember{startKgoMember(t, gw.Addr, opts...), startKgoMember(t, gw.Addr, opts...), startKgoMember(t, gw.Addr, opts...)}
	consumedAll := func(ms []*kgoMember, want []string) func() error {
		return func() error {
			n := map[string]int{}
			for _, m := range ms {
				m.mu.Lock()
				for v, c := range m.got {
					n[v] += c
				}
				m.mu.Unlock()
			}
			for _, v := range want {
				if n[v] == 0 {
					return fmt.Errorf("record %s not consumed", v)
				}
			}
			return nil
		}
	}
	describe := func() (*kmsg.ConsumerGroupDescribeResponseGroup, error) {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			return nil, err
		}
		return &resp.Groups[0], nil
	}
	spread := func(sizes []int) func() error {
		return func() error {
			g, err := describe()
			if err != nil {
				return err
			}
			var got []int
			for _, m := range g.Members {
				n := 0
				for _, tp := range m.Assignment.TopicPartitions {
					n += len(tp.Partitions)
				}
				got = append(got, n)
			}
			slices.Sort(got)
			if g.State != "Stable" || !slices.Equal(got, sizes) {
				return fmt.Errorf("group %s, member partitions %v, want %v", g.State, got, sizes)
			}
			return nil
		}
	}
	await.Until(t, time.Minute, spread([]int{4, 4, 4}))
	await.Until(t, time.Minute, consumedAll(ms, want))

	ms[1].stop()
	await.Until(t, time.Minute, spread([]int{6, 6}))
	more := produceTagged(t, gw.Addr, topic, "b", 12, 10)
	await.Until(t, time.Minute, consumedAll([]*kgoMember{ms[0], ms[2]}, more))

	// CreatePartitions reaches the assignment without a rejoin: 16
	// partitions, 8 each, and records on the new ones are consumed.
	if rs, err := kadm.NewClient(admin).CreatePartitions(adminCtx(t), 4, topic); err != nil || rs[topic].Err != nil {
		t.Fatalf("CreatePartitions: %v %+v", err, rs)
	}
	await.Until(t, time.Minute, spread([]int{8, 8}))
	grown := produceTagged(t, gw.Addr, topic, "c", 16, 5)
	await.Until(t, time.Minute, consumedAll([]*kgoMember{ms[0], ms[2]}, grown))

	// Regex: a topic created later that matches is assigned without a rejoin.
	createTopic(t, admin, "kip848-rx-1", 2)
	rx := startKgoMember(t, gw.Addr, kgo.ConsumerGroup("kip848-rx-grp"), kgo.ConsumeRegex(), kgo.ConsumeTopics("^kip848-rx-.*"),
		kgo.MetadataMinAge(500*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	first := produceTagged(t, gw.Addr, "kip848-rx-1", "rx1", 2, 5)
	await.Until(t, time.Minute, consumedAll([]*kgoMember{rx}, first))
	createTopic(t, admin, "kip848-rx-2", 3)
	second := produceTagged(t, gw.Addr, "kip848-rx-2", "rx2", 3, 5)
	await.Until(t, time.Minute, consumedAll([]*kgoMember{rx}, second))
}
