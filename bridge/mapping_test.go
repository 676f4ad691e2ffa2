package bridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/iggy-kafka/gateway/codec"
)

const (
	testBase     = 100               // offset the "server" stamps
	testServerTs = 1_800_000_000_123 // µs the "server" stamps
	nowMs        = 1_700_000_000_000
)

// roundTrip maps recs to an Iggy batch, stamps it as a server would, and
// reads it back as a Kafka batch parsed by kmsg.
func roundTrip(t *testing.T, m batchMeta, recs []rec) (iggy []byte, got []rec) {
	t.Helper()
	iggy, err := encode(t, m, recs, 0)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if _, err := VerifyIggyBatch(iggy); err != nil {
		t.Fatalf("encoded batch fails verification: %v", err)
	}
	StampIggyBatch(iggy, 3, testBase, testServerTs)
	if _, err := VerifyIggyBatch(iggy); err != nil {
		t.Fatalf("stamped batch fails verification: %v", err)
	}
	cur := FetchCursor{MaxBytes: 1 << 30}
	out, err := AppendKafkaBatch(nil, iggy, &cur)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	base, offsets, got := readKafka(t, out)
	if base != testBase || cur.Next != testBase+uint64(len(recs)) || cur.Records != len(recs) || cur.Bytes != len(out) {
		t.Fatalf("base %d cursor %+v for %d records, %d bytes", base, cur, len(recs), len(out))
	}
	for i, o := range offsets {
		if o != testBase+int64(i) {
			t.Fatalf("record %d at offset %d", i, o)
		}
	}
	return iggy, got
}

func checkSame(t *testing.T, want, got []rec) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d records back, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameRec(want[i], got[i]) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestRoundTripRecords(t *testing.T) {
	t.Parallel()
	long := bytes.Repeat([]byte("k"), 300)
	name250 := strings.Repeat("n", 250)
	cases := map[string][]rec{
		"plain":              {{key: []byte("k"), value: []byte("v"), ts: nowMs, headers: []hdr{{"b", []byte("2")}, {"a", []byte("1")}}}},
		"null key":           {{value: []byte("v"), ts: nowMs}},
		"tombstone":          {{key: []byte("k"), ts: nowMs}},
		"null key and value": {{ts: nowMs}},
		"empty value":        {{key: []byte("k"), value: []byte{}, ts: nowMs}},
		"empty key":          {{key: []byte{}, value: []byte("v"), ts: nowMs}},
		"empty key, null":    {{key: []byte{}, ts: nowMs}},
		"zero byte value":    {{key: []byte("k"), value: []byte{0}, ts: nowMs}},
		"255 byte key":       {{key: long[:255], value: []byte("v"), ts: nowMs}},
		"long key":           {{key: long, value: []byte("v"), ts: nowMs, headers: []hdr{{"z", []byte("1")}, {"a", nil}}}},
		"null header value":  {{key: []byte("k"), value: []byte("v"), ts: nowMs, headers: []hdr{{"h", []byte("x")}, {"n", nil}, {"e", []byte{}}}}},
		"empty header value": {{value: []byte("v"), ts: nowMs, headers: []hdr{{"e", []byte{}}}}},
		"empty header name":  {{value: []byte("v"), ts: nowMs, headers: []hdr{{"", []byte("x")}}}},
		"long header name":   {{value: []byte("v"), ts: nowMs, headers: []hdr{{name250, []byte("x")}}}},
		"247 byte name":      {{value: []byte("v"), ts: nowMs, headers: []hdr{{name250[:247], []byte("x")}}}},
		"long header value":  {{value: []byte("v"), ts: nowMs, headers: []hdr{{"h", long}}}},
		"non-UTF-8 name":     {{value: []byte("v"), ts: nowMs, headers: []hdr{{"\xff\xfe", []byte("x")}}}},
		"many headers":       {{value: []byte("v"), ts: nowMs, headers: manyHeaders(500, 250)}},
		"mixed":              {{key: []byte("a"), value: []byte("1"), ts: nowMs}, {key: []byte{}, ts: nowMs + 1}, {value: []byte{}, ts: nowMs + 2}, {key: long, value: long, ts: nowMs - 5}},
	}
	for name, recs := range cases {
		t.Run(name, func(t *testing.T) {
			_, got := roundTrip(t, plainMeta, recs)
			checkSame(t, recs, got)
		})
	}
}

