package handlers

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
)

// createWith makes topic (one partition) through CreateTopics with the
// configs kv (name, value, ...).
func createWith(tb testing.TB, g *Gateway, topic string, kv ...string) {
	tb.Helper()
	r := do(tb, g, createReq(7, withConfig(ct(topic, 1, 1), kv...))).(*kmsg.CreateTopicsResponse)
	if r.Topics[0].ErrorCode != 0 {
		tb.Fatalf("create %s %v: code %d", topic, kv, r.Topics[0].ErrorCode)
	}
}

// latAndCreateTime is a gateway with two one-partition topics:
// prefix-lat (LogAppendTime) and prefix-ct (CreateTime).
func latAndCreateTime(tb testing.TB, prefix string) *Gateway {
	tb.Helper()
	g := newGateway(tb)
	createWith(tb, g, prefix+"-lat", "message.timestamp.type", "LogAppendTime")
	createWith(tb, g, prefix+"-ct")
	return g
}

// noKeyMsg is Kafka's record error for a keyless record of partition 0.
func noKeyMsg(topic string) string {
	return "Compacted topic cannot accept message without key in topic partition " + topic + "-0"
}

// A compacted topic (compact, or compact,delete) refuses a batch holding
// a record without a key, with a record error for each such record and
// Kafka's partition message, and stores nothing of it; keyed records and
// tombstones are stored, and a delete topic takes keyless records.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createWith(t, g, "cmp", "cleanup.policy", "compact")
	createWith(t, g, "cmp-both", "cleanup.policy", "compact,delete")
	createWith(t, g, "del", "cleanup.policy", "delete")

	mixed := batch(rec{value: []byte("a")}, rec{key: []byte("k"), value: []byte("b")},
		rec{value: []byte("c")}, rec{value: nil}, rec{value: []byte("e")})
	for _, topic := range []string{"cmp", "cmp-both"} {
		for _, b := range [][]byte{mixed, gzipped(t, mixed)} {
			p := produceOne(t, g, produceReq(11, topic, 0, b))
			if p.ErrorCode != kerr.InvalidRecord.Code || p.BaseOffset != -1 || p.LogAppendTime != -1 {
				t.Fatalf("%s: code %d base %d append time %d", topic, p.ErrorCode, p.BaseOffset, p.LogAppendTime)
			}
			var idx []int32
			for _, e := range p.ErrorRecords {
				idx = append(idx, e.RelativeOffset)
				if e.ErrorMessage == nil || *e.ErrorMessage != noKeyMsg(topic) {
					t.Errorf("%s record %d: %v", topic, e.RelativeOffset, e.ErrorMessage)
				}
			}
			if fmt.Sprint(idx) != "[0 2 3 4]" {
				t.Errorf("%s: record errors at %v, want [0 2 3 4]", topic, idx)
			}
			re := func(i int) string { return fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", i, noKeyMsg(topic)) }
			want := "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [" +
				re(0) + ", " + re(2) + ", " + re(3) + "]"
			if p.ErrorMessage == nil || *p.ErrorMessage != want {
				t.Errorf("%s: message %v\nwant %q", topic, p.ErrorMessage, want)
			}
		}
		if n := hwm(t, g, topic); n != 0 {
			t.Fatalf("%s: %d records stored of refused batches", topic, n)
		}
		// Before v8 there is no place for the message or record errors.
		if p := produceOne(t, g, produceReq(7, topic, 0, mixed)); p.ErrorCode != kerr.InvalidRecord.Code || p.ErrorMessage != nil || p.ErrorRecords != nil {
			t.Errorf("%s v7: %+v", topic, p)
		}
		keyed := batch(rec{key: []byte("k1"), value: []byte("v")}, rec{key: []byte("k1"), value: nil}, rec{key: []byte{}, value: []byte("empty key")})
		if p := produceOne(t, g, produceReq(11, topic, 0, keyed)); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Errorf("%s keyed records and a tombstone: code %d base %d", topic, p.ErrorCode, p.BaseOffset)
		}
	}
	if p := produceOne(t, g, produceReq(11, "del", 0, mixed)); p.ErrorCode != 0 {
		t.Errorf("delete topic: code %d", p.ErrorCode)
	}
}

// configReads counts the TopicConfigs calls of a store.
type configReads struct {
	bridge.Backend
	n atomic.Int64
}

func (s *configReads) TopicConfigs(ctx context.Context, stream, topic string) (bridge.TopicConfigs, error) {
	s.n.Add(1)
	return s.Backend.TopicConfigs(ctx, stream, topic)
}

// Produce reads a topic's configs once, not once per request.
func TestTopicPolicyCached(t *testing.T) {
	t.Parallel()
	st := &configReads{Backend: openEmbedded(t, t.TempDir())}
	g := newGatewayOn(t, st)
	createWith(t, g, "cached", "cleanup.policy", "compact")
	st.n.Store(0)
	start := time.Now()
	for i := 0; i < 50; i++ {
		if p := produceOne(t, g, produceReq(11, "cached", 0, batch(rec{key: []byte("k"), value: []byte("v")}))); p.ErrorCode != 0 {
			t.Fatalf("produce %d: code %d", i, p.ErrorCode)
		}
	}
	// One read, and one more per policyMaxAge the loop took.
	if n, most := st.n.Load(), 1+int64(time.Since(start)/policyMaxAge); n < 1 || n > most {
		t.Errorf("%d config reads for 50 Produce requests, want 1 to %d", n, most)
	}
}

