package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaRec is a Kafka record as produced or consumed: a nil key or header
// value is null.
type kafkaRec struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []kgo.RecordHeader
	TimeMs    int64 // CreateTime; 0 is the epoch
	// Producer identity of an idempotent producer (PID -1: none).
	PID   int64
	Epoch int16
}

func (r kafkaRec) String() string {
	return fmt.Sprintf("p%d@%d key=%s value=%s headers=%s", r.Partition, r.Offset, nullable(r.Key), short(r.Value), headersString(r.Headers))
}

func nullable(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

func short(b []byte) string {
	if len(b) > 80 {
		return fmt.Sprintf("%q...(%d bytes)", b[:80], len(b))
	}
	return nullable(b)
}

func headersString(hs []kgo.RecordHeader) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, strconv.Quote(h.Key)+"="+nullable(h.Value))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// needsEnvelope reports whether MAPPING.md stores r whole in the payload:
// an empty or over-255-byte key, a header whose name is over 247 bytes or
// not UTF-8, or whose value is null, empty or over 255 bytes.
func needsEnvelope(r kafkaRec) bool {
	if r.Key != nil && (len(r.Key) == 0 || len(r.Key) > 255) {
		return true
	}
	for _, h := range r.Headers {
		if len(h.Key) > 247 || !utf8.ValidString(h.Key) || len(h.Value) == 0 || len(h.Value) > 255 {
			return true
		}
	}
	return false
}

// envelopeOf is the envelope layout version 1 of MAPPING.md, written from
// the document (not from bridge/), so the test checks the code against it.
func envelopeOf(r kafkaRec) []byte {
	var b []byte
	u32 := func(n int) { b = binary.LittleEndian.AppendUint32(b, uint32(n)) }
	var presence byte
	if r.Key != nil {
		presence |= 1
	}
	if r.Value != nil {
		presence |= 2
	}
	b = append(b, presence)
	u32(len(r.Key))
	b = append(b, r.Key...)
	u32(len(r.Value))
	b = append(b, r.Value...)
	u32(len(r.Headers))
	for _, h := range r.Headers {
		var p byte
		if h.Value != nil {
			p = 1
		}
		b = append(b, p)
		u32(len(h.Key))
		b = append(b, h.Key...)
		u32(len(h.Value))
		b = append(b, h.Value...)
	}
	return b
}

// wantNative is the message MAPPING.md says r becomes: its payload and its
// user headers in stored order; none for a record that needs nothing but
// kafka.v (stored as a native message).
func wantNative(r kafkaRec) (payload []byte, hs []nativeHeader) {
	if r.Key == nil && len(r.Value) > 0 && len(r.Headers) == 0 && r.TimeMs != 0 {
		return r.Value, nil
	}
	hs = []nativeHeader{{"kafka.v", kindUint8, []byte{1}}}
	if r.TimeMs == 0 {
		hs = append(hs, nativeHeader{"kafka.ts", kindString, []byte("epoch")})
	}
	if needsEnvelope(r) {
		return envelopeOf(r), append(hs, nativeHeader{"kafka.envelope", kindUint8, []byte{1}})
	}
	if r.Key != nil {
		hs = append(hs, nativeHeader{"kafka.key", kindRaw, r.Key})
	}
	payload = r.Value
	switch {
	case r.Value == nil:
		payload = []byte{0}
		hs = append(hs, nativeHeader{"kafka.value", kindString, []byte("null")})
	case len(r.Value) == 0:
		payload = []byte{0}
		hs = append(hs, nativeHeader{"kafka.value", kindString, []byte("empty")})
	}
	for _, h := range r.Headers {
		hs = append(hs, nativeHeader{"kafka.h." + h.Key, kindRaw, h.Value})
	}
	return payload, hs
}

// checkNativeRecords polls every partition of topic natively and compares
// each message with the Kafka record at the same partition and offset
// (Kafka partition p is Iggy partition p, Kafka offset = Iggy offset); no
// partition may hold anything else. It returns the polled messages by
// partition.
func checkNativeRecords(t *testing.T, cli *iggyCLI, stream, topic string, parts int, want []kafkaRec) map[int32][]nativeMsg {
	t.Helper()
	byPart := map[int32][]kafkaRec{}
	for _, r := range want {
		byPart[r.Partition] = append(byPart[r.Partition], r)
	}
	polled := map[int32][]nativeMsg{}
	for p := range int32(parts) {
		recs := byPart[p]
		sort.Slice(recs, func(i, j int) bool { return recs[i].Offset < recs[j].Offset })
		// Ask for one more than expected: an extra message must show.
		msgs := cli.poll(stream, topic, int(p), len(recs)+1)
		polled[p] = msgs
		if len(msgs) != len(recs) {
			t.Fatalf("%s partition %d: %d native messages, want %d", topic, p, len(msgs), len(recs))
		}
		for i, r := range recs {
			checkNativeMsg(t, topic, r, msgs[i], i)
		}
	}
	return polled
}

