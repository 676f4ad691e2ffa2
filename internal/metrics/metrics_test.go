package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNilIsNoop(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.Request(0, OutcomeOK, time.Millisecond)
	m.BytesIn(10)
	m.BytesOut(10)
	m.ConnOpened()
	m.ConnClosed("eof")
	m.QueueDepth(3)
	m.StoreLatency("append", time.Millisecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Fatalf("nil handler: code %d, want 404", rec.Code)
	}
}

func TestCounts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg)
	c := m.impl

	m.Request(0, OutcomeOK, 2*time.Millisecond)  // Produce
	m.Request(0, OutcomeOK, 3*time.Millisecond)  // Produce
	m.Request(0, OutcomeNoAck, time.Millisecond) // Produce acks=0
	m.Request(18, OutcomeClosed, time.Microsecond)
	m.Request(99, OutcomeOK, time.Microsecond) // not a Kafka key
	m.Request(-1, OutcomeOK, time.Microsecond) // outside the table
	m.Request(1, "bogus", time.Microsecond)    // outcome outside the set
	m.BytesIn(100)
	m.BytesIn(-5) // ignored
	m.BytesOut(40)
	m.ConnOpened()
	m.ConnOpened()
	m.ConnClosed("eof")
	m.ConnClosed("frame_too_large")
	m.ConnClosed("eof")
	m.QueueDepth(7)
	m.StoreLatency("append", time.Millisecond)
	m.StoreLatency("poll", time.Millisecond)
	m.StoreLatency("append", time.Millisecond)

	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"produce ok", testutil.ToFloat64(c.requests.WithLabelValues("Produce", OutcomeOK)), 2},
		{"produce noack", testutil.ToFloat64(c.requests.WithLabelValues("Produce", OutcomeNoAck)), 1},
		{"apiversions closed", testutil.ToFloat64(c.requests.WithLabelValues("ApiVersions", OutcomeClosed)), 1},
		{"key 99", testutil.ToFloat64(c.requests.WithLabelValues("key_99", OutcomeOK)), 1},
		{"unknown", testutil.ToFloat64(c.requests.WithLabelValues("unknown", OutcomeOK)), 1},
		{"other outcome", testutil.ToFloat64(c.requests.WithLabelValues("Fetch", outcomeOther)), 1},
		{"bytes in", testutil.ToFloat64(c.bytesIn), 100},
		{"bytes out", testutil.ToFloat64(c.bytesOut), 40},
		{"open", testutil.ToFloat64(c.connsOpen), -1},
		{"closed eof", testutil.ToFloat64(c.connsClosed.WithLabelValues("eof")), 2},
		{"closed frame", testutil.ToFloat64(c.connsClosed.WithLabelValues("frame_too_large")), 1},
		{"queue", testutil.ToFloat64(c.queueDepth), 7},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	if n := testutil.CollectAndCount(c.storeLat); n != 2 {
		t.Errorf("store latency series = %d, want 2 (append, poll)", n)
	}
	// Only used keys show up: Produce, ApiVersions, key_99, unknown, Fetch.
	if n := testutil.CollectAndCount(c.reqLatency); n != 5 {
		t.Errorf("request latency series = %d, want 5", n)
	}
}

func TestHandlerServesText(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.Request(3, OutcomeOK, time.Millisecond)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`iggy_kafka_requests_total{api="Metadata",outcome="ok"} 1`,
		"iggy_kafka_request_duration_seconds_bucket",
		"iggy_kafka_connections_open 0",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("exposition lacks %q:\n%s", want, body)
		}
	}
}

func TestNewNilRegistry(t *testing.T) {
	t.Parallel()
	m := New(nil)
	m.Request(0, OutcomeOK, time.Millisecond)
	m.ConnClosed("eof")
}

