package loop

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
)

// newFakeServer builds a server over a real embedded store without gnet:
// tests drive OnTraffic through a fakeLoop.
func newFakeServer(t testing.TB, cfg Config, workers bool) *Server {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	g := handlers.NewGateway(handlers.Config{
		Stream: "kafka", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092, NodeID: 1,
		ClusterID: "test", AutoCreateTopics: true, DefaultPartitions: 1,
		MaxFrameSize: 8 << 20, MaxFetchWait: time.Second, MaxMessageSize: 1 << 20,
	}, st, nil)
	s := NewServer(cfg, g)
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
	s := newFakeServer(t, Config{Workers: 2}, true)
	l := newFakeLoop(s)
	defer l.stop()
	c := &fakeConn{}
	l.open(c)
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
	for i := range wire {
		l.feed(c, wire[i:i+1])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := c.output()
		if len(got) > 0 {
			if corrs := splitFrames(t, got); len(corrs) == len(want) {
				for i := range want {
					if corrs[i] != want[i] {
						t.Fatalf("reply %d corr %d, want %d", i, corrs[i], want[i])
					}
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d bytes of replies", len(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
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
	s := newFakeServer(t, Config{Workers: 1}, false) // no workers: the job waits in the queue
	l := newFakeLoop(s)
	defer l.stop()
	c := &fakeConn{}
	l.open(c)
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
	await.True(t, 10*time.Second, "the Produce reply", func() bool { return len(splitFramesQuiet(c.output())) == 1 })
	if got := splitFrames(t, c.output()); got[0] != corr {
		t.Fatalf("reply corr %d, want %d", got[0], corr)
	}
}