// checkNativeMsg compares one polled message with the Kafka record it came
// from; idx is the record's index in its partition (a fresh producer's
// sequence there).
func checkNativeMsg(t *testing.T, topic string, r kafkaRec, m nativeMsg, idx int) {
	t.Helper()
	where := fmt.Sprintf("%s p%d@%d (key %s)", topic, r.Partition, r.Offset, short(r.Key))
	defer func() {
		if t.Failed() {
			t.FailNow() // one message's mismatches are enough to read
		}
	}()
	if m.Offset != uint64(r.Offset) {
		t.Fatalf("%s: native offset %d", where, m.Offset)
	}
	payload, hs := wantNative(r)
	if !bytes.Equal(m.Payload, payload) {
		t.Errorf("%s: native payload %s, want %s", where, short(m.Payload), short(payload))
	}
	if m.HeadersMalformed {
		t.Errorf("%s: malformed user headers", where)
	}
	if !slices.EqualFunc(m.Headers, hs, func(a, b nativeHeader) bool {
		return a.Key == b.Key && a.Kind == b.Kind && bytes.Equal(a.Value, b.Value)
	}) {
		t.Errorf("%s: native headers\n got %+v\nwant %+v", where, m.Headers, hs)
	}
	if m.Origin != uint64(r.TimeMs)*1000 {
		t.Errorf("%s: origin timestamp %d µs, want %d ms × 1000", where, m.Origin, r.TimeMs)
	}
	// Message id (MAPPING.md "Message ids").
	var zero [16]byte
	if r.PID < 0 {
		if m.ID != zero {
			t.Errorf("%s: id %x, want all zero for a non-idempotent producer", where, m.ID)
		}
	} else {
		seq := binary.LittleEndian.Uint32(m.ID[0:])
		epoch := binary.LittleEndian.Uint16(m.ID[4:])
		pid := binary.LittleEndian.Uint64(m.ID[6:])
		if m.ID[15] != 'K' || m.ID[14]&0x7f != 2 || pid != uint64(r.PID) || epoch != uint16(r.Epoch) || seq != uint32(idx) {
			t.Errorf("%s: id %x = seq %d epoch %d pid %d layout %d tag %q, want seq %d epoch %d pid %d layout 2 tag 'K'",
				where, m.ID, seq, epoch, pid, m.ID[14]&0x7f, m.ID[15], idx, r.Epoch, r.PID)
		}
		if idx == 0 && m.ID[14]&0x80 == 0 {
			t.Errorf("%s: the first record of the partition lacks the first-of-batch bit", where)
		}
	}

	// The CLI's own reading of the same message.
	row := m.Row
	if row["Offset"] != strconv.FormatInt(r.Offset, 10) || row["Length"] != strconv.Itoa(len(payload)) || row["ID"] != u128String(m.ID) {
		t.Errorf("%s: table row Offset=%q Length=%q ID=%q, want %d %d %s", where, row["Offset"], row["Length"], row["ID"], r.Offset, len(payload), u128String(m.ID))
	}
	if p, ok := row["Payload"]; ok && printable(payload) && p != string(payload) {
		t.Errorf("%s: table payload %q, want %q", where, p, payload)
	}
	shown := map[string]bool{}
	for _, h := range hs {
		col := "Header: " + h.Key + "/" + kindNames[h.Kind]
		shown[col] = true
		if got, ok := row[col]; !ok || got != cliValue(h) {
			t.Errorf("%s: table column %q = %q (present %v), want %q", where, col, got, ok, cliValue(h))
		}
	}
	for col, v := range row {
		if strings.HasPrefix(col, "Header: ") && !shown[col] && v != "" {
			t.Errorf("%s: table shows %q = %q, not a header of this message", where, col, v)
		}
	}
}

// printable: valid UTF-8 the table prints as is (no control characters,
// no edge spaces, which the cell trims).
func printable(b []byte) bool {
	if !utf8.Valid(b) || strings.TrimSpace(string(b)) != string(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 || r == 0x7f || r == '|' {
			return false
		}
	}
	return true
}

func recOfKgo(r *kgo.Record) kafkaRec {
	return kafkaRec{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Headers: r.Headers,
		TimeMs: r.Timestamp.UnixMilli(), PID: r.ProducerID, Epoch: r.ProducerEpoch}
}

// sameKafka compares records by content: partition, offset, key and value
// with null vs. empty, headers in order with null vs. empty.
func sameKafka(a, b kafkaRec) bool {
	eq := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	return a.Partition == b.Partition && a.Offset == b.Offset && eq(a.Key, b.Key) && eq(a.Value, b.Value) &&
		slices.EqualFunc(a.Headers, b.Headers, func(x, y kgo.RecordHeader) bool { return x.Key == y.Key && eq(x.Value, y.Value) })
}

// byteRange is the bytes lo..hi inclusive.
func byteRange(lo, hi int) []byte {
	var b []byte
	for c := lo; c <= hi; c++ {
		b = append(b, byte(c))
	}
	return b
}
