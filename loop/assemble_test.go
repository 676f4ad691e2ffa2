package loop

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/internal/await"
)

// bigProduce is a Produce frame on rc of one record with a value of n
// bytes (each byte its index mod 251, so a shifted or torn copy shows).
func bigProduce(rc *rawConn, topic string, n int) ([]byte, []byte, int32) {
	value := make([]byte, n)
	for i := range value {
		value[i] = byte(i % 251)
	}
	b, corr := rc.frame(produceReq(topic, -1, string(value)))
	return b, value, corr
}

// fetchValue reads the record at offset of topic's partition 0 on rc and
// returns its value.
func fetchValue(t *testing.T, rc *rawConn, topic string, offset int64) []byte {
	t.Helper()
	req := fetchReq(topic, 4<<20)
	req.Topics[0].Partitions[0].FetchOffset = offset
	b, _ := rc.frame(req)
	rc.write(b)
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	rc.readResp(resp)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch: code %d", p.ErrorCode)
	}
	raw := p.RecordBatches
	for len(raw) > 0 {
		rb, n, err := codec.ParseBatch(raw)
		if err != nil {
			t.Fatal(err)
		}
		raw = raw[n:]
		it := codec.NewRecordIter(rb.Records, rb.NumRecords)
		for it.Next() {
			r := it.Record()
			if rb.BaseOffset+int64(r.OffsetDelta) == offset {
				return append([]byte(nil), r.Value...)
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("offset %d not fetched", offset)
	return nil
}

// A large request that arrives in pieces is assembled as it comes: the
// Produce is stored byte for byte, and a request that follows it in the
// same segment is answered after it, in order.
func TestLargeFrameAssembledAsItArrives(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t, Config{})
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, "big")
	frame, value, corr := bigProduce(rc, "big", 700<<10)
	before := srv.assembled.Load()
	rc.write(frame[:100<<10])
	await.True(t, 10*time.Second, "the frame's assembly to start", func() bool { return srv.assembled.Load() > before })
	rc.write(frame[100<<10 : 400<<10])
	next, corr2 := rc.frame(produceReq("big", -1, "after"))
	rc.write(append(append([]byte(nil), frame[400<<10:]...), next...))
	expectProduceReplies(t, rc, []int32{corr, corr2})
	if got := fetchValue(t, rc, "big", 1); !bytes.Equal(got, value) {
		t.Fatalf("stored value differs: %d bytes, want %d", len(got), len(value))
	}
	if got := fetchValue(t, rc, "big", 2); string(got) != "after" {
		t.Fatalf("next record %q", got)
	}
}

// An assembled frame whose job finds the worker queue full stays the
// connection's: it is queued when room is made, and answered.
func TestAssembledFrameWaitsForQueueRoom(t *testing.T) {
	t.Parallel()
	srv, hs := newTestServer(t, Config{Workers: 1, QueueDepth: 1})
	a := dialRaw(t, srv.Addr())
	ensureTopic(t, a, "q")
	entered, release := hs.holdAppends(t)
	// One Produce holds the only worker, another the only queue slot.
	fa, corrA := a.frame(produceReq("q", -1, "a"))
	a.write(fa)
	<-entered
	b := dialRaw(t, srv.Addr())
	fb, corrB := b.frame(produceReq("q", -1, "b"))
	b.write(fb)
	await.True(t, 10*time.Second, "the second Produce to be queued", func() bool { return len(srv.jobs) == 1 })
	c := dialRaw(t, srv.Addr())
	frame, value, corrC := bigProduce(c, "q", 300<<10)
	before := srv.assembled.Load()
	c.write(frame[:64<<10])
	await.True(t, 10*time.Second, "the frame's assembly to start", func() bool { return srv.assembled.Load() > before })
	held := srv.nHeld.Load()
	c.write(frame[64<<10:])
	await.True(t, 10*time.Second, "the whole frame to wait for queue room", func() bool { return srv.nHeld.Load() > held })
	release()
	for _, x := range []struct {
		rc   *rawConn
		corr int32
	}{{a, corrA}, {b, corrB}, {c, corrC}} {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if got := x.rc.readResp(resp); got != x.corr || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("reply corr %d (want %d), code %d", got, x.corr, resp.Topics[0].Partitions[0].ErrorCode)
		}
	}
	offsets := map[string]bool{}
	for off := int64(1); off <= 3; off++ {
		v := fetchValue(t, a, "q", off)
		switch {
		case bytes.Equal(v, value):
			offsets["c"] = true
		default:
			offsets[string(v)] = true
		}
	}
	if !offsets["a"] || !offsets["b"] || !offsets["c"] {
		t.Fatalf("stored %v, want a, b and the large value", offsets)
	}
}

// A client that stops halfway through a large request is closed by the
// frame timeout, as for any partial request, and one that goes away
// mid-frame leaves the server serving.
func TestPartialAssembledFrame(t *testing.T) {
	t.Parallel()
	const timeout = 400 * time.Millisecond
	srv, _ := newTestServer(t, Config{FrameTimeout: timeout, IdleTimeout: time.Hour})
	slow := dialRaw(t, srv.Addr())
	if !apiVersionsOK(slow) {
		t.Fatal("first request not answered")
	}
	frame, _, _ := bigProduce(slow, "partial", 500<<10)
	before := srv.assembled.Load()
	slow.write(frame[:200<<10])
	await.True(t, 10*time.Second, "the frame's assembly to start", func() bool { return srv.assembled.Load() > before })
	waitClosed(t, slow, 5*time.Second)

	gone := dialRaw(t, srv.Addr())
	frame, _, _ = bigProduce(gone, "partial", 500<<10)
	before = srv.assembled.Load()
	gone.write(frame[:200<<10])
	await.True(t, 10*time.Second, "the frame's assembly to start", func() bool { return srv.assembled.Load() > before })
	_ = gone.c.Close()

	ok := dialRaw(t, srv.Addr())
	produceOK(t, ok, "partial", strings.Repeat("x", 10))
}
