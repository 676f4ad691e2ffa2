package bridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/codec"
)

// txnMeta is the batch header of producer pid's transactional batch.
func txnMeta(pid int64, epoch int16, seq int32, comp int8) batchMeta {
	return batchMeta{producerID: pid, producerEpoch: epoch, baseSequence: seq, attributes: codec.AttrTransactional | int16(comp)}
}

// kafkaHeader is the header of one fetched Kafka batch, as a test
// compares it.
type kafkaHeader struct {
	attrs   int16
	pid     int64
	epoch   int16
	seq     int32
	base    int64
	records int32
}

func (h kafkaHeader) String() string {
	return fmt.Sprintf("{attrs %#x pid %d epoch %d seq %d base %d n %d}", h.attrs, h.pid, h.epoch, h.seq, h.base, h.records)
}

// kafkaHeaders parses every batch of a Fetch answer with kmsg, checking
// each CRC.
func kafkaHeaders(t *testing.T, b []byte) []kafkaHeader {
	t.Helper()
	var out []kafkaHeader
	for len(b) > 0 {
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatalf("kmsg cannot read a fetched batch: %v", err)
		}
		n := int(kb.Length) + 12
		if crc32.Checksum(b[21:n], crcTable) != uint32(kb.CRC) {
			t.Fatal("fetched batch CRC mismatch")
		}
		out = append(out, kafkaHeader{kb.Attributes, kb.ProducerID, kb.ProducerEpoch, kb.FirstSequence, kb.FirstOffset, kb.NumRecords})
		b = b[n:]
	}
	return out
}

// merged copies the messages of stamped stored batches into one stored
// batch at offsets from base, as a server may return several appends.
func merged(t *testing.T, base uint64, batches ...[]byte) []byte {
	t.Helper()
	var all []IggyMessage
	origin := uint64(math.MaxUint64)
	for _, b := range batches {
		for _, m := range messages(t, b) {
			all = append(all, m)
			origin = min(origin, m.OriginTimestamp)
		}
	}
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, origin)
	for _, m := range all {
		var err error
		if buf, err = bb.Append(buf, m.ID, m.OriginTimestamp, m.Payload, m.UserHeaders); err != nil {
			t.Fatal(err)
		}
	}
	buf, _ = bb.Finish(buf)
	StampIggyBatch(buf, 0, base, testServerTs)
	return buf
}

