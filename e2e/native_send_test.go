package e2e

// Native interop on the real Iggy server, with Iggy's own CLI as the native
// client: what `iggy message send` writes (to a topic `iggy topic create`
// made) must read through the gateway with kcat and franz-go as
// docs/MAPPING.md promises for native producers.

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

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
	t.Parallel()
	kcat := needKcat(t)
	gw, rb, cli := realGateway(t)

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
	for i, r := range consume(t, gw.Addr, "native-3p", atLeast(len(want)), within(time.Minute), nothingMore()) {
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
