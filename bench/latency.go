package bench

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency is a latency summary in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms,omitempty"` // Kafka's producer perf tool reports it; the harness's histogram does not
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// recorder is an HdrHistogram of microseconds, 1 µs to 60 s at 3
// significant digits, safe for concurrent use.
type recorder struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newRecorder() *recorder {
	return &recorder{h: hdrhistogram.New(1, int64(60*time.Second/time.Microsecond), 3)}
}

func (r *recorder) record(d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	r.mu.Lock()
	_ = r.h.RecordValue(us) // a value over 60 s is out of range and dropped; the run is bounded below that
	r.mu.Unlock()
}

func (r *recorder) summary() *Latency {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &Latency{
		Count: r.h.TotalCount(),
		P50:   ms(r.h.ValueAtQuantile(50)),
		P99:   ms(r.h.ValueAtQuantile(99)),
		P999:  ms(r.h.ValueAtQuantile(99.9)),
		Max:   ms(r.h.Max()),
		Mean:  r.h.Mean() / 1000,
	}
}
