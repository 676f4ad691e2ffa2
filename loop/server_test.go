package loop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

// heldProduce starts a server with topic made, sends it a Produce with
// acks and returns once the store holds the Produce's Append; release lets
// it go.
func heldProduce(t *testing.T, topic string, acks int16) (hs *hookStore, rc *rawConn, corr int32, release func()) {
	t.Helper()
	srv, hs := newTestServer(t, Config{Workers: 2})
	rc = dialRaw(t, srv.Addr())
	ensureTopic(t, rc, topic)
	entered, release := hs.holdAppends(t)
	b, corr := rc.frame(produceReq(topic, acks, "held"))
	rc.write(b)
	<-entered
	return hs, rc, corr, release
}

// A slow worker reply (Produce held in the store) and a fast inline reply
// (ApiVersions) on one connection must leave in request order.
func TestRepliesKeepRequestOrder(t *testing.T) {
	t.Parallel()
	hs, rc, produceCorr, release := heldProduce(t, "ordered", -1)
	apiv, apivCorr := rc.frame(apiVersionsReq(3))
	rc.write(apiv)

	// The ApiVersions reply is ready now, but must wait for the Produce.
	_ = rc.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if n, _ := rc.c.Read(one[:]); n != 0 {
		t.Fatal("a reply overtook the held Produce")
	}
	release()
	hs.setOnAppend(nil)

	corr1, _, err := rc.read()
	if err != nil {
		t.Fatal(err)
	}
	corr2, _, err := rc.read()
	if err != nil {
		t.Fatal(err)
	}
	if corr1 != produceCorr || corr2 != apivCorr {
		t.Fatalf("replies came %d, %d; want %d, %d", corr1, corr2, produceCorr, apivCorr)
	}
}

// acks=0 Produce takes no reply slot: the replies to the requests after it
// on the same connection still leave, in order, and the record is stored.
// (Were the skipped slot not released, the first read would time out.)
func TestAcksZeroDoesNotStallLaterReplies(t *testing.T) {
	t.Parallel()
	srv, hs := newTestServer(t, Config{Workers: 4})
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, "fire")

	p0, _ := rc.frame(produceReq("fire", 0, "no-ack"))
	md, mdCorr := rc.frame(metadataReq("fire"))
	av, avCorr := rc.frame(apiVersionsReq(3))
	p1, _ := rc.frame(produceReq("fire", 0, "no-ack-2"))
	av2, av2Corr := rc.frame(apiVersionsReq(3))
	rc.write(append(append(append(append(p0, md...), av...), p1...), av2...))

	mresp := kmsg.NewPtrMetadataResponse()
	mresp.SetVersion(9)
	if corr := rc.readResp(mresp); corr != mdCorr {
		t.Fatalf("first reply corr %d, want metadata %d", corr, mdCorr)
	}
	for _, want := range []int32{avCorr, av2Corr} {
		aresp := kmsg.NewPtrApiVersionsResponse()
		aresp.SetVersion(3)
		if corr := rc.readResp(aresp); corr != want {
			t.Fatalf("reply corr %d, want api versions %d", corr, want)
		}
	}
	// seed + two acks=0 records.
	await.Until(t, 5*time.Second, func() error {
		st, err := hs.Partition(context.Background(), "kafka", "fire", 0)
		if err == nil && st.Next == 3 {
			return nil
		}
		return fmt.Errorf("acks=0 records not stored: %+v %v", st, err)
	})
}

// An acks=0 Produce takes no place in the reply order (its Spec's
// NoReply): while its Append is held in the store, the ApiVersions sent
// after it is answered. (Were it given a slot, that reply would wait.)
func TestAcksZeroHoldsNoReplySlot(t *testing.T) {
	t.Parallel()
	_, rc, _, release := heldProduce(t, "noslot", 0)
	av, avCorr := rc.frame(apiVersionsReq(3))
	rc.write(av)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(3)
	if corr := rc.readResp(resp); corr != avCorr {
		t.Fatalf("reply corr %d, want api versions %d", corr, avCorr)
	}
	release()
}

// Pipelined Produce requests on one connection are stored in the order they
// were sent even with many workers: a connection's jobs run one at a time.
func TestPipelinedProducesKeepOrder(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{Workers: 8})
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, "inorder")
	var all []byte
	for i := 0; i < 40; i++ {
		b, _ := rc.frame(produceReq("inorder", -1, "v"))
		all = append(all, b...)
	}
	rc.write(all)
	for i := 0; i < 40; i++ {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		rc.readResp(resp)
		if off := resp.Topics[0].Partitions[0].BaseOffset; off != int64(i+1) {
			t.Fatalf("request %d stored at offset %d", i, off)
		}
	}
}

// With an in-flight cap of 2, ten pipelined produces are all answered in
// order: the loop holds unread frames and is woken as replies leave.
func TestInFlightCapHoldsAndResumes(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{Workers: 2, MaxInFlightPerConn: 2, QueueDepth: 1})
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, "capped")
	var all []byte
	var corrs []int32
	for i := 0; i < 10; i++ {
		b, corr := rc.frame(produceReq("capped", -1, "v"))
		all = append(all, b...)
		corrs = append(corrs, corr)
	}
	rc.write(all)
	for i, want := range corrs {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if got := rc.readResp(resp); got != want {
			t.Fatalf("reply %d: corr %d, want %d", i, got, want)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(i+1) {
			t.Fatalf("reply %d: code %d offset %d", i, p.ErrorCode, p.BaseOffset)
		}
	}
}