// marker encodes m as a stored batch at base.
func marker(t *testing.T, m Marker, base uint64) []byte {
	t.Helper()
	b, stats, err := EncodeMarker(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Messages != 1 || stats.Bytes != len(b) {
		t.Fatalf("marker stats %+v for %d bytes", stats, len(b))
	}
	v, err := VerifyIggyBatch(b)
	if err != nil {
		t.Fatalf("marker batch fails verification: %v", err)
	}
	if v.Times != stats.Times {
		t.Fatalf("marker times %+v, the frames' %+v", stats.Times, v.Times)
	}
	StampIggyBatch(b, 0, base, testServerTs)
	if _, err := VerifyIggyBatch(b); err != nil {
		t.Fatalf("stamped marker fails verification: %v", err)
	}
	return b
}

func TestTransactionalRoundTrip(t *testing.T) {
	t.Parallel()
	recs := []rec{
		{key: []byte("k"), value: []byte("a"), ts: nowMs, headers: []hdr{{"h", []byte("1")}}},
		{value: nil, ts: nowMs + 1}, {key: []byte{}, value: []byte("c"), ts: nowMs + 2},
	}
	for _, comp := range []int8{codec.CompressionNone, codec.CompressionZstd} {
		m := txnMeta(0x0102030405060708, 9, math.MaxInt32-1, comp)
		iggy, stats, err := encodeStats(t, m, recs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !stats.Exact {
			t.Error("a transactional batch Fetch rebuilds is not Exact")
		}
		for i, msg := range messages(t, iggy) {
			seq := []int32{math.MaxInt32 - 1, math.MaxInt32, 0}[i]
			if msg.ID[14]&0x7F != IDLayoutTxn || msg.ID[15] != 'K' {
				t.Fatalf("message %d id %x", i, msg.ID)
			}
			ps, ok := ParseMessageID(&msg.ID)
			want := ProducerSeq{ProducerID: 0x0102030405060708, Epoch: 9, Sequence: seq, First: i == 0, Transactional: true}
			if !ok || ps != want {
				t.Fatalf("message %d: ParseMessageID = %+v, %v", i, ps, ok)
			}
			// A reader of layout 2 only (the seed's rule) does not take it
			// for idempotent state.
			if msg.ID[14]&^0x80 == 2 {
				t.Fatal("transactional id readable as layout 2")
			}
		}
		out, cur := fetched(t, iggy, testBase)
		hs := kafkaHeaders(t, out)
		want := kafkaHeader{codec.AttrTransactional | int16(comp), 0x0102030405060708, 9, math.MaxInt32 - 1, testBase, 3}
		if len(hs) != 1 || hs[0] != want || cur.Records != 3 || cur.Controls != 0 {
			t.Fatalf("codec %d: fetched %v, want [%v]", comp, hs, want)
		}
		_, _, got := readKafkaBatches(t, clearTxn(t, out))
		checkSame(t, recs, got)
		// From inside the batch: the rest, its base sequence the first's.
		cur = FetchCursor{From: testBase + 1, MaxBytes: 1 << 20}
		out, err = AppendKafkaBatch(nil, iggy, &cur)
		if hs = kafkaHeaders(t, out); err != nil || len(hs) != 1 || hs[0].seq != math.MaxInt32 || hs[0].records != 2 || hs[0].attrs&codec.AttrTransactional == 0 {
			t.Fatalf("from inside: %v %v", hs, err)
		}
	}
}

// clearTxn rewrites fetched transactional batches as plain ones (producer
// -1, attributes but the codec cleared) so the plain readers check their
// records.
func clearTxn(t *testing.T, b []byte) []byte {
	t.Helper()
	out := slices.Clone(b)
	for rest := out; len(rest) > 0; {
		rb, n, err := codec.ParseBatch(rest)
		if err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint16(rest[21:], uint16(rb.Attributes&0x07))
		binary.BigEndian.PutUint64(rest[43:], math.MaxUint64)
		binary.BigEndian.PutUint16(rest[51:], math.MaxUint16)
		binary.BigEndian.PutUint32(rest[53:], math.MaxUint32)
		binary.BigEndian.PutUint32(rest[17:], crc32.Checksum(rest[21:n], crcTable))
		rest = rest[n:]
	}
	return out
}

func TestTransactionalBatchNeedsProducer(t *testing.T) {
	t.Parallel()
	m := plainMeta
	m.attributes = codec.AttrTransactional
	if _, err := encode(t, m, []rec{{value: []byte("v"), ts: nowMs}}, 0); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("transactional batch without producer id: %v", err)
	}
	m.attributes = codec.AttrTransactional | codec.AttrControl
	m.producerID, m.producerEpoch = 5, 0
	if _, err := encode(t, m, []rec{{value: []byte("v"), ts: nowMs}}, 0); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("a client's control batch: %v", err)
	}
}

