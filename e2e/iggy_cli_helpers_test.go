package e2e

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

// userSuffix is random hex that keeps the names of a test's Iggy users
// apart from other tests' on the shared server.
func userSuffix() string {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// createUser makes an Iggy user with the CLI's permission flags (perms,
// such as "-g", "read_topics,poll_messages") and deletes it when the test
// ends.
func (c *iggyCLI) createUser(user, pass string, perms ...string) {
	c.t.Helper()
	c.run("", append(append([]string{"user", "create"}, perms...), user, pass)...)
	c.t.Cleanup(func() { c.run("", "user", "delete", user) })
}

// rootGateway is a gateway binary on the test's own streams of the shared
// real server, logged in as root, with a franz-go client on it; cli is the
// iggy CLI on that server.
func rootGateway(t *testing.T) (rb realBackend, cli *iggyCLI, root *process, rootCl *kgo.Client) {
	t.Helper()
	realServerTest(t)
	rb = newRealBackend(t)
	cli = newIggyCLI(t, rb.addr)
	root = spawnGateway(t, t.TempDir(), rb.gatewayArgs()...)
	return rb, cli, root, newClient(t, root.Addr)
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

func u128String(id [16]byte) string {
	be := make([]byte, 16)
	for i := range id {
		be[15-i] = id[i]
	}
	return new(big.Int).SetBytes(be).String()
}
