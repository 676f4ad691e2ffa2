//go:build !race

package loop

import (
	"testing"
)

// The loop's share of a steady-state Produce allocates nothing: framing,
// header parse, version firewall, acks peek, the pooled copy, queueing, and
// the ordered writer handing the reply to gnet. Serial: AllocsPerRun counts
// every allocation in the process.
func TestProduceLoopPathAllocatesNothing(t *testing.T) {
	rc := &rawConn{t: t}
	frame, _ := rc.frame(produceReq("allocs", -1, "0123456789"))
	l := newLoopOnly(t, frame)
	for i := 0; i < 10; i++ {
		l.round()
	}
	if n := testing.AllocsPerRun(200, l.round); n != 0 {
		t.Fatalf("loop produce path: %v allocs per request, want 0", n)
	}
}