// What a native Iggy reader sees of a marker, and its id.
func TestMarkerMessage(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{false, true} {
		m := Marker{ProducerID: 0x0A0B0C0D0E, Epoch: 3, Commit: commit, CoordinatorEpoch: 17, TimestampMs: nowMs + 5}
		b := marker(t, m, 40)
		ms := messages(t, b)
		if len(ms) != 1 {
			t.Fatalf("%d messages", len(ms))
		}
		msg := ms[0]
		kind := byte(0)
		if commit {
			kind = 1
		}
		if !bytes.Equal(msg.Payload, []byte{0, 0, 0, 0, 0, 17}) || msg.OriginTimestamp != uint64(nowMs+5)*1000 || msg.Offset != 40 {
			t.Fatalf("payload %x origin %d offset %d", msg.Payload, msg.OriginTimestamp, msg.Offset)
		}
		h := userHeaders(t, msg.UserHeaders)
		if len(h) != 3 || !bytes.Equal(h[HeaderVersion], []byte{byte(KindUint8), 1}) ||
			!bytes.Equal(h[HeaderControl], []byte{byte(KindUint8), kind}) ||
			!bytes.Equal(h[HeaderKey], []byte{byte(KindRaw), 0, 0, 0, kind}) {
			t.Fatalf("headers %x", h)
		}
		if msg.ID[15] != 'K' || msg.ID[14] != 0x80|4+kind || binary.LittleEndian.Uint32(msg.ID[:]) != uint32(m.TimestampMs) {
			t.Fatalf("id %x", msg.ID)
		}
		if _, ok := ParseMessageID(&msg.ID); ok {
			t.Fatal("ParseMessageID reads a marker as a data record")
		}
		ps, c, ok := ParseMarkerID(&msg.ID)
		if !ok || c != commit || ps != (ProducerSeq{ProducerID: 0x0A0B0C0D0E, Epoch: 3, Sequence: -1, First: true, Transactional: true}) {
			t.Fatalf("ParseMarkerID = %+v %v %v", ps, c, ok)
		}
		// Fetch builds the control batch a Kafka broker writes (the one
		// codec.AppendTxnMarker makes), byte for byte.
		out, cur := fetched(t, b, 40)
		if want := codec.AppendTxnMarker(nil, 40, m); !bytes.Equal(out, want) || cur.Controls != 1 {
			t.Fatalf("fetched marker\n%x\nwant\n%x", out, want)
		}
	}
	// Timestamp 0 is kept as for any record; negative is none.
	for _, ts := range []int64{0, -1} {
		b := marker(t, Marker{ProducerID: 1, Commit: true, TimestampMs: ts}, 0)
		out, _ := fetched(t, b, 0)
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(out); err != nil {
			t.Fatal(err)
		}
		want := ts
		if ts < 0 {
			want = testServerTs / 1000
		}
		if kb.FirstTimestamp != want {
			t.Fatalf("timestamp %d reads as %d", ts, kb.FirstTimestamp)
		}
	}
	if _, _, err := EncodeMarker(nil, Marker{ProducerID: -1}); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("marker without producer: %v", err)
	}
}

// kgoRecords reads a Fetch answer as franz-go's consumer does, at the
// isolation level given, with the aborted transactions given.
func kgoRecords(t *testing.T, out []byte, committed, keepControl bool, hwm int64, aborted ...kmsg.FetchResponseTopicPartitionAbortedTransaction) []*kgo.Record {
	t.Helper()
	rp := kmsg.FetchResponseTopicPartition{HighWatermark: hwm, LastStableOffset: hwm, RecordBatches: out, AbortedTransactions: aborted}
	level := kgo.ReadUncommitted()
	if committed {
		level = kgo.ReadCommitted()
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: keepControl, IsolationLevel: level, Topic: "t"},
		&rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		t.Fatalf("franz-go: %v", fp.Err)
	}
	return fp.Records
}

func values(rs []*kgo.Record) string {
	var s []string
	for _, r := range rs {
		if r.Attrs.IsControl() {
			s = append(s, fmt.Sprintf("ctl%x", r.Key))
			continue
		}
		s = append(s, string(r.Value))
	}
	return fmt.Sprint(s)
}

