package loop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/handlers"
)

// stagedStore is the embedded store whose staged appends report each base
// offset as it is written, and whose durability wait for one chosen offset
// holds until the test lets it go.
type stagedStore struct {
	*embedded.Store
	staged chan uint64
	mu     sync.Mutex
	holdAt uint64
	gate   chan struct{}
}

func (s *stagedStore) AppendStaged(ctx context.Context, stream, topic string, p int32, batch []byte, prep bridge.Prepared) (uint64, func(context.Context) error, error) {
	base, durable, err := s.Store.AppendStaged(ctx, stream, topic, p, batch, prep)
	if err != nil {
		return base, durable, err
	}
	s.staged <- base
	s.mu.Lock()
	hold := base == s.holdAt && s.gate != nil
	gate := s.gate
	s.mu.Unlock()
	return base, func(ctx context.Context) error {
		if hold {
			<-gate
		}
		if durable != nil {
			return durable(ctx)
		}
		return nil
	}, nil
}

// Pipelined Produce requests on one connection: the second is written
// while the first still waits for its durability (its handler released
// the connection's order once its records were written), and the replies
// still leave in request order, at consecutive offsets.
func TestStagedProduceOverlapsDurableWait(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	ss := &stagedStore{Store: st, staged: make(chan uint64, 16)}
	srv := startServer(t, Config{Addr: "127.0.0.1:0", EventLoops: 1, Workers: 4},
		handlers.NewGateway(testGatewayConfig(), ss, nil), st, nil)
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, "staged") // offset 0
	<-ss.staged

	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open) // before the server's shutdown, which waits for the held request
	ss.mu.Lock()
	ss.holdAt, ss.gate = 1, gate
	ss.mu.Unlock()
	first, c1 := rc.frame(produceReq("staged", -1, "a"))
	second, c2 := rc.frame(produceReq("staged", -1, "b"))
	rc.write(append(first, second...))
	for want := uint64(1); want <= 2; want++ {
		select {
		case got := <-ss.staged:
			if got != want {
				t.Fatalf("staged offset %d, want %d", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("offset %d was not written while the request before it waited for its durability", want)
		}
	}
	open()
	expectProduceReplies(t, rc, []int32{c1, c2})
}
