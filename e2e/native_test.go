package e2e

// Native interop on the real Iggy server, with Iggy's own CLI as the native
// client: what kcat and franz-go write through the gateway must read with
// `iggy message poll` exactly as docs/MAPPING.md says (payload, the kafka.*
// user headers, partition and offset numbering, message ids, timestamps),
// and what `iggy message send` writes (to a topic `iggy topic create` made)
// must read through the gateway with kcat and franz-go as the mapping
// promises for native producers.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// iggyCLI runs the `iggy` CLI against one server as the root user.
type iggyCLI struct {
	t         *testing.T
	bin, addr string
}

func newIggyCLI(t *testing.T, addr string) *iggyCLI {
	t.Helper()
	bin, err := iggyreal.Binary("iggy")
	if err != nil {
		missing(t, "the iggy CLI", err.Error())
	}
	return &iggyCLI{t: t, bin: bin, addr: addr}
}

// run runs one CLI command and returns its stdout; a non-zero exit fails
// the test. (Some failures exit 0: `stream get` of a missing stream prints
// "was not found".)
func (c *iggyCLI) run(stdin string, args ...string) string {
	c.t.Helper()
	full := append([]string{"-u", iggyreal.Username, "-p", iggyreal.Password,
		"--transport", "tcp", "--tcp-server-address", c.addr}, args...)
	out, errOut, err := runCmd(c.t, 60*time.Second, stdin, c.bin, full...)
	if err != nil {
		c.t.Fatalf("iggy %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, tail(out, 40), tail(errOut, 40))
	}
	return out
}

// nativeHeader is one user header as stored: key (a String TLV for every
// header in these tests), value kind and value bytes.
type nativeHeader struct {
	Key   string
	Kind  byte
	Value []byte
}

// Iggy header kinds (PROTOCOL.md; core/common user_headers.rs).
const (
	kindRaw    = 1
	kindString = 2
	kindInt64  = 7
	kindUint8  = 9
)

// kindNames are the CLI's names of the kinds these tests meet, as its table
// header prints them.
var kindNames = map[byte]string{kindRaw: "raw", kindString: "string", kindInt64: "int64", kindUint8: "uint8"}

// nativeMsg is one message as `iggy message poll` shows it: the binary
// dump (--output-file, the SDK's IggyMessage bytes) for exact bytes, and
// the table it prints (-s) for what the SDK makes of them.
type nativeMsg struct {
	Offset           uint64
	ID               [16]byte
	Timestamp        uint64 // µs, the server's append time
	Origin           uint64 // µs, the producer's
	Payload          []byte
	Headers          []nativeHeader // in stored order
	HeadersMalformed bool

	Row map[string]string // table cell by column ("Offset", "ID", "Length", "Payload", "Header: k/kind")
}

// poll reads n messages from offset 0 of one partition of stream/topic,
// twice: once into a binary file, once as the table with headers.
func (c *iggyCLI) poll(stream, topic string, partition, n int) []nativeMsg {
	c.t.Helper()
	file := filepath.Join(c.t.TempDir(), "poll.bin")
	args := []string{"message", "poll", "--offset", "0", "-m", strconv.Itoa(n)}
	c.run("", append(args, "--output-file", file, stream, topic, strconv.Itoa(partition))...)
	raw, err := os.ReadFile(file)
	if os.IsNotExist(err) { // nothing polled (the CLI creates the file up front today)
		raw, err = nil, nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	msgs := parseIggyDump(c.t, raw)
	table := c.run("", append(args, "-s", stream, topic, strconv.Itoa(partition))...)
	rows := parseIggyTable(c.t, table)
	if len(rows) != len(msgs) {
		c.t.Fatalf("poll %s/%s/%d: %d messages in the dump, %d rows in the table:\n%s", stream, topic, partition, len(msgs), len(rows), tail(table, 30))
	}
	for i := range msgs {
		msgs[i].Row = rows[i]
	}
	return msgs
}

// parseIggyDump splits the CLI's --output-file: per message the 64-byte
// IggyMessageHeader (checksum u64, id u128, offset u64, timestamp u64,
// origin timestamp u64, user-headers length u32, payload length u32,
// reserved u64; little-endian), the payload, the user-header TLVs.
func parseIggyDump(t *testing.T, b []byte) []nativeMsg {
	t.Helper()
	var out []nativeMsg
	for len(b) > 0 {
		if len(b) < 64 {
			t.Fatalf("dump: %d trailing bytes", len(b))
		}
		var m nativeMsg
		copy(m.ID[:], b[8:24])
		m.Offset = binary.LittleEndian.Uint64(b[24:])
		m.Timestamp = binary.LittleEndian.Uint64(b[32:])
		m.Origin = binary.LittleEndian.Uint64(b[40:])
		hl := int(binary.LittleEndian.Uint32(b[48:]))
		pl := int(binary.LittleEndian.Uint32(b[52:]))
		if len(b) < 64+pl+hl {
			t.Fatalf("dump: message at offset %d claims %d+%d bytes, %d left", m.Offset, pl, hl, len(b)-64)
		}
		m.Payload = b[64 : 64+pl]
		m.Headers, m.HeadersMalformed = parseTLVs(b[64+pl : 64+pl+hl])
		out = append(out, m)
		b = b[64+pl+hl:]
	}
	return out
}

// parseTLVs reads user headers: per entry key kind u8, key length u32, key,
// value kind u8, value length u32, value.
func parseTLVs(b []byte) (hs []nativeHeader, malformed bool) {
	field := func() (byte, []byte, bool) {
		if len(b) < 5 {
			return 0, nil, false
		}
		kind, n := b[0], int(binary.LittleEndian.Uint32(b[1:]))
		if len(b) < 5+n {
			return 0, nil, false
		}
		v := b[5 : 5+n]
		b = b[5+n:]
		return kind, v, true
	}
	for len(b) > 0 {
		kk, k, ok1 := field()
		vk, v, ok2 := field()
		if !ok1 || !ok2 || kk != kindString {
			return hs, true
		}
		hs = append(hs, nativeHeader{Key: string(k), Kind: vk, Value: v})
	}
	return hs, false
}

// parseIggyTable reads the table `iggy message poll -s` prints (comfy-table,
// ASCII borders, no wrapping off a terminal): one map per row, keyed by the
// column header. Column edges come from the top border. The payload column
// is printed lossily (a binary payload can hold newlines, which split its
// row over several lines, and characters of any display width), so cells
// left of it are cut from a row's first line counting from the left, and
// cells right of it (the headers, which the SDK prints escaped, in ASCII)
// counting from the right; the payload cell is kept only for a one-line
// row whose width matches the border.
func parseIggyTable(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "+-") {
		i++
	}
	if i == len(lines) {
		t.Fatalf("no table in the output:\n%s", tail(out, 30))
	}
	border := []rune(strings.TrimRight(lines[i], " \r"))
	var edges []int
	for j, r := range border {
		if r == '+' {
			edges = append(edges, j)
		}
	}
	ncol := len(edges) - 1
	const payloadCol = 4
	if ncol < payloadCol+1 {
		t.Fatalf("table with %d columns:\n%s", ncol, tail(out, 30))
	}
	cell := func(line []rune, col int, fromRight bool) string {
		lo, hi := edges[col]+1, edges[col+1]
		if fromRight {
			shift := len(line) - len(border)
			lo, hi = lo+shift, hi+shift
		}
		if lo < 0 || hi > len(line) || lo > hi {
			t.Fatalf("table line shorter than its border: %q", string(line))
		}
		return strings.TrimSpace(string(line[lo:hi]))
	}
	// Header row: lines up to the "+===" rule; a cell may span lines.
	names := make([]string, ncol)
	for i++; i < len(lines) && !strings.HasPrefix(lines[i], "+="); i++ {
		line := []rune(lines[i])
		for c := range ncol {
			if s := cell(line, c, false); s != "" {
				if names[c] != "" {
					names[c] += "/"
				}
				names[c] += s
			}
		}
	}
	var rows []map[string]string
	var first []rune
	var nlines int
	flush := func() {
		if first == nil {
			return
		}
		row := map[string]string{}
		for c := range ncol {
			switch {
			case c < payloadCol:
				row[names[c]] = cell(first, c, false)
			case c > payloadCol:
				row[names[c]] = cell(first, c, true)
			case nlines == 1 && len(first) == len(border):
				row[names[c]] = cell(first, c, false)
			}
		}
		rows = append(rows, row)
		first, nlines = nil, 0
	}
	for i++; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "|-") || strings.HasPrefix(l, "+-") {
			flush()
			if strings.HasPrefix(l, "+-") {
				break
			}
			continue
		}
		if first == nil {
			first = []rune(strings.TrimRight(l, "\r"))
		}
		nlines++
	}
	flush()
	return rows
}

