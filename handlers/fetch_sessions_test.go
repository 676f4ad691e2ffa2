package handlers

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessFetch asks partitions 0..n-1 of topic from offsets offs as session
// id at epoch.
func sessFetch(topic string, offs []int64, id, epoch int32) *kmsg.FetchRequest {
	req := fetchReq(12, topic, 0, offs[0])
	for p := 1; p < len(offs); p++ {
		rp := req.Topics[0].Partitions[0]
		rp.Partition, rp.FetchOffset = int32(p), offs[p]
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	req.SessionID, req.SessionEpoch = id, epoch
	return req
}

// parts lists "topic/partition" of a reply, in order.
func replyParts(resp *kmsg.FetchResponse) []PartitionKey {
	var out []PartitionKey
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, PartitionKey{t.Topic, p.Partition})
		}
	}
	return out
}

func TestFetchSessionLifecycle(t *testing.T) {
	g := newGateway(t)
	createTopic(t, g, "s", 3)
	produceOne(t, g, produceReq(9, "s", 0, valueBatch(2)))
	produceOne(t, g, produceReq(9, "s", 1, valueBatch(1)))

	// Full request, epoch 0: a session is made; every partition answered.
	resp := do(t, g, sessFetch("s", []int64{0, 0, 0}, 0, 0)).(*kmsg.FetchResponse)
	id := resp.SessionID
	if id == 0 || resp.ErrorCode != 0 || len(replyParts(resp)) != 3 {
		t.Fatalf("full: id %d err %d parts %v", id, resp.ErrorCode, replyParts(resp))
	}
	if st := g.FetchSessionStats(); st.Open != 1 || st.Created != 1 || st.Partitions != 3 {
		t.Fatalf("stats %+v", st)
	}

	// Incremental, epoch 1, naming the two partitions whose offsets moved:
	// nothing changed anywhere, so the reply is empty.
	inc := sessFetch("s", []int64{2, 1}, id, 1)
	resp = do(t, g, inc).(*kmsg.FetchResponse)
	if resp.SessionID != id || resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("idle incremental: id %d err %d parts %v", resp.SessionID, resp.ErrorCode, replyParts(resp))
	}

	// New data on partition 2 only (not named in the request): it alone
	// is answered, with its record.
	produceOne(t, g, produceReq(9, "s", 2, valueBatch(1)))
	inc = sessFetch("s", []int64{2}, id, 2)
	inc.Topics[0].Partitions = inc.Topics[0].Partitions[:0]
	resp = do(t, g, inc).(*kmsg.FetchResponse)
	got := replyParts(resp)
	if len(got) != 1 || got[0] != (PartitionKey{"s", 2}) {
		t.Fatalf("changed partition: %v", got)
	}
	if recs := readRecords(t, resp.Topics[0].Partitions[0].RecordBatches); len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	// The same epoch again is refused; so is a skipped one and an unknown id.
	if resp = do(t, g, sessFetch("s", []int64{2}, id, 2)).(*kmsg.FetchResponse); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("replayed epoch: %d", resp.ErrorCode)
	}
	if resp = do(t, g, sessFetch("s", []int64{2}, id, 9)).(*kmsg.FetchResponse); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("skipped epoch: %d", resp.ErrorCode)
	}
	if resp = do(t, g, sessFetch("s", []int64{2}, id+1, 3)).(*kmsg.FetchResponse); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown id: %d", resp.ErrorCode)
	}

	// Forget partitions 0 and 1 and move partition 2 to its HWM: new data
	// on 0 is then not sent, and partition 2 stays quiet.
	inc = sessFetch("s", []int64{1}, id, 3)
	inc.Topics[0].Partitions[0].Partition = 2
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.Partitions = "s", []int32{0, 1}
	inc.ForgottenTopics = append(inc.ForgottenTopics, ft)
	produceOne(t, g, produceReq(9, "s", 0, valueBatch(1)))
	resp = do(t, g, inc).(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("after forget: err %d parts %v", resp.ErrorCode, replyParts(resp))
	}
	// Re-adding partition 0 sends it (its HWM was never sent in this
	// session since it was forgotten).
	resp = do(t, g, sessFetch("s", []int64{2}, id, 4)).(*kmsg.FetchResponse)
	if got := replyParts(resp); len(got) != 1 || got[0] != (PartitionKey{"s", 0}) || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("re-added: %v", got)
	}

	// An error is always answered: partition 7 does not exist.
	bad := sessFetch("s", []int64{3, 0}, id, 5) // partition 0 at its HWM
	bad.Topics[0].Partitions[1].Partition = 7
	resp = do(t, g, bad).(*kmsg.FetchResponse)
	if got := replyParts(resp); len(got) != 1 || got[0].Partition != 7 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("error partition: %v", got)
	}
	empty := sessFetch("s", []int64{0}, id, 6)
	empty.Topics = nil
	if resp = do(t, g, empty).(*kmsg.FetchResponse); len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Partition != 7 {
		t.Fatalf("error again: %v", replyParts(resp))
	}

	// Epoch -1 closes the session and is answered sessionless with the
	// request's partitions.
	resp = do(t, g, sessFetch("s", []int64{0}, id, -1)).(*kmsg.FetchResponse)
	if resp.SessionID != 0 || resp.ErrorCode != 0 || len(replyParts(resp)) != 1 {
		t.Fatalf("close: %+v", resp)
	}
	if resp = do(t, g, sessFetch("s", []int64{0}, id, 7)).(*kmsg.FetchResponse); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session still served: %d", resp.ErrorCode)
	}
	if st := g.FetchSessionStats(); st.Open != 0 || st.Incremental != 6 || st.Partitions != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A partition with records moves to the back of the session, so with a
