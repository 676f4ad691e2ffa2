//go:build !race

package loop

import (
	"testing"
)

// The loop's share of a steady-state Produce allocates nothing: framing,
// header parse, version firewall, acks peek, the pooled copy, queueing, and
// the ordered writer handing the reply to gnet.
func TestProduceLoopPathAllocatesNothing(t *testing.T) {
	s := newFakeServer(t, Config{Workers: 1, QueueDepth: 16}, false)
	c := &fakeConn{deferCB: true}
	_, _ = s.OnOpen(c)
	cs := c.ctx.(*connState)
	rc := &rawConn{t: t}
	frame, _ := rc.frame(produceReq("allocs", -1, "0123456789"))
	reply := []byte{0, 0, 0, 4, 0, 0, 0, 1}

	round := func() {
		c.view = frame
		s.OnTraffic(c)
		j := <-s.jobs
		out := smallBufs.Get()
		out.B = append(out.B[:0], reply...)
		largeBufs.Put(j.frame)
		seq := j.seq
		putJob(j)
		cs.runNext()
		cs.finish(seq, out, &smallBufs)
		cb := c.pendingCB
		c.pendingCB = nil
		_ = cb(c, nil)
		c.out = c.out[:0]
	}
	for i := 0; i < 10; i++ {
		round()
	}
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Fatalf("loop produce path: %v allocs per request, want 0", n)
	}
}
