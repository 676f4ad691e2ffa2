package bridge

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/iggy-kafka/gateway/codec"
)

// lat is a LogAppendTime batch as the Produce handler stamps it: the
// producer's records (their own CreateTime deltas kept), the timestamp
// type bit set and the append time as the max timestamp.
func lat(t *testing.T, attrs int16, appendMs int64, recs []rec) []byte {
	t.Helper()
	kb := kafkaBatch(t, batchMeta{producerID: -1, producerEpoch: -1, baseSequence: -1, attributes: attrs}, recs)
	rb, _, err := codec.ParseBatch(kb)
	if err != nil {
		t.Fatal(err)
	}
	rb.SetMaxTimestamp(true, appendMs)
	return kb
}

// latBatches reads a Fetch answer's batches: per batch its timestamp type,
// codec and max timestamp, and every record as a consumer reads it (in a
// LogAppendTime batch every record's timestamp is the max timestamp).
func latBatches(t *testing.T, b []byte) (kinds []string, recs []rec) {
	t.Helper()
	for len(b) > 0 {
		rb, n, err := codec.ParseBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		b = b[n:]
		records := rb.Records
		if c := rb.Compression(); c != codec.CompressionNone {
			if records, err = codec.Decompress(nil, c, rb.Records, 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		kind := fmt.Sprintf("create/%d", rb.Compression())
		if rb.LogAppendTime() {
			kind = fmt.Sprintf("append@%d/%d", rb.MaxTimestamp, rb.Compression())
		}
		kinds = append(kinds, kind)
		it := codec.NewRecordIter(records, rb.NumRecords)
		for it.Next() {
			r := it.Record()
			ts := rb.FirstTimestamp + r.TimestampDelta
			if rb.LogAppendTime() {
				if ts != rb.MaxTimestamp {
					t.Errorf("LogAppendTime batch: a record's own timestamp %d, not the max %d", ts, rb.MaxTimestamp)
				}
				ts = rb.MaxTimestamp
			}
			recs = append(recs, rec{key: r.Key, value: r.Value, ts: ts})
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	return kinds, recs
}

// A LogAppendTime batch: every message's origin is the append time and
// carries kafka.tstype; Fetch gives one LogAppendTime batch whose records
// all read as the append time, compressed again if the producer's was.
func TestLogAppendTimeRoundTrip(t *testing.T) {
	t.Parallel()
	const appendMs = nowMs + 3_600_000
	recs := []rec{
		{key: []byte("k1"), value: []byte("v1"), ts: nowMs},
		{key: []byte("k2"), value: []byte("v2"), ts: nowMs + 7},
		{value: []byte("v3"), ts: nowMs - 3},
	}
	for _, comp := range []int16{codec.CompressionNone, codec.CompressionLZ4} {
		kb := lat(t, 0x08|comp, appendMs, recs)
		rb, _, err := codec.ParseBatch(kb)
		if err != nil {
			t.Fatal(err)
		}
		// kafkaBatch leaves the records uncompressed, as the handler
		// hands them over once decompressed.
		iggy, stats, err := EncodeKafkaRecords(nil, &rb, rb.Records, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !stats.Exact || stats.Times.MaxOrigin != appendMs*1000 {
			t.Errorf("codec %d: stats %+v, want exact, max origin the append time", comp, stats)
		}
		for i, m := range messages(t, iggy) {
			hs := userHeaders(t, m.UserHeaders)
			if m.OriginTimestamp != appendMs*1000 || string(hs[HeaderTimeType]) != "\x09\x01" || hs[HeaderTime] != nil {
				t.Errorf("codec %d message %d: origin %d, kafka.tstype %q, kafka.ts %q", comp, i, m.OriginTimestamp, hs[HeaderTimeType], hs[HeaderTime])
			}
		}
		out, _ := fetched(t, iggy, 0)
		kinds, got := latBatches(t, out)
		if want := []string{fmt.Sprintf("append@%d/%d", appendMs, comp)}; fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Errorf("codec %d: batches %v, want %v", comp, kinds, want)
		}
		for i := range recs {
			w := recs[i]
			w.ts = appendMs
			if i >= len(got) || !sameRec(got[i], w) {
				t.Errorf("codec %d record %d: %+v, want %+v", comp, i, got, w)
				break
			}
		}
	}
}

// A stored batch holding CreateTime messages and two LogAppendTime runs
// (a server returns several produce batches as one) comes back as one
// Kafka batch per timestamp type and append time.
func TestLogAppendTimeSplitsBatches(t *testing.T) {
	t.Parallel()
	latHeaders, _ := AppendUserHeader(append([]byte(nil), v1Headers...), KindString, []byte(HeaderTimeType), KindUint8, []byte{1})
	msgs := []struct {
		ms      uint64
		headers []byte
	}{
		{nowMs, v1Headers}, {nowMs + 1, v1Headers},
		{nowMs + 10, latHeaders}, {nowMs + 10, latHeaders},
		{nowMs + 11, latHeaders},
		{nowMs + 2, v1Headers},
	}
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, nowMs*1000)
	for i, m := range msgs {
		var err error
		if buf, err = bb.Append(buf, [16]byte{}, m.ms*1000, []byte{byte('a' + i)}, m.headers); err != nil {
			t.Fatal(err)
		}
	}
	buf, _ = bb.Finish(buf)
	out, cur := fetched(t, buf, 0)
	kinds, got := latBatches(t, out)
	want := []string{"create/0", fmt.Sprintf("append@%d/0", nowMs+10), fmt.Sprintf("append@%d/0", nowMs+11), "create/0"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) || len(got) != len(msgs) || cur.Next != uint64(len(msgs)) {
		t.Fatalf("batches %v (%d records, next %d), want %v", kinds, len(got), cur.Next, want)
	}
	for i, r := range got {
		if !bytes.Equal(r.value, []byte{byte('a' + i)}) || r.ts != int64(msgs[i].ms) {
			t.Errorf("record %d: %q at %d, want %d", i, r.value, r.ts, msgs[i].ms)
		}
	}
	// kafka.tstype other than 1 is not a mapping this gateway wrote.
	bad, _ := AppendUserHeader(append([]byte(nil), v1Headers...), KindString, []byte(HeaderTimeType), KindUint8, []byte{2})
	buf = bb.Begin(nil, nowMs*1000)
	buf, _ = bb.Append(buf, [16]byte{}, nowMs*1000, []byte("x"), bad)
	buf, _ = bb.Finish(buf)
	c := FetchCursor{MaxBytes: 1 << 20}
	if _, err := AppendKafkaBatch(nil, buf, &c); err == nil {
		t.Fatal("kafka.tstype 2 was mapped")
	}
}
