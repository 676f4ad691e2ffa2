package bench

import (
	"context"
	"testing"
	"time"
)

// The scaling workloads' multi-topic produce and multi-consumer read on
// the in-process gateway: every record produced over 3 topics lands
// (summed high watermarks) and 4 consumers on assigned partitions read
// exactly that many.
func TestScalingTopicsAndConsumers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tg, err := NewTarget("gateway-inproc", &TargetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = tg.Stop() })
	const n = 3000
	p, err := RunProduce(ctx, ProduceOptions{Brokers: tg.Brokers(), Topic: "sc", Topics: 3, Records: n, RecordSize: 50,
		Producers: 2, Partitions: 4, CreateTopic: true, Idempotent: true, Warmup: true, MaxDuration: 30 * time.Second})
	if err != nil || !p.Complete || p.Counted != n {
		t.Fatalf("produce: %+v %v", p, err)
	}
	var hwm int64
	for _, tn := range topicNames("sc", 3) {
		m, err := EndOffsets(ctx, tg.Brokers(), tn, 4)
		if err != nil || m < n/3 {
			t.Fatalf("%s: high watermark %d (%v)", tn, m, err)
		}
		hwm += m
	}
	if hwm != n+2 { // + one warm-up record per producer
		t.Fatalf("high watermarks sum to %d, want %d", hwm, n+2)
	}
	c, err := RunConsume(ctx, ConsumeOptions{Brokers: tg.Brokers(), Topic: "sc", Topics: 3, Partitions: 4, Consumers: 4,
		Records: n + 2, MaxDuration: 30 * time.Second})
	if err != nil || !c.Complete || c.Counted != n+2 {
		t.Fatalf("consume: %+v %v", c, err)
	}
}
