package handlers

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/internal/fetchcache"
)

// failingSync stages appends on the embedded store and fails their
// durability wait, as a failed fsync does.
type failingSync struct {
	*embedded.Store
	waited int
}

func (f *failingSync) AppendStaged(ctx context.Context, stream, topic string, p int32, batch []byte, prep bridge.Prepared) (uint64, func(context.Context) error, error) {
	base, _, err := f.Store.AppendStaged(ctx, stream, topic, p, batch, prep)
	return base, func(context.Context) error {
		f.waited++
		return fmt.Errorf("%w: fsync failed", bridge.ErrStorage)
	}, err
}

type orderCounter struct{ n int }

func (o *orderCounter) ReleaseOrder() { o.n++ }

// A staged write whose durability wait fails is answered with the store's
// error, and its records are not cached for Fetch; the connection's order
// is released once, after the records were written.
func TestProduceStagedDurableFails(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(c *Config) { c.TailCacheBytes = 1 << 20 })
	createTopic(t, g, "sf", 1)
	fs := &failingSync{Store: g.Store.(*embedded.Store)}
	g.Store = fs
	oc := &orderCounter{}
	c := newCall(g, 0, 9)
	c.Order = oc
	resp := roundTrip(t, c, produceReq(9, "sf", 0, valueBatch(3))).(*kmsg.ProduceResponse)
	pr := resp.Topics[0].Partitions[0]
	if pr.ErrorCode != kerr.KafkaStorageError.Code || pr.BaseOffset != -1 {
		t.Fatalf("code %d base %d, want KAFKA_STORAGE_ERROR", pr.ErrorCode, pr.BaseOffset)
	}
	if fs.waited != 1 || oc.n != 1 {
		t.Fatalf("durability waited %d times, order released %d times; want 1 and 1", fs.waited, oc.n)
	}
	if _, _, _, _, ok := g.tail.Get(fetchcache.Key{Topic: "sf"}, nil, 0, 1<<62, 1<<20, nil, new(fetchcache.Refs)); ok {
		t.Error("records whose sync failed were cached")
	}
}