func manyHeaders(n, size int) []hdr {
	h := make([]hdr, n)
	for i := range h {
		h[i] = hdr{fmt.Sprintf("h%04d", i), bytes.Repeat([]byte{byte(i)}, size)}
	}
	return h
}

// What a native Iggy reader sees of a gateway-written message.
func TestNativeViewOfMappedMessages(t *testing.T) {
	t.Parallel()
	recs := []rec{
		{key: []byte("k"), value: []byte("v"), ts: nowMs, headers: []hdr{{"trace", []byte("abc")}}},
		{ts: nowMs},
		{key: []byte("k"), value: []byte{}, ts: 0},
		{key: []byte{}, value: []byte("v"), ts: -1},
	}
	// Two batches: a -1 or 0 timestamp beside a real one would clamp the
	// real one (see TestTimestamps), which is not what this test is about.
	a, _ := roundTrip(t, plainMeta, recs[:2])
	b, _ := roundTrip(t, plainMeta, recs[2:])
	msgs := append(messages(t, a), messages(t, b)...)
	want := []struct {
		payload string
		headers map[string]string
		origin  uint64
	}{
		{"v", map[string]string{"kafka.v": "\x09\x01", "kafka.key": "\x01k", "kafka.h.trace": "\x01abc"}, nowMs * 1000},
		{"\x00", map[string]string{"kafka.v": "\x09\x01", "kafka.value": "\x02null"}, nowMs * 1000},
		{"\x00", map[string]string{"kafka.v": "\x09\x01", "kafka.key": "\x01k", "kafka.value": "\x02empty", "kafka.ts": "\x02epoch"}, 0},
		{"", map[string]string{"kafka.v": "\x09\x01", "kafka.envelope": "\x09\x01"}, 0},
	}
	for i, m := range msgs {
		hs := userHeaders(t, m.UserHeaders)
		got := map[string]string{}
		for k, v := range hs {
			got[k] = string(v)
		}
		if fmt.Sprint(got) != fmt.Sprint(want[i].headers) || m.OriginTimestamp != want[i].origin || m.Timestamp != testServerTs {
			t.Errorf("message %d: headers %q origin %d ts %d", i, got, m.OriginTimestamp, m.Timestamp)
		}
		if want[i].payload != "" && string(m.Payload) != want[i].payload {
			t.Errorf("message %d payload %q", i, m.Payload)
		}
		if m.Offset != testBase+uint64(i%2) || m.ID != [16]byte{} {
			t.Errorf("message %d offset %d id %x", i, m.Offset, m.ID)
		}
	}
	// The envelope of message 3: key and value present, key "", value
	// "v", no headers.
	env := msgs[3].Payload
	wantEnv := []byte{3, 0, 0, 0, 0, 1, 0, 0, 0, 'v', 0, 0, 0, 0}
	if !bytes.Equal(env, wantEnv) {
		t.Errorf("envelope %x want %x", env, wantEnv)
	}
}