// A partition holding plain, idempotent and transactional batches of two
// producers and their markers, read back as one stored batch (a server
// returns appends merged) and as the stored batches they were: the Kafka
// batches are the producers' batches, and franz-go's consumer reads
// exactly the committed records under read_committed.
func TestTransactionalMixedRun(t *testing.T) {
	t.Parallel()
	r := func(v string) []rec {
		return []rec{{value: []byte(v + "1"), ts: nowMs}, {value: []byte(v + "2"), ts: nowMs + 1}}
	}
	var stored [][]byte
	off := uint64(0)
	add := func(b []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		StampIggyBatch(b, 0, off, testServerTs)
		off += uint64(len(messages(t, b)))
		stored = append(stored, b)
	}
	add(encode(t, plainMeta, r("p"), 0))                                                                                  // 0-1
	add(encode(t, batchMeta{producerID: 7, producerEpoch: 0, baseSequence: 0}, r("i"), 0))                                // 2-3 idempotent
	add(encode(t, txnMeta(1, 2, 0, 0), r("a"), 0))                                                                        // 4-5 producer 1
	add(encode(t, txnMeta(1, 2, 2, codec.CompressionLZ4), r("b"), 0))                                                     // 6-7 producer 1, next batch
	add(encode(t, txnMeta(2, 0, 10, 0), r("x"), 0))                                                                       // 8-9 producer 2
	add(encode(t, txnMeta(1, 2, 4, 0), r("c"), 0))                                                                        // 10-11 producer 1
	add(marker(t, Marker{ProducerID: 1, Epoch: 2, Commit: true, CoordinatorEpoch: 3, TimestampMs: nowMs + 9}, off), nil)  // 12
	add(marker(t, Marker{ProducerID: 2, Epoch: 0, Commit: false, CoordinatorEpoch: 3, TimestampMs: nowMs + 9}, off), nil) // 13
	add(encode(t, plainMeta, r("q"), 0))                                                                                  // 14-15
	wantHeaders := []kafkaHeader{
		{0, -1, -1, -1, 0, 4}, // plain and idempotent records read as today: one batch
		{0x10, 1, 2, 0, 4, 2},
		{0x13, 1, 2, 2, 6, 2},
		{0x10, 2, 0, 10, 8, 2},
		{0x10, 1, 2, 4, 10, 2},
		{0x30, 1, 2, -1, 12, 1},
		{0x30, 2, 0, -1, 13, 1},
		{0, -1, -1, -1, 14, 2},
	}
	one := merged(t, 0, stored...)
	for name, parts := range map[string][][]byte{"merged": {one}, "as stored": stored} {
		cur := FetchCursor{MaxBytes: 1 << 20}
		var out []byte
		for _, b := range parts {
			var err error
			if out, err = AppendKafkaBatch(out, b, &cur); err != nil {
				t.Fatal(err)
			}
		}
		hs := kafkaHeaders(t, out)
		if name == "as stored" {
			// Stored batches are not merged: the plain and the idempotent
			// batch come apart.
			wantHeaders := append([]kafkaHeader{{0, -1, -1, -1, 0, 2}, {0, -1, -1, -1, 2, 2}}, wantHeaders[1:]...)
			if fmt.Sprint(hs) != fmt.Sprint(wantHeaders) {
				t.Fatalf("%s: batches\n%v\nwant\n%v", name, hs, wantHeaders)
			}
		} else if fmt.Sprint(hs) != fmt.Sprint(wantHeaders) {
			t.Fatalf("%s: batches\n%v\nwant\n%v", name, hs, wantHeaders)
		}
		if cur.Records != 16 || cur.Controls != 2 || cur.Next != 16 || cur.Bytes != len(out) {
			t.Fatalf("%s: cursor %+v for %d bytes", name, cur, len(out))
		}
		all := values(kgoRecords(t, out, false, true, 16))
		if all != "[p1 p2 i1 i2 a1 a2 b1 b2 x1 x2 c1 c2 ctl00000001 ctl00000000 q1 q2]" {
			t.Fatalf("%s: read_uncommitted with control records: %s", name, all)
		}
		aborted := kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: 2, FirstOffset: 8}
		committed := values(kgoRecords(t, out, true, false, 16, aborted))
		if committed != "[p1 p2 i1 i2 a1 a2 b1 b2 c1 c2 q1 q2]" {
			t.Fatalf("%s: read_committed: %s", name, committed)
		}
	}
	// ScanProducerRecords over the merged batch: every producer record and
	// both markers, in order.
	var seen []string
	if err := ScanProducerRecords(one, func(o uint64, ps ProducerSeq, control, commit bool) bool {
		seen = append(seen, fmt.Sprintf("%d:%d/%d/%d/%v/%v/%v/%v", o, ps.ProducerID, ps.Epoch, ps.Sequence, ps.First, ps.Transactional, control, commit))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"2:7/0/0/true/false/false/false", "3:7/0/1/false/false/false/false",
		"4:1/2/0/true/true/false/false", "5:1/2/1/false/true/false/false",
		"6:1/2/2/true/true/false/false", "7:1/2/3/false/true/false/false",
		"8:2/0/10/true/true/false/false", "9:2/0/11/false/true/false/false",
		"10:1/2/4/true/true/false/false", "11:1/2/5/false/true/false/false",
		"12:1/2/-1/true/true/true/true", "13:2/0/-1/true/true/true/false",
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("scan\n%v\nwant\n%v", seen, want)
	}
	n := 0
	_ = ScanProducerRecords(one, func(uint64, ProducerSeq, bool, bool) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("scan went on after false: %d calls", n)
	}
	if err := ScanProducerRecords([]byte("short"), func(uint64, ProducerSeq, bool, bool) bool { return true }); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("scan of a malformed batch: %v", err)
	}
}