// budget for one partition the next fetch reads the other one first.
// TestFetchSessionTopicIDsChange: a session made by a request naming
// topics by name (v12) is not continued by one naming them by id (v13+),
// nor the other way round: FETCH_SESSION_TOPIC_ID_ERROR, as Kafka answers.
// The Java consumer makes that switch when its
// metadata learns the topic ids (after a gateway restart): answered from
// the old session it found none of its partitions in the replies and
// fetched again at once, forever.
func TestFetchSessionTopicIDsChange(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "ids", 1)
	produceOne(t, g, produceReq(9, "ids", 0, valueBatch(2)))
	resp := do(t, g, sessFetch("ids", []int64{0}, 0, 0)).(*kmsg.FetchResponse)
	if resp.SessionID == 0 || resp.ErrorCode != 0 {
		t.Fatalf("full v12: id %d err %d", resp.SessionID, resp.ErrorCode)
	}
	inc := sessFetch("ids", []int64{2}, resp.SessionID, 1)
	inc.Version = 13
	ti, err := g.Store.Topic(context.Background(), g.Cfg.Stream, "ids")
	if err != nil {
		t.Fatal(err)
	}
	inc.Topics[0].TopicID = g.topicNames.idOf(ti)
	if r := do(t, g, inc).(*kmsg.FetchResponse); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("incremental v13 on a v12 session: err %d, want FETCH_SESSION_TOPIC_ID_ERROR", r.ErrorCode)
	}
	// The client starts over with a full request at v13.
	full := sessFetch("ids", []int64{0}, resp.SessionID, 0)
	full.Version, full.Topics[0].TopicID = 13, inc.Topics[0].TopicID
	if r := do(t, g, full).(*kmsg.FetchResponse); r.ErrorCode != 0 || r.SessionID == 0 || len(replyParts(r)) != 1 {
		t.Fatalf("full v13 after it: id %d err %d parts %v", r.SessionID, r.ErrorCode, replyParts(r))
	}
}

func TestFetchSessionRoundRobin(t *testing.T) {
	g := newGateway(t)
	createTopic(t, g, "r", 2)
	produceOne(t, g, produceReq(9, "r", 0, valueBatch(1)))
	produceOne(t, g, produceReq(9, "r", 1, valueBatch(1)))
	full := sessFetch("r", []int64{0, 0}, 0, 0)
	full.MaxBytes = 1 // KIP-74: the first partition with data alone
	resp := do(t, g, full).(*kmsg.FetchResponse)
	if len(resp.Topics[0].Partitions[0].RecordBatches) == 0 || len(resp.Topics[0].Partitions[1].RecordBatches) != 0 {
		t.Fatal("full: want data from partition 0 only")
	}
	inc := sessFetch("r", []int64{1}, resp.SessionID, 1)
	inc.MaxBytes = 1
	resp = do(t, g, inc).(*kmsg.FetchResponse)
	got := replyParts(resp)
	// Partition 0 is at its HWM (not sent); partition 1 gets the budget.
	if len(got) != 1 || got[0] != (PartitionKey{"r", 1}) || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("second: %v", got)
	}
}

