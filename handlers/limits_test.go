package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A partition named many times in one Produce is answered once with
// INVALID_REQUEST and nothing of it is stored; the request's other
// partitions are served.
func TestProduceRepeatedPartition(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 5, 40, 5000} { // pairwise path and map path
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			g := newGateway(t)
			createTopic(t, g, "rep", 2)
			req := produceReq(9, "rep", 0, batch(rec{value: []byte("x")}))
			for i := 1; i < n; i++ {
				req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0])
			}
			// Partition 1 once, in a second entry of the same topic.
			other := produceReq(9, "rep", 1, batch(rec{value: []byte("y")}))
			req.Topics = append(req.Topics, other.Topics[0])
			resp := do(t, g, req).(*kmsg.ProduceResponse)
			var answers []kmsg.ProduceResponseTopicPartition
			for _, rt := range resp.Topics {
				answers = append(answers, rt.Partitions...)
			}
			if len(answers) != 2 {
				t.Fatalf("%d partition answers, want one per distinct partition (2)", len(answers))
			}
			if a := answers[0]; a.Partition != 0 || a.ErrorCode != kerr.InvalidRequest.Code || a.ErrorMessage == nil {
				t.Fatalf("repeated partition answered %+v", a)
			}
			if a := answers[1]; a.Partition != 1 || a.ErrorCode != 0 || a.BaseOffset != 0 {
				t.Fatalf("single partition answered %+v", a)
			}
			for p, want := range map[int32]uint64{0: 0, 1: 1} {
				st, err := g.Store.Partition(context.Background(), "kafka", "rep", p)
				if err != nil || st.Next != want {
					t.Fatalf("partition %d holds %d records (%v), want %d", p, st.Next, err, want)
				}
			}
		})
	}
	// acks=0: a refused partition closes the connection (a Go error).
	g := newGateway(t)
	createTopic(t, g, "rep0", 1)
	req := produceReq(9, "rep0", 0, batch(rec{value: []byte("x")}))
	req.Acks = 0
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0])
	if _, err := run(t, newCall(g, 0, 9), req); err == nil {
		t.Fatal("acks=0 with a repeated partition did not fail")
	}
}

// Distinct partitions, in one topic entry or several, are never mistaken
// for repeats (the pairwise check and the map agree).
func TestRepeatedPartitionsCheck(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	mk := func(entries ...string) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		for _, e := range entries {
			var topic string
			var p int32
			fmt.Sscanf(e, "%1s%d", &topic, &p)
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	cases := []struct {
		entries []string
		repeat  bool
	}{
		{[]string{"a0"}, false},
		{[]string{"a0", "a1", "b0", "b1"}, false},
		{[]string{"a0", "b0", "a0"}, true},
		{[]string{"a1", "a1"}, true},
	}
	for _, c := range cases {
		if got := repeatedPartitions(mk(c.entries...)) != nil; got != c.repeat {
			t.Errorf("%v: repeat %v, want %v", c.entries, got, c.repeat)
		}
	}
	var many []string
	for i := 0; i < 100; i++ {
		many = append(many, fmt.Sprintf("a%d", i))
	}
	if repeatedPartitions(mk(many...)) != nil {
		t.Error("100 distinct partitions reported as repeats")
	}
	if repeatedPartitions(mk(append(many, "a57")...)) == nil {
		t.Error("a repeat among 101 entries missed")
	}
	// The normal case allocates nothing.
	small := mk("a0", "a1", "a2", "b0")
	if n := testing.AllocsPerRun(100, func() { _ = repeatedPartitions(small) }); n != 0 {
		t.Errorf("%v allocations for a request without repeats", n)
	}
}

// coll.a and coll_a collide (Kafka equates '.' and '_'): CreateTopics,
// validate_only, Metadata auto-creation and Produce auto-creation all
// refuse the second with INVALID_TOPIC_EXCEPTION; the same name again is
// still TOPIC_ALREADY_EXISTS, and names without '.' or '_' never collide.
func TestTopicNameCollision(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	resp := do(t, g, createReq(7, ct("coll.a", 1, 1))).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("coll.a: %d", resp.Topics[0].ErrorCode)
	}
	for _, validate := range []bool{false, true} {
		req := createReq(7, ct("coll_a", 1, 1))
		req.ValidateOnly = validate
		resp = do(t, g, req).(*kmsg.CreateTopicsResponse)
		r := resp.Topics[0]
		if r.ErrorCode != kerr.InvalidTopicException.Code || r.ErrorMessage == nil ||
			!strings.Contains(*r.ErrorMessage, "collides with existing topic: coll.a") {
			t.Fatalf("validate_only=%v coll_a: code %d msg %v", validate, r.ErrorCode, r.ErrorMessage)
		}
	}
	resp = do(t, g, createReq(7, ct("coll.a", 1, 1))).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("coll.a again: %d", resp.Topics[0].ErrorCode)
	}
	md := do(t, g, metadataReq(9, "coll_a", "coll.a")).(*kmsg.MetadataResponse)
	if md.Topics[0].ErrorCode != kerr.InvalidTopicException.Code || md.Topics[1].ErrorCode != 0 {
		t.Fatalf("metadata auto-create: coll_a %d, coll.a %d", md.Topics[0].ErrorCode, md.Topics[1].ErrorCode)
	}
	if p := produceOne(t, g, produceReq(9, "coll_a", 0, batch(rec{value: []byte("x")}))); p.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("produce auto-create coll_a: %d", p.ErrorCode)
	}
	if topicExists(g, "coll_a") {
		t.Fatal("coll_a was created")
	}
	// Both creations in one request: the second collides with the first.
	resp = do(t, g, createReq(7, ct("x.y", 1, 1), ct("x_y", 1, 1))).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("x.y, x_y in one request: %d, %d", resp.Topics[0].ErrorCode, resp.Topics[1].ErrorCode)
	}
	if resp := do(t, g, createReq(7, ct("colla", 1, 1))).(*kmsg.CreateTopicsResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("colla: %d", resp.Topics[0].ErrorCode)
	}
}

