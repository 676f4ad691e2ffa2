package bench

import (
	"context"
	"time"
)

// An Iggy server answers a send before it has written the messages to its
// segments (it saves them in the background, every 1024 messages or 1 MiB
// of a partition), so CPU read the moment a step ends misses part of the
// work the step caused, and the next step would be charged with it. The
// targets with an iggy-server of their own (iggy, iggy-native) therefore
// have their processes' CPU read once the processes have settled: before a
// step, the harness waits until they are quiet (what a preload, a previous
// step or a topic deletion caused is not this step's); after it, the CPU
// counted is the reading at the start of the first quiet window, so the
// background work is in and the idle ticks of the window are not.

// settler waits for processes to stop working. Its durations are fields so
// that tests can shrink them.
type settler struct {
	// window is how long every process must stay quiet; quiet the CPU
	// each may spend in it and still count as idle (an idle iggy-server
	// spends about 20 ms a second on its timers, and /proc counts in
	// 10 ms ticks).
	window, quiet time.Duration
	// bound ends the wait when the processes never go quiet; poll is how
	// often their CPU is read.
	bound, poll time.Duration
	read        func(pid int) time.Duration
}

// defaultSettler is what Compare uses: quiet means at most 3 ticks in
// 1 s, read every 100 ms, for at most 8 s.
var defaultSettler = settler{window: time.Second, quiet: 30 * time.Millisecond, bound: 8 * time.Second,
	poll: 100 * time.Millisecond, read: procCPU}

// settled is what settler.wait found.
type settled struct {
	cpu    []time.Duration // per process: the reading at the start of the quiet window, or the last one
	waited time.Duration   // from the call to that reading
	quiet  bool            // false: bound (or ctx) ended the wait first
}

// wait polls the CPU time of pids until, over one window, none of them grew
// by more than quiet, for at most bound. Only the caller's goroutine.
func (s settler) wait(ctx context.Context, pids []int) settled {
	type sample struct {
		at  time.Time
		cpu []time.Duration
	}
	readAll := func() []time.Duration {
		cpu := make([]time.Duration, len(pids))
		for i, p := range pids {
			cpu[i] = s.read(p)
		}
		return cpu
	}
	start := time.Now()
	hist := []sample{{start, readAll()}}
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			last := hist[len(hist)-1]
			return settled{cpu: last.cpu, waited: last.at.Sub(start)}
		case <-tick.C:
		}
		cur := sample{time.Now(), readAll()}
		hist = append(hist, cur)
		// The newest sample at least a window old starts the window
		// that ends now; older ones are no longer needed.
		from := -1
		for i := range hist {
			if cur.at.Sub(hist[i].at) >= s.window {
				from = i
			}
		}
		if from >= 0 {
			w := hist[from]
			if quietBetween(w.cpu, cur.cpu, s.quiet) {
				return settled{cpu: w.cpu, waited: w.at.Sub(start), quiet: true}
			}
			hist = hist[from:]
		}
		if cur.at.Sub(start) >= s.bound {
			return settled{cpu: cur.cpu, waited: cur.at.Sub(start)}
		}
	}
}

// quietBetween reports whether no process spent more than quiet between
// the readings a and b.
func quietBetween(a, b []time.Duration, quiet time.Duration) bool {
	for i := range a {
		if b[i]-a[i] > quiet {
			return false
		}
	}
	return true
}

// stepCPU measures the CPU the processes of a target spend on one step.
// With settle set (targets running an iggy-server of their own), start
// first waits until they are quiet and finish counts what they spent until
// they were quiet again.
type stepCPU struct {
	s      settler
	pids   []int
	settle bool
	before []time.Duration
}

// startStep waits for pids to settle (if settle) and reads their CPU.
func startStep(ctx context.Context, s settler, pids []int, settle bool) *stepCPU {
	st := &stepCPU{s: s, pids: pids, settle: settle}
	if settle {
		s.wait(ctx, pids)
	}
	st.before = make([]time.Duration, len(pids))
	for i, p := range pids {
		st.before[i] = s.read(p)
	}
	return st
}

// stepSpent is what finish measured.
type stepSpent struct {
	cpu   []time.Duration // per process, from start to the reading counted
	after time.Duration   // of the sum, what came after the step had ended
	// waited is from the end of the step to the reading counted;
	// unsettled says the processes never went quiet within the bound.
	waited    time.Duration
	unsettled bool
}

// finish is called the moment the step has ended: it reads the processes'
// CPU there and, with settle, again once they are quiet.
func (st *stepCPU) finish(ctx context.Context) stepSpent {
	end := make([]time.Duration, len(st.pids))
	for i, p := range st.pids {
		end[i] = st.s.read(p)
	}
	out := stepSpent{cpu: make([]time.Duration, len(st.pids))}
	counted := end
	if st.settle {
		w := st.s.wait(ctx, st.pids)
		counted, out.waited, out.unsettled = w.cpu, w.waited, !w.quiet
	}
	for i := range st.pids {
		out.cpu[i] = counted[i] - st.before[i]
		out.after += counted[i] - end[i]
	}
	return out
}

// sum is the CPU of every process of the step.
func (s stepSpent) sum() time.Duration {
	var d time.Duration
	for _, c := range s.cpu {
		d += c
	}
	return d
}
