package loop

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
)

// newFakeServer builds a server over a real embedded store without gnet:
// tests drive OnTraffic through a fakeLoop.
func newFakeServer(t testing.TB, cfg Config, workers bool) *Server {
	t.Helper()
	return newFakeServerOf(t, cfg, workers, func(*handlers.Config) {})
}

// newFakeServerOf is newFakeServer with the gateway's config changed by
// edit first.
func newFakeServerOf(t testing.TB, cfg Config, workers bool, edit func(*handlers.Config)) *Server {
	t.Helper()
	st := openStore(t)
	gcfg := testGatewayConfig()
	gcfg.MaxFetchWait = time.Second
	edit(&gcfg)
	s := NewServer(cfg, handlers.NewGateway(gcfg, st, nil))
	if workers {
		s.startWorkers()
	}
	t.Cleanup(func() {
		close(s.quit)
		s.workersDone.Wait()
		_ = st.Close()
	})
	return s
}

// awaitReplies waits for one reply per correlation id in want on c and
// checks that they came in that order, and no more.
func awaitReplies(t *testing.T, c *fakeConn, want []int32) {
	t.Helper()
	await.Until(t, 10*time.Second, func() error {
		if n := len(splitFramesQuiet(c.output())); n < len(want) {
			return fmt.Errorf("%d of %d replies", n, len(want))
		}
		return nil
	})
	corrs := splitFrames(t, c.output())
	if len(corrs) != len(want) {
		t.Fatalf("%d replies, want %d", len(corrs), len(want))
	}
	for i := range want {
		if corrs[i] != want[i] {
			t.Fatalf("reply %d corr %d, want %d", i, corrs[i], want[i])
		}
	}
}

// splitFrames cuts b into response frames and returns their correlation ids.
func splitFrames(t *testing.T, b []byte) []int32 {
	t.Helper()
	var corrs []int32
	for len(b) > 0 {
		if len(b) < 8 {
			t.Fatalf("trailing %d bytes", len(b))
		}
		n := int(binary.BigEndian.Uint32(b))
		corrs = append(corrs, int32(binary.BigEndian.Uint32(b[4:])))
		b = b[4+n:]
	}
	return corrs
}

// Requests fed one byte at a time, with the loop buffer scribbled after
// every OnTraffic, are all answered, in order, with intact contents: no
// peeked byte is used after OnTraffic returns.
func TestScribbledLoopBufferByteByByte(t *testing.T) {
	t.Parallel()
	s := newFakeServer(t, Config{Workers: 2}, true)
	l := startFakeLoop(t, s)
	c := l.dial()
	rc := &rawConn{t: t}
	var wire []byte
	var want []int32
	for i := 0; i < 3; i++ {
		for _, req := range []kmsg.Request{apiVersionsReq(3), produceReq("scribble", -1, "value-"+string(rune('a'+i))), metadataReq("scribble")} {
			b, corr := rc.frame(req)
			wire = append(wire, b...)
			want = append(want, corr)
		}
	}
	l.feedByteByByte(c, wire)
	awaitReplies(t, c, want)
	st, err := s.g.Store.Partition(t.Context(), "kafka", "scribble", 0)
	if err != nil || st.Next != 3 {
		t.Fatalf("stored %+v, %v; want 3 records", st, err)
	}
	// The stored values are the ones sent, not loop-buffer junk.
	var values []string
	err = s.g.Store.Poll(t.Context(), "kafka", "scribble", 0, 0, 1<<20, func(batch []byte) bool {
		values = append(values, string(batch))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	joined := ""
	for _, v := range values {
		joined += v
	}
	for _, v := range []string{"value-a", "value-b", "value-c"} {
		if !contains(joined, v) {
			t.Fatalf("stored batches lack %q", v)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// A queued job carries the header the loop parsed, pointing into the job's
// own copy of the frame: the loop buffer it was parsed from is scribbled
// once OnTraffic returns, long before a worker reads the client id
// (JoinGroup keeps it for DescribeGroups).
func TestQueuedHeaderOutlivesLoopBuffer(t *testing.T) {
	t.Parallel()
	s := newFakeServer(t, Config{Workers: 1}, false) // no workers: the job waits in the queue
	l := startFakeLoop(t, s)
	c := l.dial()
	rc := &rawConn{t: t}
	req := produceReq("rebase", -1, "v")
	b, corr := rc.frame(req)
	l.feed(c, b)
	j := <-s.jobs
	h := j.call.Header
	if string(h.ClientID) != "test" || h.Key != req.Key() || h.Version != req.GetVersion() || h.CorrelationID != corr {
		t.Fatalf("queued header %+v (client id %q) after the loop buffer was scribbled", h, h.ClientID)
	}
	s.runJob(j) // as a worker would: decode from the copy, answer
	awaitReplies(t, c, []int32{corr})
}
