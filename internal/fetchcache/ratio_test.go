package fetchcache

import "testing"

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
	r.Learn(k, 1100, 1000)
	if got, want := r.StoreBudget(k, 1000), 1000*(1100*ratioOne/1000+ratioSlack)/ratioOne; got != want {
		t.Fatalf("learned: %d, want %d", got, want)
	}
}
