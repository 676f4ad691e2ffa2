package loop

import "testing"

// BenchmarkProduceLoopPath measures the loop's share of one Produce:
// frame + header parse, firewall, acks peek, pooled copy, queue, ordered
// write hand-off. The handler and store are excluded (see handlers and
// bridge benchmarks).
func BenchmarkProduceLoopPath(b *testing.B) {
	s := newFakeServer(b, Config{Workers: 1, QueueDepth: 16}, false)
	c := &fakeConn{deferCB: true}
	_, _ = s.OnOpen(c)
	cs := c.ctx.(*connState)
	rc := &rawConn{t: b}
	frame, _ := rc.frame(produceReq("bench", -1, string(make([]byte, 1000))))
	reply := []byte{0, 0, 0, 4, 0, 0, 0, 1}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
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
}
