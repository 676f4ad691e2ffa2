//go:build !race

package codec

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sinks keep the compiler from dropping the calls under test.
var (
	sinkInt   int
	sinkBool  bool
	sinkErr   error
	sinkBytes []byte
)

func assertNoAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(100, f); n != 0 {
		t.Errorf("%s: %v allocations per run, want 0", name, n)
	}
}

func TestNoAllocations(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.TransactionID = kmsg.StringPtr("txn")
	req.Acks = -1
	frameWithSize := kmsg.NewRequestFormatter(kmsg.FormatterClientID("alloc")).AppendRequest(nil, req, 1)
	frame := frameWithSize[4:]
	recs := sampleRecords()
	batch := kmsgBatch(kmsgRecords(recs), int32(len(recs)), 0, 5)
	out := make([]byte, 0, 1<<20)

	assertNoAllocs(t, "FrameSize", func() {
		size, ok, err := FrameSize(frameWithSize, 1<<20)
		sinkInt, sinkBool, sinkErr = int(size), ok, err
	})
	assertNoAllocs(t, "FrameSize error", func() {
		_, _, sinkErr = FrameSize([]byte("GET / HTTP/1.1"), 1<<20)
	})
	assertNoAllocs(t, "ParseRequestHeader", func() {
		h, err := ParseRequestHeader(frame)
		sinkInt, sinkBytes, sinkErr = h.BodyOffset, h.ClientID, err
	})
	assertNoAllocs(t, "ParseRequestHeader error", func() {
		_, sinkErr = ParseRequestHeader(frame[:9])
	})
	assertNoAllocs(t, "RequestIsFlexible", func() {
		sinkBool = RequestIsFlexible(0, 9) && !RequestIsFlexible(999, 1)
	})
	assertNoAllocs(t, "AppendResponseHeader", func() {
		b := AppendResponseHeader(out[:0], 0, 9, 77)
		b = append(b, 1, 2, 3)
		PatchFrameSize(b, 0)
		sinkInt = ResponseHeaderLen(18, 3) + len(b)
	})
	assertNoAllocs(t, "ProduceAcks", func() {
		acks, ok := ProduceAcks(frame[10:], 9)
		sinkInt, sinkBool = int(acks), ok
	})
	assertNoAllocs(t, "ParseBatch", func() {
		b, n, err := ParseBatch(batch)
		sinkInt, sinkBytes, sinkErr = n, b.Records, err
	})
	assertNoAllocs(t, "ParseBatch error", func() {
		_, _, sinkErr = ParseBatch(batch[:len(batch)-1])
	})
	rb, _, _ := ParseBatch(batch)
	assertNoAllocs(t, "record and header iteration", func() {
		total := 0
		it := NewRecordIter(rb.Records, rb.NumRecords)
		for it.Next() {
			r := it.Record()
			total += len(r.Key) + len(r.Value)
			h := NewHeaderIter(r.Headers, r.HeaderCount)
			for h.Next() {
				total += len(h.Key()) + len(h.Value())
			}
			sinkErr = h.Err()
		}
		sinkInt, sinkErr = total, it.Err()
	})
	assertNoAllocs(t, "BatchBuilder", func() {
		var bb BatchBuilder
		b := bb.Begin(out[:0], 100, 1_700_000_000_000)
		for i, r := range recs {
			b = bb.AppendRecord(b, int32(i), r.TsDelta, r.Key, r.Value, len(r.Headers))
			for _, h := range r.Headers {
				b = bb.AppendHeader(b, h.Key, h.Value)
			}
		}
		sinkBytes = bb.Finish(b)
	})
	assertNoAllocs(t, "AppendTxnMarker", func() {
		sinkBytes = AppendTxnMarker(out[:0], 7, TxnMarker{ProducerID: 1, Epoch: 2, Commit: true, CoordinatorEpoch: 3, TimestampMs: 4})
	})
}