// rustBytesDebug is how the CLI prints a Raw header value: Rust's Debug of
// bytes::Bytes (b"...", printable ASCII as is, \n \r \t \\ \" \0, else
// \xNN).
func rustBytesDebug(b []byte) string {
	var s strings.Builder
	s.WriteString(`b"`)
	for _, c := range b {
		switch {
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\r':
			s.WriteString(`\r`)
		case c == '\t':
			s.WriteString(`\t`)
		case c == '\\' || c == '"':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c == 0:
			s.WriteString(`\0`)
		case c >= 0x20 && c < 0x7f:
			s.WriteByte(c)
		default:
			fmt.Fprintf(&s, `\x%02x`, c)
		}
	}
	s.WriteByte('"')
	return s.String()
}

// cliValue is how the CLI's table shows a header value.
func cliValue(h nativeHeader) string {
	switch h.Kind {
	case kindRaw:
		return rustBytesDebug(h.Value)
	case kindString:
		return string(h.Value)
	case kindUint8:
		return strconv.Itoa(int(h.Value[0]))
	case kindInt64:
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(h.Value)), 10)
	}
	return fmt.Sprintf("<kind %d>", h.Kind)
}

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
// user headers in stored order.
func wantNative(r kafkaRec) (payload []byte, hs []nativeHeader) {
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

func u128String(id [16]byte) string {
	be := make([]byte, 16)
	for i := range id {
		be[15-i] = id[i]
	}
	return new(big.Int).SetBytes(be).String()
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

// realGateway is an in-process gateway on the shared real server, on the
// test's own streams.
func realGateway(t *testing.T, opts ...gwOption) (*gateway, realBackend) {
	t.Helper()
	realServerTest(t)
	rb := newRealBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	logBuf := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := iggy.Open(ctx, iggy.Options{Addr: rb.addr, StateStream: rb.state, Logger: log.With("component", "iggy")})
	if err != nil {
		t.Fatal(err)
	}
	return startGatewayOn(t, st, rb.stream, logBuf, opts...), rb
}

// byteRange is the bytes lo..hi inclusive.
func byteRange(lo, hi int) []byte {
	var b []byte
	for c := lo; c <= hi; c++ {
		b = append(b, byte(c))
	}
	return b
}

// kcatProduce runs kcat -P with extra arguments and stdin.
func kcatProduce(t *testing.T, kcat, addr, topic, stdin string, extra ...string) {
	t.Helper()
	args := append([]string{"-b", addr, "-P", "-t", topic}, extra...)
	if _, errOut, err := runCmd(t, 60*time.Second, stdin, kcat, args...); err != nil {
		t.Fatalf("kcat -P %v: %v\nstderr: %s", extra, err, errOut)
	}
}

// kcatLine is one record as kcatConsumeAll reads it.
type kcatLine struct {
	Partition int32
	Offset    int64
	KeyLen    int
	Key       string
	TimeMs    int64
	Headers   string
	ValueLen  int
	Value     string
}

// kcatRecordEnd ends every record kcatConsumeAll asks kcat to print: values
// may hold newlines.
const kcatRecordEnd = "<<end of record>>\n"

// kcatConsumeAll reads topic from the start to its end, with the headers
// (%h, which has no escaping: only for headers without '|' or the record
// end) when withHeaders.
func kcatConsumeAll(t *testing.T, kcat, addr, topic string, withHeaders bool) []kcatLine {
	t.Helper()
	format := "%p|%o|%K|%k|%T|%S|"
	if withHeaders {
		format += "%h"
	}
	format += "|%s" + kcatRecordEnd
	out, errOut, err := runCmd(t, 60*time.Second, "", kcat,
		"-b", addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", format)
	if err != nil {
		t.Fatalf("kcat -C: %v\nstderr: %s", err, errOut)
	}
	var got []kcatLine
	for l := range strings.SplitSeq(strings.TrimSuffix(out, kcatRecordEnd), kcatRecordEnd) {
		if l == "" {
			continue
		}
		f := strings.SplitN(l, "|", 8)
		if len(f) != 8 {
			t.Fatalf("bad kcat line %q", l)
		}
		var k kcatLine
		p, err1 := strconv.Atoi(f[0])
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		kl, err3 := strconv.Atoi(f[2])
		ts, err4 := strconv.ParseInt(f[4], 10, 64)
		vl, err5 := strconv.Atoi(f[5])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
			t.Fatalf("bad kcat line %q", l)
		}
		k.Partition, k.Offset, k.KeyLen, k.Key, k.TimeMs, k.ValueLen, k.Headers, k.Value = int32(p), o, kl, f[3], ts, vl, f[6], f[7]
		got = append(got, k)
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
}

// kcatHeaders is how kcat's %h prints headers: name=value, comma-separated.
func kcatHeaders(hs []kgo.RecordHeader) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.Key+"="+string(h.Value))
	}
	return strings.Join(parts, ",")
}