// One Metadata naming 2,000 unknown topics auto-creates at most the
// per-request cap and answers the rest LEADER_NOT_AVAILABLE (retriable);
// the gateway-wide rate then paces later requests, and known topics are
// answered whatever the limits.
func TestAutoCreateCap(t *testing.T) {
	// Not parallel: it runs a real-time rate of 5 a second, whose bucket a stall would refill.
	const perReq, perSec = 20, 5
	g := newGateway(t, func(c *Config) { c.AutoCreatePerRequest, c.AutoCreatePerSec = perReq, perSec })
	createTopic(t, g, "known", 1)
	names := []string{"known"}
	for i := 0; i < 2000; i++ {
		names = append(names, fmt.Sprintf("auto-%d", i))
	}
	md := do(t, g, metadataReq(9, names...)).(*kmsg.MetadataResponse)
	created, limited := 0, 0
	for _, mt := range md.Topics {
		switch mt.ErrorCode {
		case 0:
			created++
		case kerr.LeaderNotAvailable.Code:
			limited++
		default:
			t.Fatalf("%s: code %d", *mt.Topic, mt.ErrorCode)
		}
	}
	if created != perReq+1 || limited != 2000-perReq {
		t.Fatalf("created %d (want %d + known), limited %d", created-1, perReq, limited)
	}
	ts, err := g.Store.Topics(context.Background(), "kafka")
	if err != nil || len(ts) != perReq+1 {
		t.Fatalf("%d topics in the store (%v), want %d", len(ts), err, perReq+1)
	}
	// The bucket is empty now: a Produce to a new topic is limited too.
	if p := produceOne(t, g, produceReq(9, "auto-late", 0, batch(rec{value: []byte("x")}))); p.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("produce auto-create over the rate: %d", p.ErrorCode)
	}
	// After a while the rate lets more through: two refills of the bucket
	// must pass on the real clock.
	time.Sleep(time.Second / perSec * 2)
	if p := produceOne(t, g, produceReq(9, "auto-late", 0, batch(rec{value: []byte("x")}))); p.ErrorCode != 0 {
		t.Fatalf("produce auto-create after the refill: %d", p.ErrorCode)
	}
	var b tokenBucket
	now := time.Now()
	for i := 0; i < 8; i++ {
		if !b.take(now, 2, 8) {
			t.Fatalf("burst token %d refused", i)
		}
	}
	if b.take(now, 2, 8) || !b.take(now.Add(500*time.Millisecond), 2, 8) || b.take(now.Add(500*time.Millisecond), 2, 8) {
		t.Fatal("bucket does not refill at its rate")
	}
}
