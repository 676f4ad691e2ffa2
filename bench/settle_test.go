package bench

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCPU is a process whose CPU time grows by step on each of its first
// busy reads, then by idle on each read.
type fakeCPU struct {
	mu               sync.Mutex
	reads, busy      int
	step, idle, time time.Duration
}

func (f *fakeCPU) read(int) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.reads <= f.busy {
		f.time += f.step
	} else {
		f.time += f.idle
	}
	return f.time
}

// testSettler reads f for every process: at most 5 polls in a window
// (a ticker drops the ticks a slow reader misses).
func testSettler(f *fakeCPU) settler {
	return settler{window: 20 * time.Millisecond, quiet: 10 * time.Millisecond, bound: time.Minute, poll: 5 * time.Millisecond, read: f.read}
}

// A step's background work, done after the step ended, is counted; the
// idle ticks of the quiet window that ends the wait are not.
func TestStepCountsBackgroundWork(t *testing.T) {
	t.Parallel()
	f := &fakeCPU{}
	s := testSettler(f)
	st := startStep(context.Background(), s, []int{1}, true) // quiet at once: nothing before the step
	before := f.time
	f.mu.Lock()
	f.time += time.Second // the step itself
	f.busy, f.step = f.reads+5, 100*time.Millisecond
	f.mu.Unlock()
	got := st.finish(context.Background())
	// The read at the step's end already takes one busy step; four
	// more come after it.
	if want := time.Second + 500*time.Millisecond; got.cpu[0] != want || got.sum() != want {
		t.Fatalf("counted %v, want %v (before %v)", got.cpu[0], want, before)
	}
	if got.after != 400*time.Millisecond || got.unsettled || got.waited <= 0 {
		t.Fatalf("after %v, waited %v, unsettled %v", got.after, got.waited, got.unsettled)
	}
}

// Processes that idle within the tolerance are quiet.
func TestSettleIdleTolerance(t *testing.T) {
	t.Parallel()
	f := &fakeCPU{idle: time.Millisecond}
	s := testSettler(f)
	w := s.wait(context.Background(), []int{1})
	// A stalled poller may start the quiet window at a later sample.
	if !w.quiet || len(w.cpu) != 1 || w.cpu[0] < time.Millisecond || w.cpu[0] > 10*time.Millisecond {
		t.Fatalf("%+v", w)
	}
}

// A process that never goes quiet ends the wait at the bound, read there,
// and the step says so; without settle the CPU is read at the step's end.
func TestSettleBound(t *testing.T) {
	t.Parallel()
	f := &fakeCPU{busy: 1 << 30, step: 50 * time.Millisecond}
	s := testSettler(f)
	s.bound = 50 * time.Millisecond
	st := &stepCPU{s: s, pids: []int{1}, settle: true, before: []time.Duration{0}}
	got := st.finish(context.Background())
	if !got.unsettled || got.after <= 0 {
		t.Fatalf("%+v", got)
	}
	st = startStep(context.Background(), s, []int{1}, false)
	got = st.finish(context.Background())
	if got.unsettled || got.after != 0 || got.waited != 0 || got.cpu[0] != 50*time.Millisecond {
		t.Fatalf("without settle: %+v", got)
	}
}

// The two Iggy ratios and their checks follow from the runs: the
// iggy-server's CPU per record fed by the gateway over fed by iggy-bench,
// and the gateway's CPU over its iggy-server's; both survive JSON.
func TestIggyCPURatios(t *testing.T) {
	t.Parallel()
	c := &Comparison{Targets: []string{"iggy", "iggy-native"},
		Workloads: []Workload{{Name: "produce-100B", Kind: "produce", RecordSize: 100, Records: 1_000_000}}}
	run := func(target string, server, gateway, iggyServer, after float64) *Result {
		return &Result{Target: target, Workload: "produce-100B", RecordSize: 100, Records: 1_000_000, Counted: 1_000_000,
			RecPerSec: 1e6, Complete: true, ServerCPU: server, GatewayCPU: gateway, IggyServerCPU: iggyServer, AfterCPU: after}
	}
	c.Runs = []*Result{run("iggy", 1.5, 0.5, 1.0, 0.2), run("iggy-native", 0.5, 0, 0.5, 0.1)}
	c.summarise()
	c.Checks = c.checks()
	g := c.row("produce-100B", "iggy")
	if g.IggyServerUsPerRec != 1.0 || g.GatewayPerServer != 0.5 || g.ServerPerNative != 2.0 || g.AfterUsPerRec != 0.2 {
		t.Fatalf("iggy row %+v", g)
	}
	want := map[string]bool{
		"produce-100B: iggy-server CPU per record, fed by the gateway ÷ by iggy-bench": false, // 2.0x > 1.2x
		"produce-100B: gateway CPU ÷ iggy-server CPU":                                  true,  // 0.5x
	}
	for _, ck := range c.Checks {
		if pass, ok := want[ck.What]; ok {
			if ck.Pass != pass {
				t.Errorf("%s: %+v", ck.What, ck)
			}
			delete(want, ck.What)
		}
	}
	if len(want) > 0 {
		t.Fatalf("missing checks %v in %+v", want, c.Checks)
	}
	md := c.Markdown()
	if !strings.Contains(md, "| produce-100B | iggy | 0.000 | 1.500 | 0.500 | 1.000 | 0.200 | 1.500 | 0.50x | 2.00x |") {
		t.Fatalf("table:\n%s", md)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"iggy_server_cpu_s":1`, `"after_step_cpu_s":0.2`, `"gateway_per_iggy_server_x":0.5`, `"iggy_server_per_native_x":2`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON has no %s", field)
		}
	}
}