// A record that needs nothing but kafka.v (no key, no headers, a value
// of 1+ bytes, a real or no timestamp, an uncompressed CreateTime batch)
// is stored as a plain native message: an iggy-server receives, checks,
// copies and writes every header byte, 18 per message for kafka.v alone
// (12 % of a 100-byte record's message). It reads back as the same record,
// and so does the older form, which carries kafka.v.
func TestHeaderlessRecordsStoredNative(t *testing.T) {
	t.Parallel()
	batches := [][]rec{
		{{value: []byte("v"), ts: nowMs}, {value: []byte{0}, ts: nowMs + 1}, {key: []byte("k"), value: []byte("w"), ts: nowMs + 2}, {value: []byte("x"), ts: nowMs + 3}},
		{{value: []byte("no time"), ts: -1}},
	}
	for bi, recs := range batches {
		iggy, got := roundTrip(t, plainMeta, recs)
		want := append([]rec(nil), recs...)
		for i := range want {
			if want[i].ts < 0 {
				want[i].ts = testServerTs / 1000 // no timestamp: the append time, as before
			}
		}
		checkSame(t, want, got)
		for i, m := range messages(t, iggy) {
			bare := recs[i].key == nil
			if bare && (len(m.UserHeaders) != 0 || !bytes.Equal(m.Payload, recs[i].value)) {
				t.Errorf("batch %d message %d: headers %x payload %q, want none and %q", bi, i, m.UserHeaders, m.Payload, recs[i].value)
			}
			if !bare && !bytes.HasPrefix(m.UserHeaders, versionEntry) {
				t.Errorf("batch %d message %d: headers %x do not start with kafka.v", bi, i, m.UserHeaders)
			}
		}
		// The same messages as the mapping wrote them before, with kafka.v
		// on every one, read back as the same records.
		var bb IggyBatchBuilder
		msgs := messages(t, iggy)
		old := bb.Begin(nil, msgs[0].OriginTimestamp)
		for _, m := range msgs {
			h := m.UserHeaders
			if len(h) == 0 {
				h = versionEntry
			}
			var err error
			if old, err = bb.Append(old, m.ID, m.OriginTimestamp, m.Payload, h); err != nil {
				t.Fatal(err)
			}
		}
		old, _ = bb.Finish(old)
		out, _ := fetched(t, old, testBase)
		_, _, gotOld := readKafka(t, out)
		checkSame(t, want, gotOld)
	}
}

func TestTimestamps(t *testing.T) {
	t.Parallel()
	const spread = (MaxTimestampDelta/1000 + 1) // ms just past the u32 µs span
	cases := map[string]struct {
		in, want []int64
	}{
		"none":           {[]int64{-1, -1}, []int64{testServerTs / 1000, testServerTs / 1000}},
		"negative":       {[]int64{-5}, []int64{testServerTs / 1000}},
		"epoch":          {[]int64{0, 1}, []int64{0, 1}},
		"normal":         {[]int64{nowMs, nowMs + 7, nowMs - 3}, []int64{nowMs, nowMs + 7, nowMs - 3}},
		"wide spread":    {[]int64{nowMs, nowMs + spread, nowMs + 2*spread, nowMs + 1}, []int64{nowMs, nowMs + spread, nowMs + 2*spread, nowMs + 1}},
		"span at limit":  {[]int64{nowMs, nowMs + MaxTimestampDelta/1000}, []int64{nowMs, nowMs + MaxTimestampDelta/1000}},
		"none and real":  {[]int64{-1, nowMs}, []int64{testServerTs / 1000, nowMs}},
		"epoch and real": {[]int64{0, nowMs}, []int64{0, nowMs}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			recs := make([]rec, len(c.in))
			for i, ts := range c.in {
				recs[i] = rec{value: []byte("v"), ts: ts}
			}
			iggy, got := roundTrip(t, plainMeta, recs)
			for i := range got {
				if got[i].ts != c.want[i] {
					t.Errorf("record %d: ts %d want %d", i, got[i].ts, c.want[i])
				}
			}
			var newest uint64
			for i, m := range messages(t, iggy) {
				_, clamped := userHeaders(t, m.UserHeaders)["kafka.ts"]
				if c.in[i] > 0 && uint64(c.in[i])*1000 != m.OriginTimestamp && !clamped {
					t.Errorf("message %d: origin %d for %d ms without kafka.ts", i, m.OriginTimestamp, c.in[i])
				}
				// A search by time compares what Fetch shows.
				if st := SearchTime(&m); st != uint64(c.want[i])*1000 && (c.in[i] >= 0 || st != testServerTs) {
					t.Errorf("message %d: search time %d µs, Fetch shows %d ms", i, st, c.want[i])
				}
				if c.in[i] > 0 {
					newest = max(newest, uint64(c.in[i])*1000)
				}
			}
			// The batch's newest origin is the real one, clamped or not,
			// from the encoder and from a walk of the stored frames.
			out, stats, err := encodeStats(t, plainMeta, recs, 0)
			if err != nil {
				t.Fatal(err)
			}
			v, err := VerifyIggyBatch(out)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Times.MaxOrigin != newest || v.Times != stats.Times {
				t.Errorf("newest origin %d from the encoder (%+v), %+v from the frames, want %d", stats.Times.MaxOrigin, stats.Times, v.Times, newest)
			}
		})
	}
	// A timestamp whose µs value overflows u64 is refused.
	if _, err := encode(t, plainMeta, []rec{{value: []byte("v"), ts: math.MaxInt64}}, 0); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("huge timestamp: %v", err)
	}
}

