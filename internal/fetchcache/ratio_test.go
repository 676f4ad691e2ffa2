package fetchcache

import (
	"testing"

	"github.com/iggy-kafka/gateway/codec"
)

// The last sample wins; a new key past maxSampleKeys starts the map over;
// Forget drops the keys it is told to.
func TestSamples(t *testing.T) {
	t.Parallel()
	var s Samples[int]
	if _, ok := s.Get(1); ok {
		t.Fatal("the zero value has a sample")
	}
	s.Put(1, 10)
	s.Put(1, 11)
	if v, ok := s.Get(1); !ok || v != 11 {
		t.Fatalf("key 1: %d %v, want 11", v, ok)
	}
	for k := 2; k <= maxSampleKeys; k++ {
		s.Put(k, 1)
	}
	if _, ok := s.Get(1); !ok {
		t.Fatal("a full map lost a key before a new one came")
	}
	s.Put(maxSampleKeys+1, 1)
	if _, ok := s.Get(1); ok {
		t.Fatal("a new key past the bound kept the old samples")
	}
	s.Put(2, 2)
	s.Put(3, 3)
	s.Forget(func(k int) bool { return k == 2 })
	if _, ok := s.Get(2); ok {
		t.Error("Forget kept key 2")
	}
	if _, ok := s.Get(3); !ok {
		t.Error("Forget dropped key 3")
	}
}

// A partition not read yet gets twice its Kafka budget from the store;
// a learned one its ratio and a sixteenth.
func TestRatios(t *testing.T) {
	t.Parallel()
	var r Ratios
	k := Key{Topic: "t"}
	if got := r.StoreBudget(k, 1000); got != 2000 {
		t.Fatalf("unlearned: %d, want 2000", got)
	}
	r.Learn(k, 1100, 1000, 10)
	if got, want := r.StoreBudget(k, 1000), 1000*(1100*ratioOne/1000+ratioSlack)/ratioOne; got != want {
		t.Fatalf("learned: %d, want %d", got, want)
	}
}

// Expect reserves nothing for a partition not read yet, what its records
// are worth by the last fetch's bytes per record (a batch header and an
// eighth over it), and never more than the budget.
func TestRatiosExpect(t *testing.T) {
	t.Parallel()
	var r Ratios
	k := Key{Topic: "t"}
	if got := r.Expect(k, 100, 1<<20); got != 0 {
		t.Fatalf("unlearned: %d, want 0", got)
	}
	r.Learn(k, 2200, 1000, 10) // 100 Kafka bytes per record
	if got, want := r.Expect(k, 50, 1<<20), 50*100*9/8+codec.BatchHeaderLen; got != want {
		t.Fatalf("50 records: %d, want %d", got, want)
	}
	if got := r.Expect(k, 1_000_000, 1<<20); got != 1<<20 {
		t.Fatalf("more records than the budget holds: %d, want the budget", got)
	}
	if got := r.Expect(k, 1<<62, 4096); got != 4096 {
		t.Fatalf("huge record count: %d, want the budget", got)
	}
}
