package loop

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/handlers"
)

// hookStore wraps the real embedded store so a test can hold an Append
// until it says so: the way to make one worker reply slow on purpose.
type hookStore struct {
	bridge.Backend
	mu       sync.Mutex
	onAppend func()
}

func (h *hookStore) Append(ctx context.Context, stream, topic string, p int32, batch []byte) (uint64, error) {
	h.mu.Lock()
	fn := h.onAppend
	h.mu.Unlock()
	if fn != nil {
		fn()
	}
	return h.Backend.Append(ctx, stream, topic, p, batch)
}

// AppendStaged is Append, so Produce's writes pass the hook.
func (h *hookStore) AppendStaged(ctx context.Context, stream, topic string, p int32, batch []byte, _ bridge.Prepared) (uint64, func(context.Context) error, error) {
	base, err := h.Append(ctx, stream, topic, p, batch)
	return base, nil, err
}

func (h *hookStore) setOnAppend(fn func()) {
	h.mu.Lock()
	h.onAppend = fn
	h.mu.Unlock()
}

// holdAppends makes every Append wait until release is called (at the
// latest when the test ends, before the server's cleanup waits for the
// Appends); entered is closed once the first one waits.
func (h *hookStore) holdAppends(t testing.TB) (entered <-chan struct{}, release func()) {
	in, gate := make(chan struct{}), make(chan struct{})
	enter := sync.OnceFunc(func() { close(in) })
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	h.setOnAppend(func() {
		enter()
		<-gate
	})
	return in, release
}

// openStore opens a fresh embedded store (no fsync) in a directory of the
// test's own; the caller closes it.
func openStore(t testing.TB) *embedded.Store {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// testGatewayConfig is the gateway every loop test serves: one node that
// auto-creates single-partition topics. Tests change what they need.
func testGatewayConfig() handlers.Config {
	return handlers.Config{
		Stream: "kafka", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092, NodeID: 1,
		ClusterID: "test", AutoCreateTopics: true, DefaultPartitions: 1,
		MaxFrameSize: 8 << 20, MaxFetchWait: 5 * time.Second, MaxMessageSize: 1 << 20,
	}
}

// startServer starts a server of g on one event loop (unless cfg says
// otherwise) and, when the test ends, shuts it down and closes st;
// onShutdown, when set, gets Shutdown's error.
func startServer(t testing.TB, cfg Config, g *handlers.Gateway, st io.Closer, onShutdown func(error)) *Server {
	t.Helper()
	if cfg.EventLoops == 0 {
		cfg.EventLoops = 1
	}
	srv := NewServer(cfg, g)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); onShutdown != nil {
			onShutdown(err)
		}
		_ = st.Close()
	})
	return srv
}

// newTestServer starts a gateway on 127.0.0.1:0 over a fresh embedded store.
func newTestServer(t testing.TB, cfg Config) (*Server, *hookStore) {
	t.Helper()
	st := openStore(t)
	hs := &hookStore{Backend: st}
	cfg.Addr = "127.0.0.1:0"
	return startServer(t, cfg, handlers.NewGateway(testGatewayConfig(), hs, nil), st, nil), hs
}

// ensureTopic produces one record so the topic exists before a test starts
// holding appends.
func ensureTopic(t *testing.T, rc *rawConn, topic string) {
	t.Helper()
	produceOK(t, rc, topic, "seed")
}

// produceOK produces one record on rc and checks the answer.
func produceOK(t *testing.T, rc *rawConn, topic, value string) {
	t.Helper()
	b, _ := rc.frame(produceReq(topic, -1, value))
	rc.write(b)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	rc.readResp(resp)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
}

// rawConn speaks the Kafka framing by hand, for tests that need to control
// exactly what goes on the wire.
type rawConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c}
}

// frame encodes req at its set version with the next correlation id.
func (r *rawConn) frame(req kmsg.Request) ([]byte, int32) {
	r.corr++
	b := make([]byte, 4, 256)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(r.corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, r.corr
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// read returns the next response frame's correlation id and the bytes after it.
func (r *rawConn) read() (int32, []byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	body := make([]byte, n)
	if _, err := io.ReadFull(r.c, body); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(body)), body[4:], nil
}

// readResp reads one reply and decodes it as resp (at resp's version).
func (r *rawConn) readResp(resp kmsg.Response) int32 {
	r.t.Helper()
	corr, body, err := r.read()
	if err != nil {
		r.t.Fatal(err)
	}
	if resp.IsFlexible() && resp.Key() != 18 {
		body = body[1:] // empty response header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decode %T: %v", resp, err)
	}
	return corr
}

func produceReq(topic string, acks int16, value string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = oneRecordBatch(value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// oneRecordBatch builds a valid uncompressed v2 batch with one record.
func oneRecordBatch(value string) []byte {
	var bb codec.BatchBuilder
	b := bb.Begin(nil, 0, time.Now().UnixMilli())
	b = bb.AppendRecord(b, 0, 0, nil, []byte(value), 0)
	return bb.Finish(b)
}

func metadataReq(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	req.AllowAutoTopicCreation = true
	return req
}

func apiVersionsReq(v int16) *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(v)
	req.ClientSoftwareName = "loop-test"
	req.ClientSoftwareVersion = "1.0"
	return req
}

// loopOnly drives the loop's share of one request without workers: the
// frame through OnTraffic, the queued job taken as a worker would and
// answered with a canned reply through the ordered writer, the write
// callback run as gnet would. Used by the allocation test and the
// benchmark of that path.
type loopOnly struct {
	s     *Server
	c     *fakeConn
	cs    *connState
	frame []byte
	reply []byte
}

func newLoopOnly(tb testing.TB, frame []byte) *loopOnly {
	s := newFakeServer(tb, Config{Workers: 1, QueueDepth: 16}, false)
	c := &fakeConn{deferCB: true}
	_, _ = s.OnOpen(c)
	return &loopOnly{s: s, c: c, cs: c.ctx.(*connState), frame: frame, reply: []byte{0, 0, 0, 4, 0, 0, 0, 1}}
}

func (l *loopOnly) round() {
	l.c.view = l.frame
	l.s.OnTraffic(l.c)
	j := <-l.s.jobs
	out := smallBufs.Get()
	out.B = append(out.B[:0], l.reply...)
	largeBufs.Put(j.frame)
	seq := j.seq
	putJob(j)
	l.cs.runNext()
	l.cs.finish(seq, out, &smallBufs)
	cb := l.c.pendingCB
	l.c.pendingCB = nil
	_ = cb(l.c, nil)
	l.c.out = l.c.out[:0]
}
