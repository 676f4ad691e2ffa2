//go:build !race

// The race detector makes sync.Pool drop items at random, so pooled
// buffers allocate under -race: allocation budgets are checked without it
// (.ci/run runs them in a step of their own).

package handlers

import (
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// producePartitionAllocBudget is what the Produce handler itself allocates
// for a request of one uncompressed partition, decoding excluded: the
// response and its topic and partition entries, the pending write, the
// topic lookup's copy. It is a ceiling, not a target: an allocation more
// per request (e.g. the batch header moved to the heap by a call through
// an interface) fails TestProduceAllocationBudget.
const producePartitionAllocBudget = 5

// The Produce handler allocates no more per request than its budget.
func TestProduceAllocationBudget(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	g := newGateway(t)
	recs := benchTopic(t, g)
	req, err := Decode(0, 9, produceReq(9, "bench", 0, batch(recs...)).AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	spec := Lookup(0)
	n := testing.AllocsPerRun(200, func() {
		c := Call{G: g, Ctx: t.Context()}
		if _, err := spec.Handle(&c, req); err != nil {
			t.Fatal(err)
		}
	})
	if n > producePartitionAllocBudget {
		t.Fatalf("%.1f allocations per Produce, over the budget of %d", n, producePartitionAllocBudget)
	}
	t.Logf("%.1f allocations per Produce", n)
}

// topicID, checked per topic by every Fetch and Produce v13+, hashes
// without allocating.
func TestTopicIDAllocatesNothing(t *testing.T) {
	ti := bridge.TopicInfo{Stream: "kafka", Name: "orders.eu-west", ID: 7}
	if n := testing.AllocsPerRun(100, func() { _ = topicID(ti) }); n != 0 {
		t.Fatalf("topicID allocates %.0f times", n)
	}
}
