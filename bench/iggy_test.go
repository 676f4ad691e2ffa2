package bench

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// TestParseNative reads the summary lines iggy-bench prints (colour codes
// and all) into a result, and refuses output without them.
func TestParseNative(t *testing.T) {
	t.Parallel()
	out := "\x1b[2m2026-12-03T07:33:18Z\x1b[0m \x1b[32m INFO\x1b[0m bench_report::prints: Benchmark: Pinned Producer, 1 producers, " +
		"1 streams, 1 topic per stream, 1 partitions per topic, 200000 messages, 1000 messages per batch, 200 message batches, " +
		"100 bytes per message, 20MB of data processed\n\n\n" +
		"Producers Results: Total throughput: 239.44 MB/s, 2394419 messages/s, average throughput per Producer: 239.44 MB/s, " +
		"p50 latency: 0.40 ms, p90 latency: 0.59 ms, p95 latency: 0.64 ms, p99 latency: 0.73 ms, p999 latency: 0.82 ms, " +
		"p9999 latency: 0.82 ms, average latency: 0.41 ms, median latency: 0.40 ms, min: 0.34 ms, max: 0.47 ms, std dev: 0.02 ms, total time: 0.08 s\n"
	r, err := parseNative([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if r.messages != 200000 || r.msgsPerSec != 2394419 || r.mbPerSec != 239.44 {
		t.Fatalf("got %+v", r)
	}
	if l := r.latency; l == nil || l.P50 != 0.40 || l.P99 != 0.73 || l.P999 != 0.82 || l.Max != 0.47 {
		t.Fatalf("latency %+v", r.latency)
	}
	if _, err := parseNative([]byte("Error: connection refused\n")); err == nil {
		t.Fatal("parsed output without a summary")
	}
}

func TestNativeArgs(t *testing.T) {
	t.Parallel()
	w := Workload{Kind: "consume", RecordSize: 1024, Records: 300_000, Partitions: 4}
	got := strings.Join(nativeArgs("consume", w, 968, 310, "127.0.0.1:1", true, 0), " ")
	want := "--reuse-streams -m 1024 -P 968 -b 310 balanced-consumer-group -c 1 -g 1 -s 1 tcp --server-address 127.0.0.1:1"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	w = Workload{Kind: "produce", RecordSize: 100, Records: 1_000_000, Partitions: 1, Producers: 1}
	got = strings.Join(nativeArgs("produce", w, 9090, 111, "127.0.0.1:1", false, 121.5e6), " ")
	want = "--rate-limit 121500000B -m 100 -P 9090 -b 111 pinned-producer -p 1 -s 1 tcp --server-address 127.0.0.1:1"
	if got != want {
		t.Fatalf("paced: got  %s\nwant %s", got, want)
	}
	// -b is per producer: 111 batches over 4 producers are 28 each.
	w = Workload{Kind: "produce", RecordSize: 100, Records: 1_000_000, Partitions: 4, Producers: 4}
	got = strings.Join(nativeArgs("produce", w, 9090, 111, "127.0.0.1:1", false, 0), " ")
	want = "-m 100 -P 9090 -b 28 balanced-producer -a 4 -p 4 -s 1 tcp --server-address 127.0.0.1:1"
	if got != want {
		t.Fatalf("4 producers: got  %s\nwant %s", got, want)
	}
	if NativeBatch(100) != 9090 || NativeBatch(1024) != 967 {
		t.Fatalf("NativeBatch: %d %d", NativeBatch(100), NativeBatch(1024))
	}
}

// TestSmokeCompareIggy runs the Iggy comparison (gateway --backend iggy
// and iggy-bench, each on a server the harness starts) on tiny workloads:
// every run completes, both rows and the 80 % check appear. It says
// nothing about speed.
func TestSmokeCompareIggy(t *testing.T) {
	// Not parallel: it compares the CPU the gateway and iggy-server processes use, which load from parallel tests would skew.
	if _, err := iggyreal.Dir(); err != nil {
		if os.Getenv(iggyreal.RequiredEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir, _ := iggyreal.Dir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ws := []Workload{
		// Enough records that each iggy-server spends several 10 ms
		// ticks on them, for its CPU per record and the ratios.
		{Name: "produce-100B-4p", Kind: "produce", RecordSize: 100, Records: 50_000, Partitions: 4, Producers: 1},
		{Name: "consume-1KiB", Kind: "consume", RecordSize: 1024, Records: 40_000, Partitions: 1},
		{Name: "latency-100B", Kind: "latency", RecordSize: 100, Records: 500, Partitions: 1, Producers: 1, Seconds: 1, Rate: 500, Linger: -1},
	}
	var log strings.Builder
	defer func() { t.Log("\n" + log.String()) }()
	c, err := Compare(ctx, CompareOptions{Targets: []string{"iggy", "iggy-native", "iggy-native-paced"}, Workloads: ws, Reps: 1,
		MaxDuration: 30 * time.Second, Acks: "all", Idempotent: true, Log: &log,
		// Without the tail cache the consume reads the server, so both
		// processes of the iggy target do work on it (with the cache a
		// preloaded topic is served by the gateway alone).
		Target: TargetConfig{ModuleDir: "..", IggyServerDir: dir, WorkDir: t.TempDir(), IggyArgs: []string{"--tail-cache-mb=0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skipped) > 0 {
		t.Fatalf("skipped: %v", c.Skipped)
	}
	if n := c.Incomplete(); n > 0 {
		t.Fatalf("%d incomplete runs: %+v", n, c.Runs)
	}
	// latency has no native run; the other two have all three rows.
	if len(c.Runs) != 7 {
		t.Fatalf("%d runs, want 7", len(c.Runs))
	}
	// The paced runs were held to the iggy run's rate of their workload.
	for _, w := range []string{"produce-100B-4p", "consume-1KiB"} {
		g, p := c.lastComplete(w, "iggy"), c.lastComplete(w, "iggy-native-paced")
		if g == nil || p == nil || p.PacedMBPerSec != g.MBPerSec || p.MBPerSec <= 0 {
			t.Fatalf("%s: iggy %+v\npaced %+v", w, g, p)
		}
		if r := c.row(w, "iggy"); r == nil || r.ServerPerPaced <= 0 {
			t.Fatalf("%s: iggy row %+v", w, r)
		}
	}
	for _, w := range []string{"produce-100B-4p", "consume-1KiB"} {
		g, n := c.row(w, "iggy"), c.row(w, "iggy-native")
		if g == nil || n == nil || g.RecPerSec <= 0 || n.RecPerSec <= 0 || n.GatewayX <= 0 {
			t.Fatalf("%s rows: %+v %+v", w, g, n)
		}
		if n.Runs != 1 || c.Runs[0].Counted == 0 {
			t.Fatalf("%s: %+v", w, n)
		}
		// The gateway's own CPU is reported, as a part of the iggy row's
		// server CPU (gateway plus iggy-server); iggy-native has none.
		// CPU comes in 10 ms ticks, and a short run may give iggy-server
		// none, so the part may be the whole.
		if g.GatewayUsPerRec <= 0 || g.GatewayUsPerRec > g.ServerUsPerRec || n.GatewayUsPerRec != 0 {
			t.Fatalf("%s: gateway %.3f of server %.3f µs/record; native gateway %.3f", w, g.GatewayUsPerRec, g.ServerUsPerRec, n.GatewayUsPerRec)
		}
	}
	// The iggy-server's CPU per record behind the gateway and behind
	// iggy-bench, read once the servers settled, and the two ratios of
	// issue 30 on the iggy rows.
	for _, w := range []string{"produce-100B-4p", "consume-1KiB"} {
		g, n := c.row(w, "iggy"), c.row(w, "iggy-native")
		if g.IggyServerUsPerRec <= 0 || g.IggyServerUsPerRec > g.ServerUsPerRec || n.IggyServerUsPerRec != n.ServerUsPerRec ||
			g.ServerPerNative <= 0 || g.GatewayPerServer <= 0 || n.ServerPerNative != 0 || n.GatewayPerServer != 0 {
			t.Fatalf("%s: iggy %+v\nnative %+v", w, g, n)
		}
		if g.AfterUsPerRec < 0 || g.AfterUsPerRec > g.ServerUsPerRec || n.AfterUsPerRec < 0 || n.AfterUsPerRec > n.ServerUsPerRec {
			t.Fatalf("%s: after the step %.3f of %.3f, native %.3f of %.3f µs/record", w, g.AfterUsPerRec, g.ServerUsPerRec,
				n.AfterUsPerRec, n.ServerUsPerRec)
		}
	}
	found := map[string]int{}
	for _, ck := range c.Checks {
		for _, suffix := range []string{"iggy ÷ iggy-native", "fed by the gateway ÷ by iggy-bench", "gateway CPU ÷ iggy-server CPU",
			"by iggy-bench at the gateway's rate"} {
			if strings.HasSuffix(ck.What, suffix) {
				found[suffix]++
				if ck.Got <= 0 {
					t.Errorf("%+v", ck)
				}
			}
		}
	}
	md := c.Markdown()
	if len(found) != 4 || found["iggy ÷ iggy-native"] != 2 || found["fed by the gateway ÷ by iggy-bench"] != 2 ||
		found["gateway CPU ÷ iggy-server CPU"] != 2 || found["by iggy-bench at the gateway's rate"] != 2 ||
		!strings.Contains(md, "| consume-1KiB | iggy-native | 1/1 |") || !strings.Contains(md, "| consume-1KiB | iggy-native-paced | 1/1 |") ||
		!strings.Contains(md, "| gateway ÷ iggy-server | iggy-server ÷ native | iggy-server ÷ paced native |") {
		t.Fatalf("checks %+v\n%s", c.Checks, md)
	}
	t.Log("\n" + md)
}

// TestIggyTargetSkips: without a server directory the Iggy targets are
// skipped (ErrSkip), not failed.
func TestIggyTargetSkips(t *testing.T) {
	// Not parallel: it sets an environment variable (t.Setenv).
	t.Setenv(iggyreal.DirEnv, "")
	for _, name := range []string{"iggy", "iggy-native", "iggy-native-paced"} {
		tg, err := NewTarget(name, &TargetConfig{ModuleDir: t.TempDir(), WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		err = tg.Start(context.Background())
		_ = tg.Stop()
		if !errors.Is(err, ErrSkip) {
			t.Fatalf("%s: %v, want ErrSkip", name, err)
		}
	}
}