// consumeKafka reads n records of topic from the start of every partition
// with franz-go and returns them sorted by partition and offset.
func consumeKafka(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", len(got), n, topic)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	// Nothing beyond n: one more short poll.
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	cl.PollFetches(short).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	if len(got) != n {
		t.Fatalf("%s holds %d records, want %d", topic, len(got), n)
	}
	sort.Slice(got, func(i, j int) bool {
		if got[i].Partition != got[j].Partition {
			return got[i].Partition < got[j].Partition
		}
		return got[i].Offset < got[j].Offset
	})
	return got
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

// TestNativeReadsKafkaRecords: records kcat and franz-go produce through
// the gateway, to one and to four partitions, read natively with `iggy
// message poll` as docs/MAPPING.md documents them. Then the CLI copies one
// partition natively (poll to a file, send from it) into a topic it
// created, and franz-go reads the copy as the original records.
func TestNativeReadsKafkaRecords(t *testing.T) {
	kcat := needKcat(t)
	gw, rb := realGateway(t)
	cli := newIggyCLI(t, rb.addr)
	// Uncompressed, as kcat sends by default: a compressed batch's first
	// message also carries kafka.codec (docs/MAPPING.md), which the
	// header checks below do not expect.
	cl := newClient(t, gw.Addr, kgo.ProducerBatchCompression(kgo.NoCompression()))

	// kcat, one partition: three runs.
	createTopic(t, cl, "kcat-one", 1)
	low, high := byteRange(1, 0x7f), byteRange(0x80, 0xff) // argv cannot carry NUL
	var kcatOne []kafkaRec
	var input strings.Builder
	for i := range 10 {
		k, v := fmt.Sprintf("k-%d", i), fmt.Sprintf("value %d naïve ✓ %s", i, strings.Repeat("z", i))
		input.WriteString(k + ":" + v + "\n")
		kcatOne = append(kcatOne, kafkaRec{Key: []byte(k), Value: []byte(v), Headers: []kgo.RecordHeader{
			{Key: "trace", Value: []byte("abc-123")}, {Key: "bin-low", Value: low}, {Key: "bin-high", Value: high},
			{Key: "sp ace", Value: []byte("a=b,c")},
		}})
	}
	kcatProduce(t, kcat, gw.Addr, "kcat-one", input.String(), "-K:",
		"-H", "trace=abc-123", "-H", "bin-low="+string(low), "-H", "bin-high="+string(high), "-H", "sp ace=a=b,c")
	// Whole files as values: every byte value, and a single 00 byte (a real
	// one-byte value, not the null/empty marker).
	dir := t.TempDir()
	all, zero := filepath.Join(dir, "all"), filepath.Join(dir, "zero")
	if err := os.WriteFile(all, byteRange(0, 255), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zero, []byte{0}, 0o600); err != nil {
		t.Fatal(err)
	}
	kcatProduce(t, kcat, gw.Addr, "kcat-one", "", "-k", "bin-key", "-H", "trace=files", all, zero)
	for _, v := range [][]byte{byteRange(0, 255), {0}} {
		kcatOne = append(kcatOne, kafkaRec{Key: []byte("bin-key"), Value: v, Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("files")}}})
	}
	// An empty and a null header value: the envelope.
	kcatProduce(t, kcat, gw.Addr, "kcat-one", "k-env:enveloped value\n", "-K:", "-H", "empty=", "-H", "nullh", "-H", "after=1")
	kcatOne = append(kcatOne, kafkaRec{Key: []byte("k-env"), Value: []byte("enveloped value"), Headers: []kgo.RecordHeader{
		{Key: "empty", Value: []byte{}}, {Key: "nullh"}, {Key: "after", Value: []byte("1")},
	}})
	for i := range kcatOne {
		kcatOne[i].Partition, kcatOne[i].Offset, kcatOne[i].PID = 0, int64(i), -1
	}
	// The Kafka view first (it also gives the timestamps kcat stamped).
	lines := kcatConsumeAll(t, kcat, gw.Addr, "kcat-one", false)
	if len(lines) != len(kcatOne) {
		t.Fatalf("kcat reads %d records of kcat-one, want %d", len(lines), len(kcatOne))
	}
	for i, l := range lines {
		w := kcatOne[i]
		if l.Partition != 0 || l.Offset != int64(i) || l.Key != string(w.Key) || l.Value != string(w.Value) {
			t.Fatalf("kcat-one record %d read by kcat: %+v, want %v", i, l, w)
		}
		kcatOne[i].TimeMs = l.TimeMs
	}
	checkNativeRecords(t, cli, rb.stream, "kcat-one", 1, kcatOne)

	// kcat, four partitions, keys spread by librdkafka's partitioner.
	createTopic(t, cl, "kcat-four", 4)
	input.Reset()
	sent := map[string]string{}
	for i := range 40 {
		k, v := fmt.Sprintf("key-%d", i), fmt.Sprintf("value %d ✓", i)
		sent[k] = v
		input.WriteString(k + ":" + v + "\n")
	}
	kcatProduce(t, kcat, gw.Addr, "kcat-four", input.String(), "-K:", "-H", "trace=four", "-H", "bin="+string(high))
	var kcatFour []kafkaRec
	seen := map[int32]bool{}
	for _, l := range kcatConsumeAll(t, kcat, gw.Addr, "kcat-four", false) {
		if sent[l.Key] != l.Value {
			t.Fatalf("kcat-four: kcat reads %+v, which was not sent", l)
		}
		delete(sent, l.Key)
		seen[l.Partition] = true
		kcatFour = append(kcatFour, kafkaRec{Partition: l.Partition, Offset: l.Offset, Key: []byte(l.Key), Value: []byte(l.Value),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("four")}, {Key: "bin", Value: high}}, TimeMs: l.TimeMs, PID: -1})
	}
	if len(sent) != 0 || len(seen) < 2 {
		t.Fatalf("kcat-four: %d records not read back, partitions used %v", len(sent), seen)
	}
	checkNativeRecords(t, cli, rb.stream, "kcat-four", 4, kcatFour)

	// franz-go (idempotent by default), one and four partitions.
	rng := rand.New(rand.NewPCG(9, 9))
	large := make([]byte, 64<<10)
	for i := range large {
		large[i] = byte(rng.UintN(256))
	}
	records := func(topic string) []*kgo.Record {
		var rs []*kgo.Record
		for i := range 20 {
			rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "user-%d", i%6), Value: fmt.Appendf(nil, "kgo value %d", i),
				Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "kgo-%d", i)}, {Key: "bin", Value: byteRange(0, 254)}}})
		}
		rs = append(rs,
			&kgo.Record{Topic: topic, Value: []byte("no key"), Headers: []kgo.RecordHeader{{Key: "why", Value: []byte("null key")}}},
			&kgo.Record{Topic: topic, Key: []byte("no-headers"), Value: []byte("plain")},
			&kgo.Record{Topic: topic, Key: []byte("big"), Value: large, Headers: []kgo.RecordHeader{{Key: "size", Value: []byte("65536")}}},
			&kgo.Record{Topic: topic, Key: []byte("one-zero"), Value: []byte{0}},
			&kgo.Record{Topic: topic, Key: []byte("tombstone")},
			&kgo.Record{Topic: topic, Key: []byte("empty-value"), Value: []byte{}},
			&kgo.Record{Topic: topic, Key: []byte{}, Value: []byte("empty key: envelope")},
		)
		return rs
	}
	for _, tc := range []struct {
		topic string
		parts int32
	}{{"kgo-one", 1}, {"kgo-four", 4}} {
		createTopic(t, cl, tc.topic, tc.parts)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res := cl.ProduceSync(ctx, records(tc.topic)...)
		// CreateTime 0 in a batch of its own (in a batch with real
		// timestamps it would clamp them, MAPPING.md "Timestamps").
		res = append(res, cl.ProduceSync(ctx, &kgo.Record{Topic: tc.topic, Key: []byte("epoch"), Value: []byte("at the epoch"),
			Timestamp: time.UnixMilli(0)})...)
		cancel()
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", tc.topic, err)
		}
		var want []kafkaRec
		for _, r := range res {
			want = append(want, recOfKgo(r.Record))
		}
		checkNativeRecords(t, cli, rb.stream, tc.topic, int(tc.parts), want)
		// And franz-go reads back what it wrote (the null key stays null).
		got := consumeKafka(t, gw.Addr, tc.topic, len(want))
		sort.Slice(want, func(i, j int) bool {
			if want[i].Partition != want[j].Partition {
				return want[i].Partition < want[j].Partition
			}
			return want[i].Offset < want[j].Offset
		})
		for i, r := range got {
			if g := recOfKgo(r); !sameKafka(g, want[i]) || g.TimeMs != want[i].TimeMs {
				t.Fatalf("%s record %d read back as %v (ts %d), want %v (ts %d)", tc.topic, i, g, g.TimeMs, want[i], want[i].TimeMs)
			}
		}
	}

	// A native copy: the CLI polls kcat-one into a file and sends the file
	// to a topic it creates; the copy reads as the same Kafka records.
	cli.run("", "topic", "create", rb.stream, "native-copy", "1", "none")
	file := filepath.Join(t.TempDir(), "copy.bin")
	cli.run("", "message", "poll", "--offset", "0", "-m", strconv.Itoa(len(kcatOne)), "--output-file", file, rb.stream, "kcat-one", "0")
	cli.run("", "message", "send", "-p", "0", "--input-file", file, rb.stream, "native-copy")
	got := consumeKafka(t, gw.Addr, "native-copy", len(kcatOne))
	for i, r := range got {
		if g := recOfKgo(r); !sameKafka(g, kcatOne[i]) || g.TimeMs != kcatOne[i].TimeMs {
			t.Fatalf("native-copy record %d: %v (ts %d), want %v (ts %d)", i, g, g.TimeMs, kcatOne[i], kcatOne[i].TimeMs)
		}
	}
}

