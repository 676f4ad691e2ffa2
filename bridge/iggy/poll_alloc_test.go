//go:build !race

// The race detector makes sync.Pool drop items at random, so pooled
// buffers allocate under -race: allocation counts are checked without it.

package iggy

import (
	"bytes"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
	"github.com/iggy-kafka/gateway/codec"
)

// pollReplyFrame is a PollMessages reply frame to request 1 holding one
// stored batch of n records of size bytes, mapped as a Kafka producer's
// records are (bridge.EncodeKafkaRecords).
func pollReplyFrame(tb testing.TB, n, size int) []byte {
	tb.Helper()
	var kb codec.BatchBuilder
	const ts = 1_700_000_000_000
	kbuf := kb.Begin(nil, 0, ts)
	for i := range n {
		kbuf = kb.AppendRecord(kbuf, int32(i), 0, nil, bytes.Repeat([]byte{byte(i)}, size), 0)
	}
	rb, _, err := codec.ParseBatch(kb.Finish(kbuf))
	if err != nil {
		tb.Fatal(err)
	}
	stored, _, err := bridge.EncodeKafkaRecords(nil, &rb, rb.Records, 0)
	if err != nil {
		tb.Fatal(err)
	}
	bridge.StampIggyBatch(stored, 0, 0, ts*1000)
	f := make([]byte, wire.HeaderSize, wire.HeaderSize+16+len(stored))
	f[wire.OffCommand] = wire.CmdReply
	le.PutUint64(f[wire.RepRequest:], 1)
	f = le.AppendUint32(f, 0)           // partition
	f = le.AppendUint64(f, uint64(n-1)) // current offset
	f = le.AppendUint32(f, uint32(n))   // messages
	f = append(f, stored...)
	le.PutUint32(f[wire.OffSize:], uint32(len(f)))
	return f
}

// The Fetch path over Iggy allocates nothing per record: reading a poll
// reply from the socket (FrameReader), decoding it (decodeFrame,
// decodePoll), feeding the poll cursor and building the Kafka batches
// (bridge.IggyFormat) allocate as often for 5000 records as for 10, and
// not at all once the buffers have grown.
func TestPollReplyPathAllocsNothingPerRecord(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	allocs := func(n, size int) float64 {
		frame := pollReplyFrame(t, n, size)
		src := bytes.NewReader(frame)
		fr := wire.FrameReader{R: src}
		var rbuf []byte
		dst := make([]byte, 0, 2*len(frame))
		// The callbacks are made once, as a Fetch makes them once for all
		// its replies.
		var cur bridge.FetchCursor
		var mapErr error
		pc := pollCursor{fn: func(b []byte) bool {
			dst, _, mapErr = bridge.IggyFormat.AppendKafka(dst, b, &cur)
			return mapErr == nil
		}}
		record := pc.record
		return testing.AllocsPerRun(50, func() {
			src.Reset(frame)
			var err error
			if rbuf, err = fr.Read(rbuf); err != nil {
				t.Fatal(err)
			}
			rep, err := decodeFrame(rbuf, wire.OpNonReplicated)
			if err != nil {
				t.Fatal(err)
			}
			p, err := rep.payload()
			if err != nil {
				t.Fatal(err)
			}
			cur, dst = bridge.FetchCursor{MaxBytes: 64 << 20}, dst[:0]
			pc.max, pc.sent, pc.stop = 64<<20, 0, false
			if _, err := decodePoll(p, record); err != nil || mapErr != nil || cur.Records != n {
				t.Fatalf("%d records of %d: %v %v", cur.Records, n, err, mapErr)
			}
		})
	}
	for _, size := range []int{100, 1024} {
		few, many := allocs(10, size), allocs(5000, size)
		if few != 0 || many != 0 {
			t.Errorf("%d B records: %.1f allocations for a reply of 10, %.1f for 5000", size, few, many)
		}
	}
}
