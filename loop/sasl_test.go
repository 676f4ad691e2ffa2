package loop

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/scram"
)

// newSaslFakeServer is newFakeServer with SASL PLAIN on, user alice/pw.
func newSaslFakeServer(t *testing.T, cfg ...Config) *Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	if err := scram.SetUser(path, "alice", "pw", []scram.Mechanism{scram.SHA256}, scram.DefaultIterations); err != nil {
		t.Fatal(err)
	}
	u, err := scram.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Workers: 2}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	return newFakeServerOf(t, c, true, func(g *handlers.Config) {
		g.Sasl = &handlers.SaslConfig{Mechanisms: []string{handlers.MechPlain}, Users: u, FailDelay: 20 * time.Millisecond}
	})
}

func saslHandshakeReq(v int16) *kmsg.SASLHandshakeRequest {
	r := kmsg.NewPtrSASLHandshakeRequest()
	r.Version, r.Mechanism = v, handlers.MechPlain
	return r
}

// A client that pipelines its whole login and a first request, fed one
// byte at a time with the loop buffer scribbled after every OnTraffic, is
// answered in order: the request after the login waits for the login's
// outcome instead of being refused, and no peeked byte outlives its
// OnTraffic (the SaslAuthenticate runs on a worker from its copy).
func TestSaslPipelinedLoginByteByByte(t *testing.T) {
	t.Parallel()
	l := startFakeLoop(t, newSaslFakeServer(t))
	c := l.dial()
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
	l.feedByteByByte(c, wire)
	awaitReplies(t, c, want)
	if c.isClosed() {
		t.Fatal("connection closed")
	}
}

// KIP-43 bare tokens pipelined after a v0 handshake, byte by byte: the
// token is answered bare (an empty frame for PLAIN) and the Metadata after
// it is served.
func TestSaslBareTokenByteByByte(t *testing.T) {
	t.Parallel()
	l := startFakeLoop(t, newSaslFakeServer(t))
	c := l.dial()
	rc := &rawConn{t: t}
	hs, hsCorr := rc.frame(saslHandshakeReq(0))
	tok := []byte("\x00alice\x00pw")
	bare := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
	bare = append(bare, tok...)
	md, mdCorr := rc.frame(metadataReq("t"))
	l.feedByteByByte(c, append(append(append([]byte{}, hs...), bare...), md...))
	// handshake reply, 4 zero bytes (the empty bare answer), metadata.
	await.True(t, 10*time.Second, "three replies", func() bool { return len(splitFramesQuiet(c.output())) >= 3 })
	got := c.output()
	n := int(binary.BigEndian.Uint32(got))
	rest := got[4+n:]
	if c1 := int32(binary.BigEndian.Uint32(got[4:])); c1 != hsCorr {
		t.Fatalf("first reply corr %d", c1)
	}
	if binary.BigEndian.Uint32(rest) != 0 {
		t.Fatalf("bare answer %x, want an empty frame", rest[:4])
	}
	if c3 := int32(binary.BigEndian.Uint32(rest[8:])); c3 != mdCorr {
		t.Fatalf("metadata corr %d", c3)
	}
}

// Before login, anything but ApiVersions and the SASL keys closes with
// CloseSaslRequired; an oversized frame with CloseSaslFrameSize before its
// body arrives; the request after a failed login with CloseSaslFailed.
func TestSaslGateCloses(t *testing.T) {
	t.Parallel()
	l := startFakeLoop(t, newSaslFakeServer(t))
	rc := &rawConn{t: t}

	c := l.dial()
	b, _ := rc.frame(metadataReq("t"))
	l.feed(c, b)
	if r := l.reasonOf(c); r != CloseSaslRequired {
		t.Fatalf("Metadata before login: reason %v", r)
	}

	c = l.dial()
	l.feed(c, binary.BigEndian.AppendUint32(nil, preAuthMaxFrame+1))
	if r := l.reasonOf(c); r != CloseSaslFrameSize {
		t.Fatalf("oversized frame before login: reason %v", r)
	}

	c = l.dial()
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("\x00alice\x00wrong")
	h, _ := rc.frame(saslHandshakeReq(1))
	a, _ := rc.frame(auth)
	m, _ := rc.frame(metadataReq("t"))
	l.feed(c, append(append(h, a...), m...))
	await.Until(t, 5*time.Second, func() error {
		if r := l.reasonOf(c); r != CloseSaslFailed {
			return fmt.Errorf("after a failed login: reason %v", r)
		}
		return nil
	})
	// The refusal itself was answered before the close.
	if corrs := splitFrames(t, c.output()); len(corrs) != 2 {
		t.Fatalf("%d replies before the close, want the handshake and the refusal", len(corrs))
	}
}

// A connection that only sends ApiVersions is closed FrameTimeout after
// it connected (CloseSaslLoginTimeout); one that logged in is not.
func TestSaslLoginTimeout(t *testing.T) {
	t.Parallel()
	s := newSaslFakeServer(t, Config{Workers: 2, FrameTimeout: 100 * time.Millisecond})
	l := startFakeLoop(t, s)
	rc := &rawConn{t: t}
	anon, user := l.dial(), l.dial()
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("\x00alice\x00pw")
	h, _ := rc.frame(saslHandshakeReq(1))
	a, _ := rc.frame(auth)
	l.feed(user, append(h, a...))
	await.True(t, 10*time.Second, "the login", func() bool {
		var ok bool
		l.do(func() { ok = user.ctx.(*connState).sasl.Authenticated() })
		return ok
	})
	await.True(t, 5*time.Second, "the anonymous connection closed", func() bool {
		b, _ := rc.frame(apiVersionsReq(3))
		l.feed(anon, b)
		l.do(func() { s.OnTick() })
		return l.reasonOf(anon) == CloseSaslLoginTimeout
	})
	if ur := l.reasonOf(user); ur != CloseClient {
		t.Fatalf("the logged-in connection was closed: %v", ur)
	}
}
