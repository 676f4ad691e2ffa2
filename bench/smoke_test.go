package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs every workload briefly against the in-process gateway and
// kfake and checks that each run completed and counted every record; it
// asserts nothing about speed. It keeps the harness from rotting in CI.
func TestSmoke(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := &TargetConfig{}
	for _, name := range []string{"gateway-inproc", "kfake"} {
		t.Run(name, func(t *testing.T) {
			tg := startTarget(t, ctx, name, cfg)
			const n = 3000
			p, err := RunProduce(ctx, ProduceOptions{Brokers: tg.Brokers(), Topic: "smoke", Records: n, RecordSize: 100,
				Producers: 2, Partitions: 2, CreateTopic: true, Idempotent: true, Warmup: true, MaxDuration: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if !p.Complete || p.Counted != n || p.Bytes != n*100 || p.Latency == nil || p.Latency.Count != n {
				t.Fatalf("produce: %+v", p)
			}
			hwm, err := EndOffsets(ctx, tg.Brokers(), "smoke", 2)
			if err != nil || hwm != n+2 { // + one warm-up record per producer
				t.Fatalf("high watermark %d (%v), want %d", hwm, err, n+2)
			}
			c, err := RunConsume(ctx, ConsumeOptions{Brokers: tg.Brokers(), Topic: "smoke", Records: n + 2, MaxDuration: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if !c.Complete || c.Counted != n+2 {
				t.Fatalf("consume: %+v", c)
			}
			e, err := RunE2E(ctx, E2EOptions{Produce: ProduceOptions{Brokers: tg.Brokers(), Topic: "smoke-e2e", Records: 500,
				RecordSize: 64, CreateTopic: true, Acks: "leader", Rate: 2000, Linger: -1, MaxDuration: 30 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			if !e.Complete || e.Counted != 500 || e.E2ELatency == nil || e.E2ELatency.Count != 500 {
				t.Fatalf("e2e: %+v (e2e latency %+v)", e, e.E2ELatency)
			}
			if err := DeleteTopic(ctx, tg.Brokers(), "smoke"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The scaling workloads' multi-topic produce and multi-consumer read on
// the in-process gateway: every record produced over 3 topics lands
// (summed high watermarks) and 4 consumers on assigned partitions read
// exactly that many.
func TestScalingTopicsAndConsumers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tg := startTarget(t, ctx, "gateway-inproc", &TargetConfig{})
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

// startTarget makes and starts target name, stopped (and the stop
// checked) when the test ends.
func startTarget(t *testing.T, ctx context.Context, name string, cfg *TargetConfig) Target {
	t.Helper()
	tg, err := NewTarget(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := tg.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return tg
}

// TestSmokeCompare runs a one-repetition comparison of tiny workloads on
// the in-process targets and checks the table, the ratios and the files.
func TestSmokeCompare(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws := []Workload{
		{Name: "produce-100B", Kind: "produce", RecordSize: 100, Records: 2000, Partitions: 1, Producers: 1},
		{Name: "consume-1KiB", Kind: "consume", RecordSize: 1024, Records: 1000, Partitions: 1},
		{Name: "latency-100B", Kind: "latency", RecordSize: 100, Records: 500, Partitions: 1, Producers: 1, Seconds: 1, PeakOf: "produce-100B", Linger: -1},
	}
	c, err := Compare(ctx, CompareOptions{Targets: []string{"gateway-inproc", "kfake", "kfake-blackhole"}, Workloads: ws,
		Reps: 1, MaxDuration: 30 * time.Second, Acks: "all", Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 8 { // 3 targets x 3 workloads, minus consume on the blackhole
		t.Errorf("%d runs, want 8", len(c.Runs))
	}
	for _, r := range c.Runs {
		if !r.Complete || r.Counted != r.Records {
			t.Errorf("%s on %s: counted %d of %d: %s", r.Workload, r.Target, r.Counted, r.Records, r.Err)
		}
	}
	for _, row := range c.Rows {
		if row.Target != "gateway-inproc" && row.GatewayX <= 0 {
			t.Errorf("%s on %s: no ratio to the gateway", row.Workload, row.Target)
		}
	}
	if c.Rates["latency-100B"] <= 0 {
		t.Error("the latency workload got no rate from the gateway's peak")
	}
	dir := t.TempDir()
	files, err := c.WriteFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "compare.md"))
	for _, want := range []string{"| produce-100B | kfake |", "machine:", "target from the issues"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"127.0.0.1:9092", "localhost:1", "[::1]:9092", "127.0.0.2:9092"} {
		if err := CheckLoopback([]string{a}); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"10.0.0.1:9092", "example.com:9092", "0.0.0.0:9092", "nohost"} {
		if err := CheckLoopback([]string{a}); err == nil {
			t.Errorf("%s accepted", a)
		}
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// The transaction workloads on the in-process gateway (transactions
// enabled) and kfake: a transactional run commits every TxnEvery records,
// so the high watermark holds the records, the warm-up records and one
// marker per transaction; read_committed and read_uncommitted consumers
// both read exactly the records.
func TestTxnWorkloads(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"gateway-inproc", "kfake"} {
		t.Run(name, func(t *testing.T) {
			tg := startTarget(t, ctx, name, &TargetConfig{Transactions: true})
			const n = 2500
			po := ProduceOptions{Brokers: tg.Brokers(), Topic: "txn", Records: n, RecordSize: 100, Producers: 2, Partitions: 2,
				CreateTopic: true, Idempotent: true, Warmup: true, TxnEvery: 1000, MaxDuration: 30 * time.Second}
			lo, hi := po.Markers()
			if lo != 2+2+2 || hi != 2*lo { // per producer: the warm-up's and two of 1250 records, on 1 or 2 partitions
				t.Fatalf("markers %d to %d, want 6 to 12", lo, hi)
			}
			p, err := RunProduce(ctx, po)
			if err != nil || !p.Complete || p.Counted != n {
				t.Fatalf("produce: %+v %v", p, err)
			}
			hwm, err := EndOffsets(ctx, tg.Brokers(), "txn", 2)
			if err != nil || hwm < n+2+lo || hwm > n+2+hi {
				t.Fatalf("high watermark %d (%v), want %d to %d", hwm, err, n+2+lo, n+2+hi)
			}
			for _, committed := range []bool{false, true} {
				c, err := RunConsume(ctx, ConsumeOptions{Brokers: tg.Brokers(), Topic: "txn", Records: n + 2, ReadCommitted: committed,
					MaxDuration: 30 * time.Second})
				if err != nil || !c.Complete || c.Counted != n+2 {
					t.Fatalf("consume (read_committed %v): %+v %v", committed, c, err)
				}
			}
		})
	}
}

// The share workload through Compare on the in-process gateway and kfake:
// records written first, then three share consumers of one group
// (share.auto.offset.reset set to earliest by the run) deliver and accept
// every offset of the two partitions, and the share table shows the runs.
func TestShareWorkload(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws := []Workload{{Name: "share-tiny", Kind: "share", RecordSize: 100, Records: 2000, Partitions: 2, Consumers: 3}}
	c, err := Compare(ctx, CompareOptions{Targets: []string{"gateway-inproc", "kfake", "kfake-blackhole"}, Workloads: ws,
		Reps: 1, MaxDuration: 30 * time.Second, Acks: "all", Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 2 { // nothing to read on the blackhole
		t.Errorf("%d runs, want 2", len(c.Runs))
	}
	for _, r := range c.Runs {
		if !r.Complete || r.Counted != 2000 || r.Bytes != 2000*100 || r.FirstRecord <= 0 {
			t.Errorf("%s on %s: %+v", r.Workload, r.Target, r)
		}
	}
	md := c.Markdown()
	for _, want := range []string{"Share groups: franz-go share consumers", "| share-tiny | gateway-inproc | 1/1 |", "| share-tiny | kfake | 1/1 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
}
