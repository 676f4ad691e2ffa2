package loop

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/await"
)

func fetchReq(topic string, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.MaxBytes = maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// nonReader opens a connection on a fake loop of s, stores n records of
// size bytes in topic through it, then makes its client stop reading.
func nonReader(t *testing.T, s *Server, topic string, n, size int) (*fakeLoop, *fakeConn, *rawConn) {
	t.Helper()
	l := startFakeLoop(t, s)
	c := l.dial()
	rc := &rawConn{t: t}
	value := strings.Repeat("v", size)
	for i := 0; i < n; i++ {
		b, _ := rc.frame(produceReq(topic, -1, value))
		l.feed(c, b)
	}
	await.True(t, 10*time.Second, "produce acks", func() bool { return len(splitFramesQuiet(c.output())) == n })
	c.stopReading()
	return l, c, rc
}

// splitFramesQuiet counts whole frames in b.
func splitFramesQuiet(b []byte) []int {
	var sizes []int
	for len(b) >= 4 {
		n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		if len(b) < 4+n {
			break
		}
		sizes = append(sizes, 4+n)
		b = b[4+n:]
	}
	return sizes
}

// A client that sends Fetches and reads nothing: once the bytes waiting in
// gnet's outbound buffer reach MaxOutboundPerConn the loop decodes no more
// of its frames (they stay unread), and Fetches already taken shrink to the
// room left, so the backlog stays near the cap instead of growing by one
// reply per request. When the client reads, every request is answered, in
// order.
func TestNonReaderBoundedByOutboundCap(t *testing.T) {
	t.Parallel()
	const capBytes = 64 << 10
	s := newFakeServer(t, Config{Workers: 2, MaxOutboundPerConn: capBytes, WriteStallTimeout: time.Minute}, true)
	l, c, rc := nonReader(t, s, "nonreader", 40, 8<<10) // 320 KB stored

	const n = 200
	var wire []byte
	first := rc.corr + 1
	for i := 0; i < n; i++ {
		b, _ := rc.frame(fetchReq("nonreader", 100<<10)) // each alone could return 100 KB
		wire = append(wire, b...)
	}
	l.feed(c, wire)
	cs := c.ctx.(*connState)
	// Let everything that is going to be answered be answered.
	await.True(t, 10*time.Second, "the connection to block", func() bool {
		var blocked bool
		l.do(func() { blocked = cs.stall.since != 0 })
		return blocked && cs.inflight.Load() == 0
	})
	// No condition says "nothing more will come": a loop that kept
	// decoding would show it within this time.
	time.Sleep(50 * time.Millisecond)
	backlog := c.OutboundBuffered()
	answered := len(splitFramesQuiet(c.output()))
	// At most the cap plus one record's overshoot (the first reply that
	// crossed it) plus small record-less replies of the requests in flight.
	if limit := capBytes + 16<<10 + s.cfg.MaxInFlightPerConn*256; backlog > limit {
		t.Fatalf("non-reader: %d bytes queued for writing, want <= %d (cap %d)", backlog, limit, capBytes)
	}
	if answered >= n {
		t.Fatalf("non-reader: all %d requests answered while it read nothing", n)
	}
	var unread int
	l.do(func() { unread = len(c.unread) })
	if unread == 0 {
		t.Fatal("non-reader: no frame left unread")
	}
	if c.isClosed() {
		t.Fatal("closed before the write-stall timeout")
	}

	// The client reads: the rest is answered, in order.
	await.True(t, 10*time.Second, "every reply once the client reads", func() bool {
		c.drain(-1)
		return len(splitFramesQuiet(c.output())) == n
	})
	corrs := splitFrames(t, c.output())
	for i, corr := range corrs {
		if corr != first+int32(i) {
			t.Fatalf("reply %d: corr %d, want %d", i, corr, first+int32(i))
		}
	}
	await.True(t, 10*time.Second, "the queued count to return to zero", func() bool { return cs.queued.Load() == 0 })
}

// A connection over its write cap whose client reads nothing for the
// write-stall timeout is closed with its own reason, even when it sends
// nothing more; one that reads a little within each timeout is not.
// Serial: the client must read within every second of wall clock, which a
// machine loaded by parallel tests may not give it.
func TestWriteStallTimeoutCloses(t *testing.T) {
	const capBytes = 16 << 10
	s := newFakeServer(t, Config{Workers: 1, MaxOutboundPerConn: capBytes, WriteStallTimeout: time.Second}, true)
	l, c, rc := nonReader(t, s, "stall", 4, 12<<10)
	cs := c.ctx.(*connState)

	// Two replies of one 12 KB record each go over the 16 KB cap (the
	// first has room for it, the second is let over by one record); the
	// rest find no room and carry no records. Progress resets the clock:
	// drain a little every 50 ms for 1.2 s (longer than the timeout),
	// staying over the cap.
	var wire []byte
	for i := 0; i < 8; i++ {
		b, _ := rc.frame(fetchReq("stall", 32<<10))
		wire = append(wire, b...)
	}
	l.feed(c, wire)
	for i := 0; i < 24; i++ {
		time.Sleep(50 * time.Millisecond)
		c.drain(200)
		if c.isClosed() {
			t.Fatalf("closed after %d ms although the client kept reading", (i+1)*50)
		}
	}
	// Now it stops reading altogether.
	start := time.Now()
	await.True(t, 10*time.Second, "the write-stall close", c.isClosed)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("closed %v after the client stopped reading, timeout 1s", el)
	}
	if r := CloseReason(cs.reason.Load()); r != CloseWriteStall {
		t.Fatalf("close reason %s, want %s", r, CloseWriteStall)
	}
}