// A parked incremental fetch re-run by the loop reads the session's
// partitions without advancing the epoch again.
func TestFetchSessionParked(t *testing.T) {
	g := newGateway(t)
	createTopic(t, g, "w", 2)
	resp := do(t, g, sessFetch("w", []int64{0, 0}, 0, 0)).(*kmsg.FetchResponse)
	id := resp.SessionID
	inc := sessFetch("w", []int64{0}, id, 1)
	inc.Topics = nil
	inc.MinBytes, inc.MaxWaitMillis = 1, 60_000
	c := newCall(g, 1, 12)
	if r, err := run(t, c, inc); r != nil || err != nil {
		t.Fatalf("no data: %v %v", r, err)
	}
	w := c.Parked()
	if w == nil || len(w.Keys) != 2 {
		t.Fatalf("wait %+v: an incremental fetch parks on the session's partitions", w)
	}
	produceOne(t, g, produceReq(9, "w", 1, valueBatch(1)))
	r, err := run(t, c, inc)
	if err != nil || r == nil {
		t.Fatalf("woken: %v %v", r, err)
	}
	defer c.RunDeferred()
	resp = r.(*kmsg.FetchResponse)
	if got := replyParts(resp); resp.SessionID != id || len(got) != 1 || got[0] != (PartitionKey{"w", 1}) {
		t.Fatalf("woken reply: id %d %v", resp.SessionID, got)
	}
	// The epoch moved once: 2 is next.
	next := sessFetch("w", []int64{1}, id, 2)
	next.Topics[0].Partitions[0].Partition = 1
	if resp = do(t, g, next).(*kmsg.FetchResponse); resp.ErrorCode != 0 {
		t.Fatalf("epoch 2: %d", resp.ErrorCode)
	}
}

// Eviction follows Kafka: a full cache refuses a new session (sessionless
// reply) unless a session was idle for the eviction age, or one older than
// it is smaller than the new one.
func TestFetchSessionEviction(t *testing.T) {
	g := newGateway(t, func(c *Config) { c.FetchSessionSlots = 2 })
	now := time.Unix(1_000_000, 0)
	g.fetchSessions.now = func() time.Time { return now }
	createTopic(t, g, "e", 4)
	open := func(n int) int32 {
		return do(t, g, sessFetch("e", make([]int64, n), 0, 0)).(*kmsg.FetchResponse).SessionID
	}
	a, b := open(1), open(2)
	if a == 0 || b == 0 {
		t.Fatal("free slots refused")
	}
	if open(4) != 0 {
		t.Fatal("young sessions evicted")
	}
	if st := g.FetchSessionStats(); st.Refused != 1 || st.Open != 2 {
		t.Fatalf("stats %+v", st)
	}
	// Past the eviction age, b is used again: a is both the idle one and
	// the smallest. A new session of 1 partition takes a's slot because a
	// was idle that long.
	now = now.Add(fetchSessionEvictAge + time.Second)
	if r := do(t, g, sessFetch("e", []int64{0}, b, 1)).(*kmsg.FetchResponse); r.ErrorCode != 0 {
		t.Fatalf("touch b: %d", r.ErrorCode)
	}
	c := open(1)
	if c == 0 {
		t.Fatal("idle session not evicted")
	}
	if r := do(t, g, sessFetch("e", []int64{0}, a, 1)).(*kmsg.FetchResponse); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("evicted session served: %d", r.ErrorCode)
	}
	// Now b (2 partitions, old, busy) and c (1, young): a 3-partition
	// session evicts b, the only one old enough, since it is bigger; a
	// 1-partition one would not.
	now = now.Add(time.Second)
	if r := do(t, g, sessFetch("e", []int64{0}, b, 2)).(*kmsg.FetchResponse); r.ErrorCode != 0 {
		t.Fatalf("touch b: %d", r.ErrorCode)
	}
	if open(2) != 0 {
		t.Fatal("a session evicted one of its own size")
	}
	if open(3) == 0 {
		t.Fatal("bigger session refused")
	}
	if st := g.FetchSessionStats(); st.Evicted != 2 || st.Open != 2 || st.Partitions != 1+3 {
		t.Fatalf("stats %+v", st)
	}
}

