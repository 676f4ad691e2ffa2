package share

import "testing"

// The in-flight bound (group.share.partition.max.record.locks) as Kafka's
// SharePartition applies it: in batch-optimized mode a batch begun below
// the bound is acquired to its end, so a full window of one member does
// not leave the rest of a producer batch for a later fetch; a batch that
// would begin at the bound is not begun; record-limit mode stops at the
// bound exactly.
func TestAcquireInFlightBoundAtBatchEnd(t *testing.T) {
	t.Parallel()
	batches := []Batch{{Base: 0, Last: 2999}, {Base: 3000, Last: 3999}}
	for _, c := range []struct {
		name   string
		strict bool
		want   int64 // offsets acquired, from 0
	}{{"batch-optimized", false, 3000}, {"record-limit", true, 2000}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newPartition([16]byte{1}, 0)
			got := p.Acquire("m", batches, AcquireLimits{MaxRecords: 5000, Strict: c.strict, MaxInFlight: 2000, LockMs: 30000}, 0, nil)
			if len(got) != 1 || got[0].First != 0 || got[0].Last != c.want-1 {
				t.Fatalf("acquired %+v, want offsets 0-%d", got, c.want-1)
			}
			if p.InFlight() != int(c.want) {
				t.Fatalf("in flight %d, want %d", p.InFlight(), c.want)
			}
			if more := p.Acquire("m2", batches[1:], AcquireLimits{MaxRecords: 500, MaxInFlight: 2000, LockMs: 30000}, 0, nil); len(more) != 0 {
				t.Fatalf("a batch begun at the bound: acquired %+v", more)
			}
		})
	}
}