// A record naming a header twice (legal in Kafka, common with tracing
// headers) goes into the envelope and comes back with every header, in
// order, byte for byte; a record beside it without repeats stays plain.
func TestRepeatedHeaderKeptInEnvelope(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 40} { // both the quadratic and the map check
		hs := manyHeaders(n, 1)
		hs[n-1] = hdr{hs[0].k, []byte("second")}
		recs := []rec{{value: []byte("plain"), ts: nowMs, headers: manyHeaders(2, 1)}, {key: []byte("k"), value: []byte("v"), ts: nowMs, headers: hs}}
		iggy, got := roundTrip(t, plainMeta, recs)
		checkSame(t, recs, got)
		envelopes := 0
		for _, m := range messages(t, iggy) {
			if _, ok := userHeaders(t, m.UserHeaders)[HeaderEnvelope]; ok {
				envelopes++
			}
		}
		if envelopes != 1 {
			t.Fatalf("%d headers with a repeat: %d messages in the envelope, want 1", n, envelopes)
		}
	}
}

func TestRecordTooLarge(t *testing.T) {
	t.Parallel()
	r := []rec{{key: []byte("k"), value: make([]byte, 1000), ts: nowMs}}
	if _, err := encode(t, plainMeta, r, 999); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("over maxMessage: %v", err)
	}
	if _, err := encode(t, plainMeta, r, 2000); err != nil {
		t.Fatalf("under maxMessage: %v", err)
	}
}

func TestControlBatchIsInvalid(t *testing.T) {
	t.Parallel()
	m := plainMeta
	m.attributes = 0x20
	if _, err := encode(t, m, []rec{{value: []byte("v"), ts: nowMs}}, 0); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("control batch: %v", err)
	}
}

func TestIdempotentIDs(t *testing.T) {
	t.Parallel()
	m := batchMeta{producerID: 0x0102030405060708, producerEpoch: 9, baseSequence: math.MaxInt32 - 1}
	recs := []rec{{value: []byte("a"), ts: nowMs}, {value: []byte("b"), ts: nowMs}, {value: []byte("c"), ts: nowMs}}
	iggy, got := roundTrip(t, m, recs)
	checkSame(t, recs, got)
	for i, msg := range messages(t, iggy) {
		seq := []uint32{math.MaxInt32 - 1, math.MaxInt32, 0}[i]
		var want [16]byte
		binary.LittleEndian.PutUint32(want[0:], seq)
		binary.LittleEndian.PutUint16(want[4:], 9)
		binary.LittleEndian.PutUint64(want[6:], 0x0102030405060708)
		want[14], want[15] = 2, 'K'
		if i == 0 {
			want[14] |= 0x80
		}
		if msg.ID != want {
			t.Errorf("message %d id %x want %x", i, msg.ID, want)
		}
		ps, ok := ParseMessageID(&msg.ID)
		if !ok || ps != (ProducerSeq{ProducerID: 0x0102030405060708, Epoch: 9, Sequence: int32(seq), First: i == 0}) {
			t.Errorf("message %d: ParseMessageID = %+v, %v", i, ps, ok)
		}
	}
	// A retry of the same batch maps to the same ids; another epoch does not.
	again, _ := encode(t, m, recs, 0)
	m.producerEpoch = 10
	other, _ := encode(t, m, recs, 0)
	if messages(t, again)[0].ID != messages(t, iggy)[0].ID || messages(t, other)[0].ID == messages(t, iggy)[0].ID {
		t.Fatal("ids are not a function of (producer, epoch, sequence)")
	}
}