// A config change made through this gateway applies to the next Produce;
// one made through another gateway on the same store within policyMaxAge;
// a topic made again under the name at once (another topic id).
func TestTopicPolicyFollowsChanges(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createWith(t, g, "chg", "cleanup.policy", "delete")
	keyless := batch(rec{value: []byte("v")})
	code := func(g *Gateway) int16 { return produceOne(t, g, produceReq(11, "chg", 0, keyless)).ErrorCode }
	if c := code(g); c != 0 {
		t.Fatalf("delete: code %d", c)
	}
	if r := incAlter(t, g, false, "chg", "cleanup.policy", kmsg.IncrementalAlterConfigOpSet, "compact"); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	if c := code(g); c != kerr.InvalidRecord.Code {
		t.Fatalf("after IncrementalAlterConfigs compact: code %d", c)
	}

	// Another gateway of the cluster changes it back.
	other := newGatewayOn(t, g.Store)
	if r := incAlter(t, other, false, "chg", "cleanup.policy", kmsg.IncrementalAlterConfigOpSet, "delete"); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	await.True(t, 10*time.Second, "the other gateway's change applied", func() bool { return code(g) == 0 })

	// Deleted and made again as a compacted topic by the other gateway.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 5
	del.TopicNames = []string{"chg"}
	if r := do(t, other, del).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatal(r.Topics[0].ErrorCode)
	}
	createWith(t, other, "chg", "cleanup.policy", "compact")
	if c := code(g); c != kerr.InvalidRecord.Code {
		t.Fatalf("made again compacted: code %d", c)
	}
}

// A LogAppendTime topic: the Produce answer carries the append time, Fetch
// gives LogAppendTime batches whose records all read as it (from the store
// and the tail cache alike), and ListOffsets searches by it. A change to
// CreateTime applies from the next batch; the batches before keep theirs.
func TestLogAppendTime(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(c *Config) { c.TailCacheBytes = 1 << 20 })
	createWith(t, g, "lat", "message.timestamp.type", "LogAppendTime")
	old := baseTs - 3_600_000 // the producer's timestamps, an hour before baseTs
	recs := []rec{{key: []byte("a"), value: []byte("1"), ts: old}, {value: []byte("2"), ts: old + 5}}
	before := time.Now().UnixMilli()
	p := produceOne(t, g, produceReq(11, "lat", 0, batch(recs...)))
	after := time.Now().UnixMilli()
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > after {
		t.Fatalf("produce: code %d append time %d, want within [%d, %d]", p.ErrorCode, p.LogAppendTime, before, after)
	}
	t1 := p.LogAppendTime
	// A compressed batch, on the oldest Produce version served.
	p = produceOne(t, g, produceReq(3, "lat", 0, gzipped(t, batch(recs...))))
	if p.ErrorCode != 0 || p.LogAppendTime < t1 {
		t.Fatalf("v3 gzip: code %d append time %d", p.ErrorCode, p.LogAppendTime)
	}
	t2 := p.LogAppendTime

	tail := g.tail
	hits := tail.Stats().Hits
	for _, cached := range []bool{true, false} {
		if !cached {
			g.tail = nil
		}
		got := fetchAll(t, g, "lat")
		if len(got) != 4 {
			t.Fatalf("%d records", len(got))
		}
		for i, r := range got {
			want := t1
			if i >= 2 {
				want = t2
			}
			if !r.logAppend || r.ts != want {
				t.Errorf("cached %v, record %d: LogAppendTime %v at %d, want %d", cached, i, r.logAppend, r.ts, want)
			}
		}
	}
	g.tail = tail
	if tail.Stats().Hits == hits {
		t.Error("the tail cache did not answer")
	}
	// ListOffsets: the producer's own timestamp is long before every
	// append time; the append times find their batches.
	for _, c := range []struct{ ts, want int64 }{{old + 1, 0}, {t1, 0}, {t2 + 1, -1}} {
		lo := do(t, g, listOffsetsReq(7, "lat", 0, c.ts)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if lo.ErrorCode != 0 || lo.Offset != c.want {
			t.Errorf("ListOffsets %d: offset %d code %d, want %d", c.ts, lo.Offset, lo.ErrorCode, c.want)
		}
	}
	if lo := do(t, g, listOffsetsReq(7, "lat", 0, t2)).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; lo.Offset > 2 || lo.Timestamp != t2 {
		t.Errorf("ListOffsets %d: offset %d timestamp %d", t2, lo.Offset, lo.Timestamp)
	}

	if r := incAlter(t, g, false, "lat", "message.timestamp.type", kmsg.IncrementalAlterConfigOpSet, "CreateTime"); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	if p := produceOne(t, g, produceReq(11, "lat", 0, batch(recs...))); p.ErrorCode != 0 || p.LogAppendTime != -1 {
		t.Fatalf("after CreateTime: code %d append time %d", p.ErrorCode, p.LogAppendTime)
	}
	got := fetchAll(t, g, "lat")
	if len(got) != 6 || got[1].ts != t1 || !got[1].logAppend || got[4].logAppend || got[4].ts != old || got[5].ts != old+5 {
		t.Errorf("after CreateTime: %+v", got)
	}
}

