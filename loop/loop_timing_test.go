package loop

import "testing"

// BenchmarkProduceLoopPath measures the loop's share of one Produce:
// frame + header parse, firewall, acks peek, pooled copy, queue, ordered
// write hand-off. The handler and store are excluded (see handlers and
// bridge benchmarks).
func BenchmarkProduceLoopPath(b *testing.B) {
	rc := &rawConn{t: b}
	frame, _ := rc.frame(produceReq("bench", -1, string(make([]byte, 1000))))
	l := newLoopOnly(b, frame)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		l.round()
	}
}
