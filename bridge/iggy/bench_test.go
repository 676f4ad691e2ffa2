package iggy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
)

// nullStore keeps nothing but offsets, so a benchmark through iggytest
// measures the client, the TCP path and the server's frame checks (which
// include hashing every batch, as Iggy does) rather than a storage engine.
// The Backend calls iggytest does not make on this path are left nil.
type nullStore struct {
	bridge.Backend
	mu     sync.Mutex
	topics map[string]bridge.TopicInfo
	next   [64]atomic.Uint64
}

func newNullStore() *nullStore { return &nullStore{topics: make(map[string]bridge.TopicInfo)} }

func (n *nullStore) CreateTopic(_ context.Context, stream, topic string, p int32) (bridge.TopicInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.topics[topic]; ok {
		return bridge.TopicInfo{}, bridge.ErrTopicExists
	}
	t := bridge.TopicInfo{Stream: stream, Name: topic, ID: uint32(len(n.topics) + 1), Partitions: p, CreatedAt: 1}
	n.topics[topic] = t
	return t, nil
}

func (n *nullStore) DeleteTopic(context.Context, string, string) error { return nil }

func (n *nullStore) Topic(_ context.Context, _, topic string) (bridge.TopicInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.topics[topic]
	if !ok {
		return t, bridge.ErrTopicNotFound
	}
	return t, nil
}

func (n *nullStore) Topics(_ context.Context, stream string) ([]bridge.TopicInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []bridge.TopicInfo
	for _, t := range n.topics {
		if t.Stream == stream {
			out = append(out, t)
		}
	}
	return out, nil
}

func (n *nullStore) Append(_ context.Context, _, _ string, p int32, batch []byte) (uint64, error) {
	v, err := bridge.ParseIggyBatch(batch)
	if err != nil {
		return 0, err
	}
	return n.next[p%64].Add(uint64(v.Count)) - uint64(v.Count), nil
}

func (n *nullStore) Poll(context.Context, string, string, int32, uint64, int, func([]byte) bool) error {
	return nil
}

func (n *nullStore) Partition(_ context.Context, _, _ string, p int32) (bridge.PartitionState, error) {
	return bridge.PartitionState{Next: n.next[p%64].Load()}, nil
}

func (n *nullStore) OffsetForTimestamp(context.Context, string, string, int32, uint64) (uint64, bool, error) {
	return 0, false, nil
}

func (n *nullStore) Close() error { return nil }

// benchBatch is one send batch of count messages of size bytes.
func benchBatch(b *testing.B, count, size int) []byte {
	payload := make([]byte, size)
	return buildBatch(b, origin0, count, func(i int) testMsg {
		return testMsg{id: [16]byte{byte(i)}, ts: origin0 + uint64(i), payload: payload}
	})
}

func benchStore(b *testing.B, backing bridge.Backend, pool, partitions int) *Store {
	srv, err := iggytest.Start(backing, iggytest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	opts := testOptions(srv.Addr())
	opts.PoolSize = pool
	st, err := Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.CreateTopic(context.Background(), "kafka", "bench", int32(partitions)); err != nil {
		b.Fatal(err)
	}
	return st
}

var benchShapes = []struct{ count, size int }{{100, 100}, {100, 1024}, {1000, 100}}

func shapeName(count, size int) string {
	if size >= 1024 {
		return fmt.Sprintf("msgs=%d/size=%dKiB", count, size/1024)
	}
	return fmt.Sprintf("msgs=%d/size=%dB", count, size)
}

// BenchmarkSend: one producer, one partition, lockstep sends.
func BenchmarkSend(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(shapeName(sh.count, sh.size), func(b *testing.B) {
			st := benchStore(b, newNullStore(), 1, 1)
			batch := benchBatch(b, sh.count, sh.size)
			ctx := context.Background()
			b.SetBytes(int64(sh.count * sh.size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := st.Append(ctx, "kafka", "bench", 0, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*sh.count)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSendParallel: producers on 16 partitions over a pool of 4
// connections, so several sends are in flight at once.
func BenchmarkSendParallel(b *testing.B) {
	for _, sh := range benchShapes {
		b.Run(shapeName(sh.count, sh.size), func(b *testing.B) {
			const parts = 16
			st := benchStore(b, newNullStore(), 4, parts)
			batch := benchBatch(b, sh.count, sh.size)
			ctx := context.Background()
			var next atomic.Int32
			b.SetBytes(int64(sh.count * sh.size))
			b.ReportAllocs()
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				p := next.Add(1) % parts
				for pb.Next() {
					if _, err := st.Append(ctx, "kafka", "bench", p, batch); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*sh.count)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkSendEmbedded: the same single-producer send with the embedded
// store behind iggytest, for scale.
func BenchmarkSendEmbedded(b *testing.B) {
	st := benchStore(b, newEmbedded(b), 1, 1)
	batch := benchBatch(b, 100, 1024)
	ctx := context.Background()
	b.SetBytes(100 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Append(ctx, "kafka", "bench", 0, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "msgs/s")
}