// Checksums recomputed here from the spec's byte ranges, with one-shot
// hashing over copied bytes rather than the package's streaming code.
func TestChecksumsIndependently(t *testing.T) {
	t.Parallel()
	recs := []rec{{key: []byte("k"), value: []byte("v1"), ts: nowMs}, {value: bytes.Repeat([]byte("x"), 5000), ts: nowMs + 9}}
	iggy, _ := roundTrip(t, plainMeta, recs)
	checkChecksums(t, iggy)
}

func checkChecksums(t *testing.T, b []byte) {
	t.Helper()
	le := binary.LittleEndian
	input := append([]byte(nil), b[0:40]...) // partition .. batch_length
	input = append(input, b[48:52]...)       // message_count
	off := 256
	for off < len(b) {
		hl, pl := int(le.Uint32(b[off+32:])), int(le.Uint32(b[off+36:]))
		end := off + 48 + pl + hl
		var frame []byte
		frame = append(frame, b[off+8:off+48]...)
		frame = append(frame, b[off+48:off+48+pl]...) // payload
		frame = append(frame, b[off+48+pl:end]...)    // then user headers
		if got, want := le.Uint64(b[off:]), xxh3Hash(frame); got != want {
			t.Fatalf("message at %d: checksum %x want %x", off, got, want)
		}
		input = append(input, b[off:off+8]...)
		off = end
	}
	if got, want := le.Uint64(b[40:]), xxh3Hash(input); got != want {
		t.Fatalf("batch checksum %x want %x", got, want)
	}
}

func TestNativeMessagesReadBack(t *testing.T) {
	t.Parallel()
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, 0)
	h, err := AppendUserHeader(nil, KindString, []byte("trace"), KindString, []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	h, _ = AppendUserHeader(h, KindString, []byte("kafka.key"), KindUint32, []byte{1, 2, 3, 4})
	buf, err = bb.Append(buf, [16]byte{7}, 5_000_999, []byte("payload"), h)
	if err != nil {
		t.Fatal(err)
	}
	buf, _ = bb.Append(buf, [16]byte{}, 0, []byte{}, nil) // no origin: server time
	buf, _ = bb.Finish(buf)
	out, cur := fetched(t, buf, 40)
	base, _, got := readKafka(t, out)
	want := []rec{
		{value: []byte("payload"), ts: 5000, headers: []hdr{{"trace", []byte("abc")}, {"kafka.key", []byte{1, 2, 3, 4}}}},
		{value: []byte{}, ts: testServerTs / 1000},
	}
	if base != 40 || cur.Next != 42 {
		t.Fatalf("base %d next %d", base, cur.Next)
	}
	checkSame(t, want, got)
}