// The hot path runs once per request and per read on every event loop, so
// it must not allocate once a key or reason has been seen.
func TestHotPathDoesNotAllocate(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	m := New(prometheus.NewRegistry())
	m.Request(0, OutcomeOK, time.Millisecond) // resolve Produce once
	m.ConnClosed("eof")
	m.StoreLatency("append", time.Millisecond)
	cases := map[string]func(){
		"Request":      func() { m.Request(0, OutcomeOK, time.Millisecond) },
		"RequestOOR":   func() { m.Request(500, OutcomeClosed, time.Millisecond) },
		"BytesIn":      func() { m.BytesIn(512) },
		"BytesOut":     func() { m.BytesOut(512) },
		"ConnClosed":   func() { m.ConnClosed("eof") },
		"QueueDepth":   func() { m.QueueDepth(3) },
		"StoreLatency": func() { m.StoreLatency("append", time.Millisecond) },
	}
	for name, fn := range cases {
		if a := testing.AllocsPerRun(1000, fn); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

func TestConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	m := New(prometheus.NewRegistry())
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				m.Request(int16(i%20), OutcomeOK, time.Microsecond)
				m.ConnClosed([]string{"eof", "idle", "limit"}[i%3])
				m.StoreLatency([]string{"append", "poll", "meta"}[(i+g)%3], time.Microsecond)
			}
		}(g)
	}
	wg.Wait()
	got := testutil.ToFloat64(m.impl.requests.WithLabelValues("Produce", OutcomeOK))
	if got != 8*10 {
		t.Fatalf("Produce ok = %v, want 80", got)
	}
}

func BenchmarkRequest(b *testing.B) {
	m := New(prometheus.NewRegistry())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request(1, OutcomeOK, time.Millisecond)
		}
	})
}

func BenchmarkBytesIn(b *testing.B) {
	m := New(prometheus.NewRegistry())
	b.ReportAllocs()
	for b.Loop() {
		m.BytesIn(4096)
	}
}

func BenchmarkConnClosed(b *testing.B) {
	m := New(prometheus.NewRegistry())
	b.ReportAllocs()
	for b.Loop() {
		m.ConnClosed("eof")
	}
}

// The fetch-session collectors report what their reader returns, and a nil
// *Metrics ignores the call.
func TestFetchSessionMetrics(t *testing.T) {
	t.Parallel()
	checkReaderMetrics(t, func(m *Metrics) {
		m.FetchSessions(func() FetchSessionCounts {
			return FetchSessionCounts{Open: 3, Created: 5, Evicted: 1, Refused: 2, Incremental: 40}
		})
	}, map[string]float64{
		"iggy_kafka_fetch_sessions_open": 3, "iggy_kafka_fetch_sessions_created_total": 5,
		"iggy_kafka_fetch_sessions_evicted_total": 1, "iggy_kafka_fetch_sessions_refused_total": 2,
		"iggy_kafka_fetch_incremental_total": 40,
	})
}

// The tail-cache collectors report what their reader returns, and a nil
// *Metrics ignores the call.
func TestTailCacheMetrics(t *testing.T) {
	t.Parallel()
	checkReaderMetrics(t, func(m *Metrics) {
		m.TailCache(func() TailCacheCounts {
			return TailCacheCounts{Hits: 7, Misses: 2, ServedBytes: 1234, UsedBytes: 65536}
		})
	}, map[string]float64{
		"iggy_kafka_tail_cache_bytes": 65536, "iggy_kafka_tail_cache_hits_total": 7,
		"iggy_kafka_tail_cache_misses_total": 2, "iggy_kafka_tail_cache_served_bytes_total": 1234,
	})
}

// checkReaderMetrics: register, which hands collectors a reader, does
// nothing on a nil *Metrics, and on a fresh registry the collectors report
// want.
func checkReaderMetrics(t *testing.T, register func(*Metrics), want map[string]float64) {
	t.Helper()
	register(nil)
	reg := prometheus.NewRegistry()
	register(New(reg))
	got := gaugesAndCounters(t, reg)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}
}

// gaugesAndCounters gathers reg and returns each gauge's and counter's
// value by name (the last series of a name wins).
func gaugesAndCounters(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, mm := range mf.GetMetric() {
			switch {
			case mm.GetGauge() != nil:
				got[mf.GetName()] = mm.GetGauge().GetValue()
			case mm.GetCounter() != nil:
				got[mf.GetName()] = mm.GetCounter().GetValue()
			}
		}
	}
	return got
}
