package iggy

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// BenchmarkServerFeedReal measures what a real iggy-server spends (its
// CPU seconds from /proc, read after it has been idle long enough to
// finish saving in the background) per message sent to it, for messages
// in the form iggy-bench sends (id 0, no user headers) and in the forms
// the gateway's mapping writes (a derived id, the kafka.v header), and
// with the gateway's other per-request calls. Each case gets a fresh
// server of its own, one partition, one connection sending in lockstep,
// one batch per iteration: run with a fixed count, e.g.
//
//	go test -run '^$' -bench ServerFeedReal -benchtime 330x ./bridge/iggy/
//
// IGGY_KAFKA_FEED_CASES (comma-separated case names) picks cases. Reported:
// server-µs/msg (user + system), user-µs/msg and sys-µs/msg.
func BenchmarkServerFeedReal(b *testing.B) {
	only := map[string]bool{}
	for _, c := range strings.Split(os.Getenv("IGGY_KAFKA_FEED_CASES"), ",") {
		if c != "" {
			only[c] = true
		}
	}
	for _, sh := range []struct{ count, size int }{{9090, 100}, {967, 1024}} {
		for _, fc := range feedCases {
			if len(only) > 0 && !only[fc.name] {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", shapeName(sh.count, sh.size), fc.name), func(b *testing.B) {
				runFeedCase(b, fc, sh.count, sh.size)
			})
		}
	}
}

// feedCase is one form of the same messages.
type feedCase struct {
	name     string
	ids      bool // gateway-derived ids instead of 0
	header   bool // the kafka.v header on every message
	getTopic bool // a GetTopic before every send, as the Produce path's topic lookup
	per      int  // messages per send instead of the shape's (0: the shape's)
	extra    int  // payload bytes added to the shape's size
}

var feedCases = []feedCase{
	{name: "bare"},
	{name: "ids", ids: true},
	{name: "header", header: true},
	{name: "gateway", ids: true, header: true},
	{name: "gateway+gettopic", ids: true, header: true, getTopic: true},
	{name: "bare+18B", extra: 18}, // the gateway's bytes per message without its header
}

// feedServer starts a fresh server of b's own with topic feed/t of one
// partition, and a Store on it (closed when b ends).
func feedServer(b *testing.B) (*iggyreal.Server, *Store) {
	srv := iggyreal.StartPrivate(b)
	opts := testOptions(srv.Addr())
	opts.CallTimeout = 30 * time.Second
	st, err := Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.CreateTopic(context.Background(), "feed", "t", 1); err != nil {
		b.Fatal(err)
	}
	return srv, st
}

func runFeedCase(b *testing.B, fc feedCase, count, size int) {
	srv, st := feedServer(b)
	ctx := context.Background()
	if fc.per > 0 {
		count = fc.per
	}
	batch := feedBatch(b, fc, count, size+fc.extra)
	time.Sleep(2 * time.Second) // the server settles after start-up and the create
	pid := srv.PID()
	u0, s0 := procTicks(b, pid)
	n := 0
	for b.Loop() {
		if fc.getTopic {
			if _, err := st.Topic(ctx, "feed", "t"); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := st.Append(ctx, "feed", "t", 0, batch); err != nil {
			b.Fatal(err)
		}
		n += count
	}
	b.StopTimer()
	time.Sleep(6 * time.Second) // background saving counts
	u1, s1 := procTicks(b, pid)
	const tick = 1e6 / 100 // µs per clock tick (USER_HZ 100)
	msgs := float64(n)
	b.ReportMetric(float64(u1-u0+s1-s0)*tick/msgs, "server-µs/msg")
	b.ReportMetric(float64(u1-u0)*tick/msgs, "user-µs/msg")
	b.ReportMetric(float64(s1-s0)*tick/msgs, "sys-µs/msg")
	b.ReportMetric(float64(len(batch))/float64(count), "B/msg")
}

// feedBatch is count messages of size bytes in fc's form.
func feedBatch(b *testing.B, fc feedCase, count, size int) []byte {
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	var hdr []byte
	if fc.header {
		var err error
		if hdr, err = bridge.AppendUserHeader(nil, bridge.KindString, []byte("kafka.v"), bridge.KindUint8, []byte{1}); err != nil {
			b.Fatal(err)
		}
	}
	origin := uint64(time.Now().UnixMicro())
	return buildBatch(b, origin, count, func(i int) testMsg {
		var id [16]byte
		if fc.ids {
			binary.LittleEndian.PutUint32(id[0:], uint32(i))
			binary.LittleEndian.PutUint64(id[6:], 12345)
			id[14] = 2
			if i == 0 {
				id[14] |= 0x80
			}
			id[15] = 'K'
		}
		return testMsg{id: id, ts: origin, payload: payload, headers: hdr}
	})
}

// procTicks is pid's user and system CPU time in clock ticks.
func procTicks(b *testing.B, pid int) (user, sys int64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// Fields 14 and 15 of stat(5), counted from the state (field 3).
	user, _ = strconv.ParseInt(f[11], 10, 64)
	sys, _ = strconv.ParseInt(f[12], 10, 64)
	return user, sys
}

// BenchmarkServerGetTopicReal is what one GetTopic (Store.Topic, the
// lookup the Produce and Fetch paths make per request) costs a real
// iggy-server, on a fresh server whose topic holds data: its CPU per call.
func BenchmarkServerGetTopicReal(b *testing.B) {
	srv, st := feedServer(b)
	ctx := context.Background()
	batch := feedBatch(b, feedCase{}, 9090, 100)
	for range 20 {
		if _, err := st.Append(ctx, "feed", "t", 0, batch); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(6 * time.Second)
	pid := srv.PID()
	u0, s0 := procTicks(b, pid)
	calls := 0
	for b.Loop() {
		if _, err := st.Topic(ctx, "feed", "t"); err != nil {
			b.Fatal(err)
		}
		calls++
	}
	b.StopTimer()
	time.Sleep(2 * time.Second)
	u1, s1 := procTicks(b, pid)
	const tick = 1e6 / 100
	b.ReportMetric(float64(u1-u0+s1-s0)*tick/float64(calls), "server-µs/call")
	b.ReportMetric(float64(u1-u0)*tick/float64(calls), "user-µs/call")
}