// A marker's id with contents that do not agree (a native producer's
// message that happens to carry such an id) reads as an ordinary record,
// and a transactional id on a native message still reads as data.
func TestForgedMarkerIsData(t *testing.T) {
	t.Parallel()
	real := messages(t, marker(t, Marker{ProducerID: 1, Commit: true, TimestampMs: nowMs}, 0))[0]
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, real.OriginTimestamp)
	buf, _ = bb.Append(buf, real.ID, real.OriginTimestamp, []byte("not a marker"), nil)
	buf, _ = bb.Finish(buf)
	out, cur := fetched(t, buf, 0)
	hs := kafkaHeaders(t, out)
	if len(hs) != 1 || hs[0].attrs != 0 || hs[0].pid != -1 || cur.Controls != 0 {
		t.Fatalf("forged marker fetched as %v", hs)
	}
	called := false
	_ = ScanProducerRecords(buf, func(uint64, ProducerSeq, bool, bool) bool { called = true; return true })
	if called {
		t.Fatal("scan reports a forged marker")
	}
}

// A Fetch budget that ends between a transactional batch and its marker
// returns whole batches; the next Fetch continues with the marker.
func TestMarkerBudget(t *testing.T) {
	t.Parallel()
	data, err := encode(t, txnMeta(1, 0, 0, 0), []rec{{value: []byte("a"), ts: nowMs}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	StampIggyBatch(data, 0, 0, testServerTs)
	one := merged(t, 0, data, marker(t, Marker{ProducerID: 1, Commit: true, TimestampMs: nowMs}, 1))
	cur := FetchCursor{MaxBytes: 1 << 20}
	full, _ := AppendKafkaBatch(nil, one, &cur)
	hs := kafkaHeaders(t, full)
	cur = FetchCursor{MaxBytes: len(full) - 1}
	out, _ := AppendKafkaBatch(nil, one, &cur)
	if got := kafkaHeaders(t, out); len(got) != 1 || got[0] != hs[0] || cur.Next != 1 || cur.Controls != 0 {
		t.Fatalf("cut budget: %v, cursor %+v", got, cur)
	}
	cur = FetchCursor{From: 1, MaxBytes: 1}
	out, _ = AppendKafkaBatch(nil, one, &cur)
	if got := kafkaHeaders(t, out); len(got) != 1 || got[0] != hs[1] || cur.Controls != 1 || cur.Next != 2 {
		t.Fatalf("from the marker: %v, cursor %+v", got, cur)
	}
}

func TestEncodeMarkerDoesNotAllocate(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	dst := make([]byte, 0, 4096)
	m := Marker{ProducerID: 1, Epoch: 2, Commit: true, CoordinatorEpoch: 3, TimestampMs: 0}
	if n := testing.AllocsPerRun(50, func() { dst, _, _ = EncodeMarker(dst[:0], m) }); n != 0 {
		t.Errorf("EncodeMarker: %v allocs", n)
	}
	b := marker(t, m, 0)
	if n := testing.AllocsPerRun(50, func() {
		cur := FetchCursor{MaxBytes: 1 << 20}
		dst, _ = AppendKafkaBatch(dst[:0], b, &cur)
		_ = ScanProducerRecords(b, func(uint64, ProducerSeq, bool, bool) bool { return true })
	}); n != 0 {
		t.Errorf("marker fetch and scan: %v allocs", n)
	}
}
