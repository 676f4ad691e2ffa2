package share

import (
	"context"
	"fmt"
	"testing"
)

// The hot path of a share consumer: each ShareFetch acquires a batch, each
// next one acknowledges it. Per-record cost is reported as ns/record.

func BenchmarkAcquire(b *testing.B) {
	for _, shape := range []struct {
		name            string
		batches, perBat int
	}{
		{"1x500", 1, 500}, // one batch of max.poll.records
		{"100x5", 100, 5}, // small producer batches
		{"500x1", 500, 1}, // a record per batch
	} {
		b.Run(shape.name, func(b *testing.B) {
			n := shape.batches * shape.perBat
			l := AcquireLimits{MaxRecords: n, MaxInFlight: 2000, LockMs: 30000, DeliveryLimit: 5}
			p := newPartition([16]byte{}, 0)
			batches := make([]Batch, shape.batches)
			out := make([]Acquired, 0, 4)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				base := int64(i) * int64(n)
				for j := range batches {
					first := base + int64(j*shape.perBat)
					batches[j] = Batch{Base: first, Last: first + int64(shape.perBat) - 1}
				}
				out = p.Acquire("member-0123456789", batches, l, 1000, out[:0])
				if len(out) != 1 || out[0].Last-out[0].First+1 != int64(n) {
					b.Fatalf("acquired %v", out)
				}
				p.Reset(base + int64(n))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

func BenchmarkAcknowledge(b *testing.B) {
	const n = 500
	for _, mode := range []string{"range", "per-record-types", "record-by-record"} {
		b.Run(mode, func(b *testing.B) {
			l := AcquireLimits{MaxRecords: n, MaxInFlight: 2000, LockMs: 30000, DeliveryLimit: 5}
			p := newPartition([16]byte{}, 0)
			one := []int8{AckAccept}
			each := make([]int8, n)
			for i := range each {
				each[i] = AckAccept
			}
			batches := []Batch{{}}
			out := make([]Acquired, 0, 4)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				base := int64(i) * n
				batches[0] = Batch{Base: base, Last: base + n - 1}
				out = p.Acquire("m", batches, l, 1000, out[:0])
				switch mode {
				case "range":
					if code := p.Acknowledge("m", base, base+n-1, one, false, l, 1000); code != 0 {
						b.Fatal(code)
					}
				case "per-record-types":
					if code := p.Acknowledge("m", base, base+n-1, each, false, l, 1000); code != 0 {
						b.Fatal(code)
					}
				default:
					for off := base; off < base+n; off++ {
						if code := p.Acknowledge("m", off, off, one, false, l, 1000); code != 0 {
							b.Fatal(code)
						}
					}
				}
				if p.start != base+n {
					b.Fatalf("start %d", p.start)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

// BenchmarkSessionAck is an acknowledging ShareFetch's work in the
// coordinator: the session and the acknowledgement (no store: the
// durable write is the store's cost, measured with it).
func BenchmarkSessionAck(b *testing.B) {
	const n = 500
	co := New(Options{Config: DefaultConfig()})
	ctx := context.Background()
	tp := TP{"t", 0}
	co.Session(ctx, SessionRequest{Group: "g", Member: "m", Fetch: true, Add: []SessionPart{{TP: tp}}})
	if _, err := co.FetchFrom(ctx, "g", tp, [16]byte{}, func(context.Context) (int64, error) { return 0, nil }); err != nil {
		b.Fatal(err)
	}
	lim := co.Settings(ctx, "g").limits()
	lim.MaxRecords = n
	epoch := int32(1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		base := int64(i) * n
		co.Acquire("g", "m", tp, []Batch{{Base: base, Last: base + n - 1}}, lim)
		res := co.Session(ctx, SessionRequest{Group: "g", Member: "m", Epoch: epoch, Fetch: true,
			Acks: []Ack{{TP: tp, First: base, Last: base + n - 1, Types: []int8{AckAccept}}}})
		if res.Code != 0 || res.Acks[tp] != 0 {
			b.Fatal(fmt.Sprint(res))
		}
		epoch++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}
