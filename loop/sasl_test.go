package loop

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/scram"
)

// newSaslFakeServer is newFakeServer with SASL PLAIN on, user alice/pw.
func newSaslFakeServer(t *testing.T, cfg ...Config) *Server {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users")
	if err := scram.SetUser(path, "alice", "pw", []scram.Mechanism{scram.SHA256}, scram.DefaultIterations); err != nil {
		t.Fatal(err)
	}
	u, err := scram.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := handlers.NewGateway(handlers.Config{
		Stream: "kafka", AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092, NodeID: 1,
		ClusterID: "test", AutoCreateTopics: true, DefaultPartitions: 1,
		MaxFrameSize: 8 << 20, MaxFetchWait: time.Second, MaxMessageSize: 1 << 20,
		Sasl: &handlers.SaslConfig{Mechanisms: []string{handlers.MechPlain}, Users: u, FailDelay: 20 * time.Millisecond},
	}, st, nil)
	c := Config{Workers: 2}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	s := NewServer(c, g)
	s.startWorkers()
	t.Cleanup(func() {
		close(s.quit)
		s.workersDone.Wait()
		_ = st.Close()
	})
	return s
}

func saslHandshakeReq(v int16) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = v, handlers.MechPlain
	return r
}

// waitOutput waits until c has written at least n bytes.
func waitOutput(t *testing.T, c *fakeConn, n int) []byte {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := c.output(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d reply bytes", len(c.output()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client that pipelines its whole login and a first request, fed one
// byte at a time with the loop buffer scribbled after every OnTraffic, is
// answered in order: the request after the login waits for the login's
// outcome instead of being refused, and no peeked byte outlives its
// OnTraffic (the SaslAuthenticate runs on a worker from its copy).
func TestSaslPipelinedLoginByteByByte(t *testing.T) {
	s := newSaslFakeServer(t)
	l := newFakeLoop(s)
	defer l.stop()
	c := &fakeConn{}
	l.open(c)
	rc := &rawConn{t: t}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00alice\x00pw")
	var wire []byte
	var want []int32
	for _, req := range []kmsg.Request{apiVersionsReq(3), saslHandshakeReq(1), auth, metadataReq("t")} {
		b, corr := rc.frame(req)
		wire = append(wire, b...)
		want = append(want, corr)
	}
	for i := range wire {
		l.feed(c, wire[i:i+1])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := c.output(); len(got) > 0 {
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
			t.Fatalf("replies: %d bytes", len(c.output()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		t.Fatal("connection closed")
	}
}

// KIP-43 bare tokens pipelined after a v0 handshake, byte by byte: the
// token is answered bare (an empty frame for PLAIN) and the Metadata after
// it is served.
func TestSaslBareTokenByteByByte(t *testing.T) {
	s := newSaslFakeServer(t)
	l := newFakeLoop(s)
	defer l.stop()
	c := &fakeConn{}
	l.open(c)
	rc := &rawConn{t: t}
	hs, hsCorr := rc.frame(saslHandshakeReq(0))
	tok := []byte("\x00alice\x00pw")
	bare := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
	bare = append(bare, tok...)
	md, mdCorr := rc.frame(metadataReq("t"))
	wire := append(append(append([]byte{}, hs...), bare...), md...)
	for i := range wire {
		l.feed(c, wire[i:i+1])
	}
	// handshake reply, 4 zero bytes (the empty bare answer), metadata.
	waitOutput(t, c, 1)
	var got []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = c.output()
		if len(got) >= 8 {
			n := int(binary.BigEndian.Uint32(got))
			rest := got[4+n:]
			if len(rest) >= 4+8 {
				m := int(binary.BigEndian.Uint32(rest[4:]))
				if len(rest) >= 8+m {
					if c1 := int32(binary.BigEndian.Uint32(got[4:])); c1 != hsCorr {
						t.Fatalf("first reply corr %d", c1)
					}
					if binary.BigEndian.Uint32(rest) != 0 {
						t.Fatalf("bare answer %x, want an empty frame", rest[:4])
					}
					if c3 := int32(binary.BigEndian.Uint32(rest[8:])); c3 != mdCorr {
						t.Fatalf("metadata corr %d", c3)
					}
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replies %x", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Before login, anything but ApiVersions and the SASL keys closes with
// CloseSaslRequired; an oversized frame with CloseSaslFrameSize before its
// body arrives; the request after a failed login with CloseSaslFailed.
func TestSaslGateCloses(t *testing.T) {
	s := newSaslFakeServer(t)
	l := newFakeLoop(s)
	defer l.stop()
	rc := &rawConn{t: t}
	reasonOf := func(c *fakeConn) CloseReason {
		var r CloseReason
		l.do(func() { r = CloseReason(c.ctx.(*connState).reason.Load()) })
		return r
	}

	c := &fakeConn{}
	l.open(c)
	b, _ := rc.frame(metadataReq("t"))
	l.feed(c, b)
	if r := reasonOf(c); r != CloseSaslRequired {
		t.Fatalf("Metadata before login: reason %v", r)
	}

	c = &fakeConn{}
	l.open(c)
	l.feed(c, binary.BigEndian.AppendUint32(nil, preAuthMaxFrame+1))
	if r := reasonOf(c); r != CloseSaslFrameSize {
		t.Fatalf("oversized frame before login: reason %v", r)
	}

	c = &fakeConn{}
	l.open(c)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("\x00alice\x00wrong")
	h, _ := rc.frame(saslHandshakeReq(1))
	a, _ := rc.frame(auth)
	m, _ := rc.frame(metadataReq("t"))
	l.feed(c, append(append(h, a...), m...))
	checkReason := time.Now().Add(5 * time.Second)
	for reasonOf(c) != CloseSaslFailed {
		if time.Now().After(checkReason) {
			t.Fatalf("after a failed login: reason %v", reasonOf(c))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The refusal itself was answered before the close.
	if corrs := splitFrames(t, c.output()); len(corrs) != 2 {
		t.Fatalf("%d replies before the close, want the handshake and the refusal", len(corrs))
	}
}

// A connection that only sends ApiVersions is closed FrameTimeout after
// it connected (CloseSaslLoginTimeout); one that logged in is not.
func TestSaslLoginTimeout(t *testing.T) {
	s := newSaslFakeServer(t, Config{Workers: 2, FrameTimeout: 100 * time.Millisecond})
	l := newFakeLoop(s)
	defer l.stop()
	rc := &rawConn{t: t}
	anon, user := &fakeConn{}, &fakeConn{}
	l.open(anon)
	l.open(user)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("\x00alice\x00pw")
	h, _ := rc.frame(saslHandshakeReq(1))
	a, _ := rc.frame(auth)
	l.feed(user, append(h, a...))
	waitFor(t, "the login", func() bool {
		var ok bool
		l.do(func() { ok = user.ctx.(*connState).sasl.Authenticated() })
		return ok
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := rc.frame(apiVersionsReq(3))
		l.feed(anon, b)
		l.do(func() { s.OnTick() })
		var r CloseReason
		l.do(func() { r = CloseReason(anon.ctx.(*connState).reason.Load()) })
		if r == CloseSaslLoginTimeout {
			var ur CloseReason
			l.do(func() { ur = CloseReason(user.ctx.(*connState).reason.Load()) })
			if ur != CloseClient {
				t.Fatalf("the logged-in connection was closed: %v", ur)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the anonymous connection was not closed")
}