// With sessions off every reply is sessionless.
func TestFetchSessionsOff(t *testing.T) {
	g := newGateway(t, func(c *Config) { c.FetchSessionSlots = -1 })
	createTopic(t, g, "o", 1)
	if r := do(t, g, sessFetch("o", []int64{0}, 0, 0)).(*kmsg.FetchResponse); r.SessionID != 0 || r.ErrorCode != 0 {
		t.Fatalf("off: %+v", r)
	}
}

// A session that would grow past maxSessionPartitions is closed (the
// client starts over with a full request, which then runs sessionless),
// and its partitions leave the cache's count.
func TestFetchSessionPartitionCap(t *testing.T) {
	fs := newFetchSessions(0)
	full := kmsg.NewPtrFetchRequest()
	full.Version, full.SessionEpoch = 12, 0
	tp := kmsg.NewFetchRequestTopic()
	tp.Topic = "cap"
	for p := range int32(maxSessionPartitions) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		tp.Partitions = append(tp.Partitions, rp)
	}
	full.Topics = append(full.Topics, tp)
	resp := full.ResponseKind().(*kmsg.FetchResponse)
	fs.finish(fs.planFetch(full), resp)
	if resp.SessionID == 0 || fs.parts != maxSessionPartitions {
		t.Fatalf("session of the cap refused: id %d, %d partitions", resp.SessionID, fs.parts)
	}
	inc := sessFetch("cap", []int64{0}, resp.SessionID, 1)
	inc.Topics[0].Partitions[0].Partition = maxSessionPartitions
	if p := fs.planFetch(inc); p.errCode != kerr.FetchSessionIDNotFound.Code || fs.parts != 0 || len(fs.byID) != 0 {
		t.Fatalf("grown past the cap: code %d, %d partitions, %d sessions", p.errCode, fs.parts, len(fs.byID))
	}
	// One more than the cap in a full request: sessionless.
	more := kmsg.NewFetchRequestTopicPartition()
	more.Partition = maxSessionPartitions
	full.Topics[0].Partitions = append(full.Topics[0].Partitions, more)
	resp = full.ResponseKind().(*kmsg.FetchResponse)
	fs.finish(fs.planFetch(full), resp)
	if resp.SessionID != 0 {
		t.Fatal("a full request over the cap got a session")
	}
}

// Many consumers at once on a cache smaller than they are: sessions are
// made, refused, used and closed from several goroutines (run with -race),
// and every answer is a valid one.
func TestFetchSessionsConcurrent(t *testing.T) {
	g := newGateway(t, func(c *Config) { c.FetchSessionSlots = 3 })
	createTopic(t, g, "c", 4)
	produceOne(t, g, produceReq(9, "c", 0, valueBatch(2)))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				resp := do(t, g, sessFetch("c", []int64{0, 0, 0, 0}[:1+w%4], 0, 0)).(*kmsg.FetchResponse)
				id := resp.SessionID
				if id == 0 {
					continue // refused: the cache is full
				}
				for e := int32(1); e <= 3; e++ {
					r := do(t, g, sessFetch("c", []int64{2}, id, e)).(*kmsg.FetchResponse)
					if r.ErrorCode != 0 && r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
						t.Errorf("session %d epoch %d: %d", id, e, r.ErrorCode)
						return
					}
				}
				do(t, g, sessFetch("c", []int64{2}, id, -1))
			}
		}()
	}
	wg.Wait()
	if st := g.FetchSessionStats(); st.Open != 0 || st.Partitions != 0 || st.Created == 0 {
		t.Fatalf("after every session closed: %+v", st)
	}
}