// Request copies handed to workers count against MaxBufferedPerConn: with
// room for three 1.1 KB Produce copies and the store holding every Append,
// no more than that are taken off the wire; the rest wait unread (under
// the same cap, so the connection stays open) and are answered, in order,
// once the store lets go.
func TestRequestCopiesInFlightCapped(t *testing.T) {
	t.Parallel()
	const capBytes = 3500
	srv, hs := newTestServer(t, Config{Workers: 4, MaxBufferedPerConn: capBytes, QueueDepth: 64})
	rc := dialRaw(t, srv.Addr())
	ensureTopic(t, rc, "copies")
	_, release := hs.holdAppends(t)
	value := strings.Repeat("p", 1000)
	var all []byte
	var corrs []int32
	for i := 0; i < 5; i++ {
		b, corr := rc.frame(produceReq("copies", -1, value))
		all = append(all, b...)
		corrs = append(corrs, corr)
	}
	rc.write(all)
	var cs *connState
	await.True(t, 10*time.Second, "the first Produce to reach the store", func() bool {
		srv.connMu.Lock()
		defer srv.connMu.Unlock()
		for c := range srv.all {
			cs = c
		}
		return cs != nil && cs.reqHeld.Load() > 0
	})
	// Let the loop take all it is going to: what it must not take is
	// checked after, so no condition can be awaited.
	time.Sleep(100 * time.Millisecond)
	if held, n := cs.reqHeld.Load(), cs.inflight.Load(); held > capBytes || n >= 5 {
		t.Fatalf("%d request bytes in %d requests held, cap %d", held, n, capBytes)
	}
	release()
	expectProduceReplies(t, rc, corrs)
	await.True(t, 10*time.Second, "the held count to return to zero", func() bool { return cs.reqHeld.Load() == 0 })
}

// expectProduceReplies reads one Produce v9 reply per correlation id, in
// order, each without error and at base offset 1, 2, ... (after one
// record stored at 0).
func expectProduceReplies(t *testing.T, rc *rawConn, corrs []int32) {
	t.Helper()
	for i, want := range corrs {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(9)
		if got := rc.readResp(resp); got != want {
			t.Fatalf("reply %d: corr %d, want %d", i, got, want)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != int64(i+1) {
			t.Fatalf("reply %d: code %d offset %d", i, p.ErrorCode, p.BaseOffset)
		}
	}
}

// With the defaults, an idle connection has room for a Fetch answer as
// large as a frame may be, so a consumer of many partitions gets a whole
// answer per round trip instead of one cut to the outbound cap.
func TestDefaultReplyRoomHoldsAFrame(t *testing.T) {
	t.Parallel()
	s := newFakeServer(t, Config{Workers: 1}, false)
	c := startFakeLoop(t, s).dial()
	cs := c.ctx.(*connState)
	if room := cs.replyRoom(); room < int(s.cfg.MaxFrameSize) {
		t.Fatalf("reply room of an idle connection %d, want at least the frame size %d", room, s.cfg.MaxFrameSize)
	}
}

// A client pipelining far more Produce bytes than MaxBufferedPerConn while
// the store holds every Append is slowed, not closed: once the connection
// is held the loop stops reading its socket (TCP keeps the rest in the
// client), and every request is answered, in order, once the store lets
// go. Reading on regardless would pass the unread-bytes cap and close it.
// On a gnet connection the loop changes its epoll interest; a TLS
// connection's reader stops reading.
func TestPipelinedProducerMutedNotClosed(t *testing.T) {
	t.Parallel()
	const frameCap, bufCap = 128 << 10, 256 << 10
	cfg := Config{Workers: 2, MaxFrameSize: frameCap, MaxBufferedPerConn: bufCap, QueueDepth: 64}
	t.Run("plaintext", func(t *testing.T) {
		t.Parallel()
		srv, hs := newTestServer(t, cfg)
		pipelineWhileHeld(t, srv, hs, dialRaw(t, srv.Addr()))
	})
	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		ts := newTLSServer(t, cfg, false)
		pipelineWhileHeld(t, ts.srv, ts.hs, mustDialTLS(t, ts, false))
	})
}

// pipelineWhileHeld writes 200 Produce requests of 64 KiB in one go while
// the store holds appends, waits for the server to mute a connection,
// lets the store go and expects every reply, in order.
func pipelineWhileHeld(t *testing.T, srv *Server, hs *hookStore, rc *rawConn) {
	const requests = 200
	ensureTopic(t, rc, "muted")
	_, release := hs.holdAppends(t)
	value := strings.Repeat("m", 64<<10)
	var all []byte
	var corrs []int32
	for range requests {
		b, corr := rc.frame(produceReq("muted", -1, value))
		all = append(all, b...)
		corrs = append(corrs, corr)
	}
	written := make(chan error, 1)
	go func() {
		_, err := rc.c.Write(all)
		written <- err
	}()
	await.True(t, 10*time.Second, "the held connection to be muted", func() bool { return srv.mutes.Load() > 0 })
	release()
	expectProduceReplies(t, rc, corrs)
	if err := <-written; err != nil {
		t.Fatalf("writing %d pipelined requests: %v", requests, err)
	}
}
