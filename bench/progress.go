package bench

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// progress prints one line about a running workload to w every interval
// until stop: records done, rate and MB/s. On a terminal the line is
// rewritten in place; elsewhere (CI logs) a new line is printed each time,
// at a slower pace.
type progress struct {
	w     io.Writer
	label string
	total int64
	done  *atomic.Int64
	bytes *atomic.Int64
	stopc chan struct{}
	fin   chan struct{}
	tty   bool
}

func startProgress(w io.Writer, label string, total int64, done, bytes *atomic.Int64) *progress {
	p := &progress{w: w, label: label, total: total, done: done, bytes: bytes,
		stopc: make(chan struct{}), fin: make(chan struct{})}
	if w == nil {
		close(p.fin)
		return p
	}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	go p.run()
	return p
}

func (p *progress) run() {
	defer close(p.fin)
	every := 2 * time.Second
	if p.tty {
		every = 250 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	start := time.Now()
	var lastN, lastB int64
	last := start
	for {
		select {
		case <-p.stopc:
			if p.tty {
				fmt.Fprint(p.w, "\r\033[K")
			}
			return
		case now := <-t.C:
			n, b := p.done.Load(), p.bytes.Load()
			dt := now.Sub(last).Seconds()
			line := fmt.Sprintf("%s: %d/%d records (%.0f%%), %s rec/s, %.1f MB/s, %.1fs",
				p.label, n, p.total, 100*float64(n)/float64(max(p.total, 1)),
				human(float64(n-lastN)/dt), float64(b-lastB)/dt/1e6, now.Sub(start).Seconds())
			lastN, lastB, last = n, b, now
			if p.tty {
				fmt.Fprintf(p.w, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(p.w, line)
			}
		}
	}
}

func (p *progress) stop() {
	select {
	case <-p.fin:
		return
	default:
	}
	close(p.stopc)
	<-p.fin
}

// human prints n with a k/M suffix.
func human(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", n/1e3)
	default:
		return fmt.Sprintf("%.0f", n)
	}
}