// TestNativeSendReadByKafka: a topic `iggy topic create` makes is in Kafka
// Metadata through the gateway; what `iggy message send` writes to it,
// with and without headers, reads through kcat and franz-go as MAPPING.md
// says a native producer's message does: the payload is the value, the key
// is null, every user header is a Kafka header (raw bytes of its value,
// whatever the kind, in stored order), the timestamp is the origin
// timestamp, offsets are the Iggy offsets. A message carrying kafka.v = 1
// is read by the gateway's rules: kafka.key is the key, kafka.h.* the
// headers, anything else ignored.
func TestNativeSendReadByKafka(t *testing.T) {
	kcat := needKcat(t)
	gw, rb := realGateway(t)
	cli := newIggyCLI(t, rb.addr)

	// The gateway makes its Kafka stream on the first CreateTopic; here the
	// CLI makes it unless something already did (`stream get` exits 0 and
	// says so when there is none).
	if strings.Contains(cli.run("", "stream", "get", rb.stream), "was not found") {
		cli.run("", "stream", "create", rb.stream)
	}
	cli.run("", "topic", "create", rb.stream, "native-3p", "3", "none")
	m := kcatList(t, kcat, gw.Addr, "-t", "native-3p")
	if len(m.Topics) != 1 || m.Topics[0].Err != "" || len(m.Topics[0].Partitions) != 3 {
		t.Fatalf("kcat -L -t native-3p = %+v, want 3 partitions", m.Topics)
	}

	// 0x0102030405060708: no NUL, comma or '=' in its bytes, so kcat's %h
	// prints it unambiguously.
	const i64 = 72623859790382856
	before := time.Now()
	cli.run("", "message", "send", "-p", "0", rb.stream, "native-3p", "plain one", "plain two")
	cli.run("line a\nline b ✓\n", "message", "send", "-p", "0", rb.stream, "native-3p")
	cli.run("", "message", "send", "-p", "1", "-H",
		"trace:raw:abc-123,n:int64:"+strconv.Itoa(i64)+",label:string:hello,kafka.key:raw:not-a-key",
		rb.stream, "native-3p", "with headers 1", "with headers 2")
	cli.run("", "message", "send", "-p", "2", "-H",
		"kafka.v:uint8:1,kafka.key:raw:user-7,kafka.h.trace:raw:xyz,other:string:ignored",
		rb.stream, "native-3p", "gateway-style")
	after := time.Now()

	// What the mapping promises, from what is stored (the CLI chooses the
	// header order).
	var want []kafkaRec
	for p := range int32(3) {
		for _, msg := range cli.poll(rb.stream, "native-3p", int(p), 10) {
			r := kafkaRec{Partition: p, Offset: int64(msg.Offset), Value: msg.Payload, TimeMs: int64(msg.Origin / 1000)}
			gatewayStyle := slices.ContainsFunc(msg.Headers, func(h nativeHeader) bool { return h.Key == "kafka.v" })
			for _, h := range msg.Headers {
				switch {
				case !gatewayStyle:
					r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				case h.Key == "kafka.key":
					r.Key = h.Value
				case strings.HasPrefix(h.Key, "kafka.h."):
					r.Headers = append(r.Headers, kgo.RecordHeader{Key: strings.TrimPrefix(h.Key, "kafka.h."), Value: h.Value})
				}
			}
			want = append(want, r)
		}
	}
	// The stored messages are the ones sent, at offsets 0.. per partition.
	type sentMsg struct {
		p       int32
		o       int64
		key     string
		value   string
		headers string
	}
	i64b := binary.LittleEndian.AppendUint64(nil, i64)
	wantSent := []sentMsg{
		{0, 0, "", "plain one", ""}, {0, 1, "", "plain two", ""}, {0, 2, "", "line a", ""}, {0, 3, "", "line b ✓", ""},
		{1, 0, "", "with headers 1", "kafka.key=not-a-key label=hello n=" + string(i64b) + " trace=abc-123"},
		{1, 1, "", "with headers 2", "kafka.key=not-a-key label=hello n=" + string(i64b) + " trace=abc-123"},
		{2, 0, "user-7", "gateway-style", "trace=xyz"},
	}
	if len(want) != len(wantSent) {
		t.Fatalf("native poll found %d messages, want %d: %v", len(want), len(wantSent), want)
	}
	for i, w := range wantSent {
		r := want[i]
		var hs []string
		for _, h := range r.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		sort.Strings(hs) // the CLI's header order is its own
		if r.Partition != w.p || r.Offset != w.o || string(r.Key) != w.key || string(r.Value) != w.value || strings.Join(hs, " ") != w.headers {
			t.Fatalf("native message %d: %v, want %+v", i, r, w)
		}
		if ts := time.UnixMilli(r.TimeMs); ts.Before(before.Add(-time.Second)) || ts.After(after.Add(time.Second)) {
			t.Errorf("native message %d: origin %v outside the send window %v..%v", i, ts, before, after)
		}
	}

	// kcat.
	lines := kcatConsumeAll(t, kcat, gw.Addr, "native-3p", true)
	if len(lines) != len(want) {
		t.Fatalf("kcat reads %d records of native-3p, want %d: %+v", len(lines), len(want), lines)
	}
	for i, l := range lines {
		w := want[i]
		wantKeyLen := -1
		if w.Key != nil {
			wantKeyLen = len(w.Key)
		}
		if l.Partition != w.Partition || l.Offset != w.Offset || l.KeyLen != wantKeyLen || l.Key != string(w.Key) ||
			l.Value != string(w.Value) || l.ValueLen != len(w.Value) || l.Headers != kcatHeaders(w.Headers) || l.TimeMs != w.TimeMs {
			t.Errorf("kcat record %d: %+v\nwant %v (ts %d, %%h %q)", i, l, w, w.TimeMs, kcatHeaders(w.Headers))
		}
	}
	// franz-go.
	for i, r := range consumeKafka(t, gw.Addr, "native-3p", len(want)) {
		if g := recOfKgo(r); !sameKafka(g, want[i]) || g.TimeMs != want[i].TimeMs {
			t.Errorf("franz-go record %d: %v (ts %d), want %v (ts %d)", i, g, g.TimeMs, want[i], want[i].TimeMs)
		}
	}

	// A native producer that sets kafka.v as a String "1" (byte 0x31, not
	// Uint8 1) wrote a message the mapping cannot read: a Kafka consumer
	// gets the records before it, then UNKNOWN_SERVER_ERROR at it, and the
	// gateway logs why (MAPPING.md "Unmappable messages", SCOPE.md Fetch).
	cli.run("", "topic", "create", rb.stream, "native-bad", "1", "none")
	cli.run("", "message", "send", "-p", "0", rb.stream, "native-bad", "good")
	cli.run("", "message", "send", "-p", "0", "-H", "kafka.v:string:1", rb.stream, "native-bad", "bad")
	cli.run("", "message", "send", "-p", "0", rb.stream, "native-bad", "later")
	bad := newClient(t, gw.Addr, kgo.ConsumeTopics("native-bad"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var values []string
	var fetchErr error
	for fetchErr == nil {
		fs := bad.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("native-bad: no fetch error within 30s; records %q", values)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
		for _, fe := range fs.Errors() {
			fetchErr = fe.Err
		}
	}
	if !errors.Is(fetchErr, kerr.UnknownServerError) || !slices.Equal(values, []string{"good"}) {
		t.Fatalf("native-bad: records %q then %v, want [good] then UNKNOWN_SERVER_ERROR", values, fetchErr)
	}
	if !strings.Contains(gw.Log.String(), "stored message cannot be mapped") {
		t.Errorf("the gateway did not log the unmappable message")
	}
}
