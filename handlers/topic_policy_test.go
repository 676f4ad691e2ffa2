package handlers

import (
	"context"
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
		{map[string]string{"cleanup.policy": "delete,compact"}, topicPolicy{compacted: true}},
	} {
		if got := policyOf(c.cfg); got != c.want {
			t.Errorf("%v: %+v want %+v", c.cfg, got, c.want)
		}
	}
}