// A duplicate of a retained idempotent batch is answered with that batch's
// max timestamp as log_append_time, as Kafka answers it: the first append
// time in a LogAppendTime topic, the records' largest CreateTime in a
// CreateTime one.
func TestDuplicateAnsweredWithItsTimestamp(t *testing.T) {
	t.Parallel()
	g := latAndCreateTime(t, "dup")
	b := idemBatch(7, 0, 0, 3, "d")
	first := produceIdem(t, g, "dup-lat", b)
	if first.ErrorCode != 0 || first.LogAppendTime < 0 {
		t.Fatalf("first: %+v", first)
	}
	await.True(t, 5*time.Second, "the clock to pass the first append time", func() bool { return time.Now().UnixMilli() > first.LogAppendTime })
	if again := produceIdem(t, g, "dup-lat", b); again.ErrorCode != 0 || again.BaseOffset != 0 || again.LogAppendTime != first.LogAppendTime {
		t.Errorf("duplicate: %+v, want append time %d", again, first.LogAppendTime)
	}
	if p := produceIdem(t, g, "dup-ct", b); p.ErrorCode != 0 || p.LogAppendTime != -1 {
		t.Errorf("CreateTime first: %+v", p)
	}
	if p := produceIdem(t, g, "dup-ct", b); p.ErrorCode != 0 || p.LogAppendTime != baseTs {
		t.Errorf("CreateTime duplicate: %+v, want the batch's max timestamp %d", p, baseTs)
	}
	if n := hwm(t, g, "dup-lat"); n != 3 {
		t.Errorf("%d records stored", n)
	}
}

// A batch whose producer set the LogAppendTime bit: Kafka refuses it with
// INVALID_TIMESTAMP in a LogAppendTime topic, and in a CreateTime topic
// when its max timestamp is -1; otherwise a CreateTime topic makes it
// CreateTime, its records keeping their own timestamps.
func TestProducerLogAppendTimeBit(t *testing.T) {
	t.Parallel()
	g := latAndCreateTime(t, "pl")
	b := withAttrs(batch(rec{key: []byte("kk"), value: []byte("vvv"), ts: baseTs + 9}, rec{value: []byte("w")}), 0x08)
	p := produceOne(t, g, produceReq(11, "pl-lat", 0, b))
	rec0 := fmt.Sprintf("DefaultRecord(offset=0, timestamp=%d, key=2 bytes, value=3 bytes)", baseTs+9)
	if p.ErrorCode != kerr.InvalidTimestamp.Code || p.ErrorMessage == nil ||
		*p.ErrorMessage != "One or more records have been rejected due to invalid timestamp" || len(p.ErrorRecords) != 2 ||
		*p.ErrorRecords[0].ErrorMessage != "Invalid timestamp type in message "+rec0+". Producer should not set timestamp type to LogAppendTime." {
		t.Errorf("LogAppendTime topic: %+v %v", p, deref(p.ErrorMessage))
	}
	noMax := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(noMax[35:], ^uint64(0)) // max timestamp -1
	noMax = rebatch(noMax, attrs(noMax), noMax[hRecords:])
	if p := produceOne(t, g, produceReq(11, "pl-ct", 0, noMax)); p.ErrorCode != kerr.InvalidTimestamp.Code {
		t.Errorf("CreateTime topic, max timestamp -1: code %d", p.ErrorCode)
	}
	if p := produceOne(t, g, produceReq(11, "pl-ct", 0, b)); p.ErrorCode != 0 || p.LogAppendTime != -1 {
		t.Fatalf("CreateTime topic: %+v", p)
	}
	got := fetchAll(t, g, "pl-ct")
	if len(got) != 2 || got[0].logAppend || got[0].ts != baseTs+9 || got[1].ts != baseTs {
		t.Errorf("stored as %+v", got)
	}
	if hwm(t, g, "pl-lat") != 0 {
		t.Error("refused batch stored")
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// policyOf reads the configs as the handlers store them.
func TestPolicyOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  map[string]string
		want topicPolicy
	}{
		{nil, topicPolicy{}},
		{map[string]string{"cleanup.policy": "delete"}, topicPolicy{}},
		{map[string]string{"cleanup.policy": "compact"}, topicPolicy{compacted: true}},
		{map[string]string{"cleanup.policy": "delete,compact", "message.timestamp.type": "LogAppendTime"}, topicPolicy{compacted: true, logAppendTime: true}},
		{map[string]string{"message.timestamp.type": "CreateTime"}, topicPolicy{}},
	} {
		if got := policyOf(c.cfg); got != c.want {
			t.Errorf("%v: %+v want %+v", c.cfg, got, c.want)
		}
	}
}
