package bench

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// The samples in testdata/ are the standard output of kafka-tools 4.4.0
// run against kfake on this machine, and of 4.1.1 where its output differs
// (testdata/README.md says how).

func readSample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseProducerPerf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file      string
		records   int64
		recPerSec float64
		mib       float64
		lat       *Latency
	}{
		{"producer-perf-4.4.0-100B.txt", 300000, 162249.864792, 15.47,
			&Latency{Count: 300000, Mean: 312.29, Max: 474, P50: 405, P95: 450, P99: 458, P999: 474}},
		{"producer-perf-4.4.0-1KiB.txt", 100000, 27412.280702, 26.77,
			&Latency{Count: 100000, Mean: 683.98, Max: 924, P50: 736, P95: 899, P99: 915, P999: 923}},
		// A run longer than five seconds: a window line, then the total.
		{"producer-perf-4.4.0-throttled.txt", 130000, 19134.530468, 1.82,
			&Latency{Count: 130000, Mean: 5.84, Max: 390, P50: 4, P95: 22, P99: 36, P999: 40}},
		// No record acknowledged: NaN mean, no latency.
		{"producer-perf-4.4.0-failed.txt", 0, 0, 0, nil},
		// 4.1 printed the rate to one decimal.
		{"producer-perf-4.1.1-100B.txt", 300000, 186915.9, 17.83,
			&Latency{Count: 300000, Mean: 234.16, Max: 361, P50: 291, P95: 317, P99: 320, P999: 331}},
	} {
		t.Run(c.file, func(t *testing.T) {
			s, err := parseProducerPerf(readSample(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if s.records != c.records || s.recPerSec != c.recPerSec || s.mibPerSec != c.mib {
				t.Errorf("got %d records, %v rec/s, %v MiB/s; want %d, %v, %v", s.records, s.recPerSec, s.mibPerSec, c.records, c.recPerSec, c.mib)
			}
			switch {
			case c.lat == nil && s.latency != nil:
				t.Errorf("latency %+v, want none", *s.latency)
			case c.lat != nil && (s.latency == nil || *s.latency != *c.lat):
				t.Errorf("latency %+v, want %+v", s.latency, *c.lat)
			}
			if !strings.HasSuffix(s.line, "99.9th.") || strings.Contains(s.line, "\n") {
				t.Errorf("line %q", s.line)
			}
		})
	}
	if _, err := parseProducerPerf(readSample(t, "consumer-perf-4.4.0.txt")); err == nil {
		t.Error("a consumer's output parsed as a producer's")
	}
}

func TestParseConsumerPerf(t *testing.T) {
	t.Parallel()
	s, err := parseConsumerPerf(readSample(t, "consumer-perf-4.4.0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := consumerSummary{mib: 28.7030, records: 300095, recPerSec: 89022.5452, rebalanceMs: 887, fetchMs: 2484,
		fetchMiBPerSec: 11.5552, fetchRecPerSec: 120811.1916}
	want.line = s.line
	if *s != want {
		t.Errorf("got %+v\nwant %+v", *s, want)
	}
	if !strings.HasPrefix(s.line, "2026-12-05 06:04:03:475, ") {
		t.Errorf("line %q", s.line)
	}
	// Stopped short by --timeout: 4.4 warns of "records", 4.1 of "messages".
	for _, c := range []struct {
		file    string
		fetchMs int64
	}{{"consumer-perf-4.4.0-timeout.txt", 3640}, {"consumer-perf-4.1.1-timeout.txt", 2103}} {
		s, err = parseConsumerPerf(readSample(t, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !s.timedOut || s.records != 250000 || s.fetchMs != c.fetchMs {
			t.Errorf("%s: %+v", c.file, *s)
		}
	}
	for _, bad := range []string{"", readSample(t, "producer-perf-4.4.0-100B.txt"), consumerHeader + "\n"} {
		if _, err := parseConsumerPerf(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestConsumedBytes(t *testing.T) {
	t.Parallel()
	// 3000 x 100 B printed as 0.2861 MiB (299,998 bytes): the exact count.
	if got := consumedBytes(0.2861, 3000, 100); got != 300000 {
		t.Errorf("got %d", got)
	}
	// Values of another size than the preload's: the tool's figure.
	if got := consumedBytes(0.5722, 3000, 100); got != 599995 {
		t.Errorf("got %d", got)
	}
}

// toolError turns a tool run into the row's "ok": the failed producer
// sample exits 0 with "0 records sent"; the exception it printed is the
// reason given.
func TestToolError(t *testing.T) {
	t.Parallel()
	out := toolOutput{stdout: readSample(t, "producer-perf-4.4.0-failed.txt"), stderr: readSample(t, "producer-perf-4.4.0-failed.stderr.txt")}
	s, perr := parseProducerPerf(out.stdout)
	why := toolError(out, perr, s.records == 3, "acknowledged", s.records, 3)
	if !strings.HasPrefix(why, "0 of 3 records acknowledged; org.apache.kafka.common.errors.TimeoutException: Topic no-such-topic") {
		t.Errorf("got %q", why)
	}
	if why := toolError(toolOutput{}, nil, true, "consumed", 5, 5); why != "" {
		t.Errorf("a complete run: %q", why)
	}
	why = toolError(toolOutput{err: errors.New("exit status 1"), stderr: "Error: Could not find or load main class x"}, nil, false, "consumed", 0, 5)
	if !strings.Contains(why, "exit status 1") || !strings.Contains(why, "Could not find") {
		t.Errorf("got %q", why)
	}
}

// A result parsed from a failed run must still encode: the tool's NaN
// stays out of the JSON.
func TestPerfResultJSON(t *testing.T) {
	t.Parallel()
	s, _ := parseProducerPerf(readSample(t, "producer-perf-4.4.0-failed.txt"))
	r := &Result{Counted: s.records, RecPerSec: s.recPerSec, Latency: s.latency}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}

// needPerfTools is the perf tools from the module's e2e/java/target/lib,
// or a skip (a failure under IGGY_KAFKA_E2E_REQUIRED=1).
func needPerfTools(t *testing.T) TargetConfig {
	t.Helper()
	cfg := TargetConfig{ModuleDir: ".."}
	if _, err := cfg.perfTools(); err != nil {
		if os.Getenv(iggyreal.RequiredEnv) == "1" {
			t.Fatalf("%v (%s=1)", err, iggyreal.RequiredEnv)
		}
		t.Skipf("%v", err)
	}
	return cfg
}

// TestSmokePerfTools runs the four perf workloads, tiny, against kfake in
// this process and checks that every record was counted and every parsed
// field is there.
func TestSmokePerfTools(t *testing.T) {
	t.Parallel()
	cfg := needPerfTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ws []Workload
	for _, w := range PerfWorkloads(true) {
		w.Records = 3000
		if w.RecordSize > 100 {
			w.Records = 1000
		}
		ws = append(ws, w)
	}
	c, err := Compare(ctx, CompareOptions{Targets: []string{"kfake"}, Workloads: ws, Reps: 1,
		MaxDuration: 30 * time.Second, Acks: "all", Idempotent: true, Target: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Skipped) > 0 || len(c.Runs) != len(ws) {
		t.Fatalf("%d runs, skipped %v", len(c.Runs), c.Skipped)
	}
	for _, r := range c.Runs {
		if !r.Complete || r.Counted != r.Records || r.Err != "" {
			t.Errorf("%s: counted %d of %d: %s", r.Workload, r.Counted, r.Records, r.Err)
		}
		if r.ToolLine == "" || r.RecPerSec <= 0 || r.MBPerSec <= 0 || r.Seconds <= 0 || r.ClientCPU <= 0 ||
			r.Bytes != r.Records*int64(r.RecordSize) {
			t.Errorf("%s: fields missing: %+v", r.Workload, r)
		}
		if strings.HasPrefix(r.Workload, "perf-produce") {
			if l := r.Latency; l == nil || l.Count != r.Records || l.Max <= 0 || l.Mean <= 0 || l.P99 < l.P50 || l.P95 < l.P50 {
				t.Errorf("%s: latency %+v", r.Workload, l)
			}
		} else if r.Latency != nil {
			t.Errorf("%s: the consumer tool reports no latency, got %+v", r.Workload, r.Latency)
		}
	}
	md := c.Markdown()
	for _, want := range []string{"| perf-produce-100B | kfake | 1/1 |", "| perf-consume-1KiB | kfake | 1/1 |", "Kafka's perf tools"} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
}

// Without the jars the perf workloads are skipped with the reason, and
// the others still run.
func TestPerfToolsSkipped(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := append([]Workload{{Name: "produce-100B", Kind: "produce", RecordSize: 100, Records: 500, Partitions: 1, Producers: 1}},
		PerfWorkloads(true)[0])
	c, err := Compare(ctx, CompareOptions{Targets: []string{"kfake"}, Workloads: ws, Reps: 1, MaxDuration: 30 * time.Second,
		Acks: "all", Idempotent: true, Target: TargetConfig{ToolsLib: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 1 || c.Runs[0].Workload != "produce-100B" {
		t.Errorf("runs %+v", c.Runs)
	}
	why := c.Skipped["perf-produce-100B"]
	if !strings.Contains(why, "kafka-tools") && !strings.Contains(why, "java") {
		t.Errorf("skipped %v", c.Skipped)
	}
	if !strings.Contains(c.Markdown(), "skipped perf-produce-100B: ") {
		t.Error("the table does not say what was skipped")
	}
}