func TestFetchCursor(t *testing.T) {
	t.Parallel()
	recs := make([]rec, 10)
	for i := range recs {
		recs[i] = rec{key: []byte("k"), value: bytes.Repeat([]byte{'a' + byte(i)}, 100), ts: nowMs + int64(i)}
	}
	iggy, _ := encode(t, plainMeta, recs, 0)
	StampIggyBatch(iggy, 0, 50, testServerTs)

	// From skips earlier messages.
	cur := FetchCursor{From: 55, MaxBytes: 1 << 20}
	out, _ := AppendKafkaBatch(nil, iggy, &cur)
	base, _, got := readKafka(t, out)
	if base != 55 || len(got) != 5 || cur.Next != 60 {
		t.Fatalf("from 55: base %d, %d records, next %d", base, len(got), cur.Next)
	}
	checkSame(t, recs[5:], got)

	// A budget below one record still yields one record (KIP-74) ...
	cur = FetchCursor{MaxBytes: 1}
	out, _ = AppendKafkaBatch(nil, iggy, &cur)
	if _, _, got := readKafka(t, out); len(got) != 1 || cur.Next != 51 || cur.Bytes != len(out) {
		t.Fatalf("tiny budget: %d records, cursor %+v", len(got), cur)
	}
	// ... and once records were appended, nothing more fits: dst unchanged.
	before := len(out)
	out, err := AppendKafkaBatch(out, iggy, &cur)
	if err != nil || len(out) != before || cur.Records != 1 {
		t.Fatalf("spent budget appended %d bytes, cursor %+v, %v", len(out)-before, cur, err)
	}
	// A budget in between stops at a record boundary and never overshoots.
	for _, maxBytes := range []int{200, 300, 500, 1000} {
		cur = FetchCursor{MaxBytes: maxBytes}
		out, _ = AppendKafkaBatch(nil, iggy, &cur)
		_, _, got := readKafka(t, out)
		if len(out) > maxBytes || cur.Bytes != len(out) || cur.Records != len(got) || cur.Next != 50+uint64(len(got)) {
			t.Fatalf("maxBytes %d: %d bytes, %d records, cursor %+v", maxBytes, len(out), len(got), cur)
		}
	}
	// Past the batch: nothing.
	cur = FetchCursor{From: 60, MaxBytes: 1 << 20}
	if out, _ := AppendKafkaBatch([]byte("x"), iggy, &cur); string(out) != "x" || cur.Records != 0 {
		t.Fatalf("from past the batch: %q %+v", out, cur)
	}
}

func TestUnmappableMessageStopsTheBatch(t *testing.T) {
	t.Parallel()
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, 0)
	good, _ := AppendUserHeader(nil, KindString, []byte("kafka.v"), KindUint8, []byte{1})
	bad, _ := AppendUserHeader(nil, KindString, []byte("kafka.v"), KindUint8, []byte{2})
	buf, _ = bb.Append(buf, [16]byte{}, 5000, []byte("ok"), good)
	buf, _ = bb.Append(buf, [16]byte{}, 5000, []byte("future"), bad)
	buf, _ = bb.Append(buf, [16]byte{}, 5000, []byte("after"), good)
	buf, _ = bb.Finish(buf)
	cur := FetchCursor{MaxBytes: 1 << 20}
	out, err := AppendKafkaBatch(nil, buf, &cur)
	if !errors.Is(err, ErrUnmappable) || cur.Next != 1 || cur.Records != 1 {
		t.Fatalf("err %v cursor %+v", err, cur)
	}
	if _, _, got := readKafka(t, out); len(got) != 1 || string(got[0].value) != "ok" {
		t.Fatalf("records before the bad one: %+v", got)
	}
}

func TestCountKafkaRecords(t *testing.T) {
	t.Parallel()
	kb := kafkaBatch(t, plainMeta, []rec{{ts: 1}, {ts: 2}, {ts: 3}})
	rb, _, _ := codec.ParseBatch(kb)
	if CountKafkaRecords(&rb) != 3 {
		t.Fatal(CountKafkaRecords(&rb))
	}
}

// versionOnly is a byte compare with versionEntry, which is 18 bytes.
func TestVersionOnly(t *testing.T) {
	if len(versionEntry) != 18 || !versionOnly(versionEntry) {
		t.Fatalf("versionEntry %x", versionEntry)
	}
	for i := range versionEntry {
		b := bytes.Clone(versionEntry)
		b[i] ^= 1
		if versionOnly(b) {
			t.Fatalf("byte %d changed still matches", i)
		}
	}
	if versionOnly(append(bytes.Clone(versionEntry), 0)) || versionOnly(versionEntry[:17]) || versionOnly(nil) {
		t.Fatal("a block of another length matches")
	}
}
