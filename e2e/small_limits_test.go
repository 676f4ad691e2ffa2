package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// One Produce naming the same partition 5,000 times is answered at once,
// with one INVALID_REQUEST answer for the partition, and stores nothing
// (it used to do 5,000 synced writes); the partition then takes records as
// usual.
func TestRepeatedPartitionProduce(t *testing.T) {
	// Serial: times the answer (within 2 s).
	gw := startGateway(t)
	w := dialWire(t, gw.Addr)
	if r := w.roundTrip(createTopicsReq("rep"), 4, 1).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %d", r.Topics[0].ErrorCode)
	}
	req := produceReq("rep", recordBatch(-1, 0, "v"))
	for i := 1; i < 5000; i++ {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0])
	}
	start := time.Now()
	resp := w.roundTrip(req, 9, 2).(*kmsg.ProduceResponse)
	took := time.Since(start)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer has %d topics / %v; want one partition answer", len(resp.Topics), resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("repeated partition: code %d, want INVALID_REQUEST", p.ErrorCode)
	}
	if took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	st, err := gw.Store.Partition(context.Background(), gw.Stream, "rep", 0)
	if err != nil || st.Next != 0 {
		t.Fatalf("partition holds %d records (%v), want 0", st.Next, err)
	}
	cl := newClient(t, gw.Addr)
	want := produceAll(t, cl, testRecords("rep", 3))
	sameRecs(t, want, consumeN(t, gw.Addr, "rep", 3, within(20*time.Second)))
}

// coll.a and coll_a collide once '.' and '_' are equated: a franz-go
// CreateTopics of the second is INVALID_TOPIC_EXCEPTION naming the first,
// and a franz-go producer cannot auto-create it either.
func TestTopicNameCollision(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "coll.a", 1)

	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "coll_a", 1, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Topics[0]
	if r.ErrorCode != kerr.InvalidTopicException.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "collides with existing topic: coll.a") {
		t.Fatalf("coll_a: code %d message %v", r.ErrorCode, r.ErrorMessage)
	}

	pcl := newClient(t, gw.Addr, kgo.RecordRetries(1))
	pctx, pcancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer pcancel()
	err = pcl.ProduceSync(pctx, &kgo.Record{Topic: "coll_a", Value: []byte("x")}).FirstErr()
	if err == nil {
		t.Fatal("a record was produced to coll_a")
	}
	if _, err := gw.Store.Topic(context.Background(), gw.Stream, "coll_a"); err == nil {
		t.Fatal("coll_a exists")
	}
	// The first topic still works.
	want := produceAll(t, cl, testRecords("coll.a", 3))
	sameRecs(t, want, consumeN(t, gw.Addr, "coll.a", 3, within(20*time.Second)))
}

// One ~58 KB Metadata request naming 2,000 unknown topics auto-creates at
// most the per-request cap (20 by default); the rest are answered
// LEADER_NOT_AVAILABLE, and a franz-go producer to a topic past the cap
// still gets through once the rate allows.
func TestAutoCreateCapMetadata(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	w := dialWire(t, gw.Addr)
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	for i := 0; i < 2000; i++ {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(fmt.Sprintf("flood-topic-name-x-%09d", i))
		req.Topics = append(req.Topics, mt)
	}
	if n := len(frameOf(req, 9, 1)); n < 50<<10 {
		t.Fatalf("request is %d bytes", n)
	}
	resp := w.roundTrip(req, 9, 1).(*kmsg.MetadataResponse)
	created, limited := 0, 0
	for _, mt := range resp.Topics {
		switch mt.ErrorCode {
		case 0:
			created++
		case kerr.LeaderNotAvailable.Code:
			limited++
		default:
			t.Fatalf("%v: code %d", mt.Topic, mt.ErrorCode)
		}
	}
	if created != 20 || limited != 1980 {
		t.Fatalf("created %d, limited %d; want 20 and 1980", created, limited)
	}
	ts, err := gw.Store.Topics(context.Background(), gw.Stream)
	if err != nil || len(ts) != 20 {
		t.Fatalf("%d topics in the store (%v), want 20", len(ts), err)
	}
	if !strings.Contains(gw.Log.String(), "topic auto-creation refused") {
		t.Error("no log line for the refused auto-creations")
	}
	// A real producer to a new topic retries LEADER_NOT_AVAILABLE until
	// the rate lets its topic be created.
	cl := newClient(t, gw.Addr, kgo.AllowAutoTopicCreation())
	want := produceAll(t, cl, testRecords("after-flood", 3))
	sameRecs(t, want, consumeN(t, gw.Addr, "after-flood", 3, within(20*time.Second)))
}
