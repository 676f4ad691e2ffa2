package handlers

import "testing"

// watchAfter reads the generation of two partitions of topic t (as a
// handler does), sends signal, then watches from that generation (as the
// loop does); ran counts the callback's runs.
func watchAfter(signal PartitionKey) (w *Watchers, keys []PartitionKey, ran *int, cancel func()) {
	w = NewWatchers()
	keys = []PartitionKey{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}
	since := w.Generation(keys)
	w.Signal(signal)
	ran = new(int)
	cancel = w.WatchSince(keys, since, func() { *ran++ })
	return w, keys, ran, cancel
}

// A signal that lands between a handler's read (Generation) and the loop's
// watch must still wake the waiter: no lost wake-ups.
func TestWatchSinceCatchesSignalBeforeWatch(t *testing.T) {
	t.Parallel()
	_, _, ran, cancel := watchAfter(PartitionKey{Topic: "t", Partition: 1})
	defer cancel()
	if *ran != 1 {
		t.Fatalf("callback ran %d times, want 1 (signal before watch was lost)", *ran)
	}
}

// With no signal in between, the waiter waits, and the next signal on any
// of its keys runs it exactly once.
func TestWatchSinceWaitsThenRunsOnce(t *testing.T) {
	t.Parallel()
	w, keys, ran, cancel := watchAfter(PartitionKey{Topic: "other", Partition: 0})
	if *ran != 0 {
		t.Fatal("ran before any signal on its keys")
	}
	w.Signal(keys[0])
	w.Signal(keys[1])
	cancel()
	if *ran != 1 {
		t.Fatalf("callback ran %d times, want 1", *ran)
	}
}
