//go:build !race

package codec

import "testing"

func TestAppendRecordSizedDoesNotAllocate(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	recs := sampleRecords()
	out := make([]byte, 0, 1<<20)
	assertNoAllocs(t, "AppendRecordSized", func() {
		var bb BatchBuilder
		b := bb.Begin(out[:0], 100, 1_700_000_000_000)
		for _, r := range recs {
			b = bb.AppendRecordSized(b, bodyLen(r), r.OffsetDelta, r.TsDelta, r.Key, r.Value, len(r.Headers))
			for _, h := range r.Headers {
				b = bb.AppendHeader(b, h.Key, h.Value)
			}
		}
		sinkBytes = bb.Finish(b)
	})
}
