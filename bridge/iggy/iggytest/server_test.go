package iggytest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
	"github.com/iggy-kafka/gateway/internal/await"
)

// The tests here speak raw frames, built by hand, so they check the
// server without the client package.

type hdr struct {
	size     int // 0: computed
	command  byte
	clientLo uint64
	request  uint64
	op       byte
	session  uint64
	code     uint32
	checksum uint64
}

func (h hdr) frame(body []byte) []byte {
	b := make([]byte, wire.HeaderSize, wire.HeaderSize+len(body))
	size := h.size
	if size == 0 {
		size = wire.HeaderSize + len(body)
	}
	le.PutUint32(b[wire.OffSize:], uint32(size))
	b[wire.OffCommand] = h.command
	le.PutUint64(b[wire.ReqClient:], h.clientLo)
	le.PutUint64(b[wire.ReqRequestChecksum:], h.checksum)
	le.PutUint64(b[wire.ReqRequest:], h.request)
	b[wire.ReqOperation] = h.op
	le.PutUint64(b[wire.ReqSession:], h.session)
	le.PutUint32(b[wire.ReqCode:], h.code)
	return append(b, body...)
}

func nr(code uint32, request, session uint64) hdr {
	return hdr{command: wire.CmdRequest, clientLo: 42, request: request, op: wire.OpNonReplicated, session: session, code: code}
}

func buildLogin(version uint32, user, pass string) []byte {
	b := le.AppendUint32(nil, version)
	for _, s := range []string{"test", "1.0", user, pass} {
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	return le.AppendUint32(b, 0)
}

type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(frame []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(frame); err != nil {
		r.t.Fatal(err)
	}
}

// read returns the next frame, or nil and the error.
func (r *rawConn) read() ([]byte, error) {
	_ = r.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	return wire.ReadFrame(r.br, nil)
}

func (r *rawConn) mustRead() []byte {
	r.t.Helper()
	f, err := r.read()
	if err != nil {
		r.t.Fatal(err)
	}
	return f
}

// login registers and returns the session fence.
func (r *rawConn) login() uint64 {
	r.t.Helper()
	r.send(hdr{command: wire.CmdRequest, clientLo: 42, op: wire.OpRegister}.frame(buildLogin(wire.ProtocolVersion, "iggy", "iggy")))
	f := r.mustRead()
	if f[wire.OffCommand] != wire.CmdReply || le.Uint32(f[wire.RepStatus:]) != 0 {
		r.t.Fatalf("login failed: %x", f[:wire.HeaderSize])
	}
	return le.Uint64(f[wire.HeaderSize+8:])
}

// pingAnswers sends a Ping with request id req and checks that the very
// next frame is its reply: nothing was sent for anything before it.
func (r *rawConn) pingAnswers(req, fence uint64) {
	r.t.Helper()
	r.send(nr(wire.CodePing, req, fence).frame(nil))
	f := r.mustRead()
	if f[wire.OffCommand] != wire.CmdReply || le.Uint64(f[wire.RepRequest:]) != req {
		r.t.Fatalf("expected the ping reply for request %d, got command %d request %d", req, f[wire.OffCommand], le.Uint64(f[wire.RepRequest:]))
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newServer(t *testing.T) *Server {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateTopic(t.Context(), "kafka", "t", 1); err != nil {
		t.Fatal(err)
	}
	s, err := Start(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sendBody builds a SendMessages body for kafka/t partition 0.
func sendBody(t *testing.T, batch []byte, count uint32, metaDelta int) []byte {
	meta := le.AppendUint32(nil, uint32(25+metaDelta))
	meta = append(meta, 2, 5)
	meta = append(meta, "kafka"...)
	meta = append(meta, 2, 1, 't', 2, 4, 0, 0, 0, 0)
	meta = le.AppendUint32(meta, count)
	return append(meta, batch...)
}

func oneBatch(t *testing.T) []byte {
	var bb bridge.IggyBatchBuilder
	b := bb.Begin(nil, 1000)
	b, err := bb.Append(b, [16]byte{1}, 1000, []byte("payload"), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err = bb.Finish(b)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMalformedFramesDropped: frames the real server drops without a
// reply, on a live connection that keeps working.
func TestMalformedFramesDropped(t *testing.T) {
	t.Parallel()
	badSum := oneBatch(t)
	badSum[len(badSum)-1] ^= 1
	cases := []struct {
		name  string
		frame func(fence uint64) []byte
	}{
		{"command not Request", func(f uint64) []byte { h := nr(wire.CodePing, 1, f); h.command = wire.CmdReply; return h.frame(nil) }},
		{"client id 0", func(f uint64) []byte { h := nr(wire.CodePing, 1, f); h.clientLo = 0; return h.frame(nil) }},
		{"operation 0", func(f uint64) []byte { h := nr(wire.CodePing, 1, f); h.op = 0; return h.frame(nil) }},
		{"unknown operation", func(f uint64) []byte { h := nr(wire.CodePing, 1, f); h.op = 99; return h.frame(nil) }},
		{"internal operation", func(f uint64) []byte { h := nr(wire.CodePing, 1, f); h.op = 64; return h.frame(nil) }},
		{"register with request id", func(f uint64) []byte {
			return hdr{command: wire.CmdRequest, clientLo: 42, request: 3, op: wire.OpRegister}.frame(buildLogin(wire.ProtocolVersion, "iggy", "iggy"))
		}},
		{"metadata op without session", func(uint64) []byte {
			return hdr{command: wire.CmdRequest, clientLo: 42, request: 1, op: wire.OpCreateStream}.frame([]byte{1, 'x'})
		}},
		{"metadata op with request 0", func(f uint64) []byte {
			return hdr{command: wire.CmdRequest, clientLo: 42, session: f, op: wire.OpCreateStream}.frame([]byte{1, 'x'})
		}},
		{"send with bad message checksum", func(f uint64) []byte {
			return hdr{command: wire.CmdRequest, clientLo: 42, request: 1, session: f, op: wire.OpSendMessages}.frame(sendBody(t, badSum, 1, 0))
		}},
		{"send with wrong metadata length", func(f uint64) []byte {
			return hdr{command: wire.CmdRequest, clientLo: 42, request: 1, session: f, op: wire.OpSendMessages}.frame(sendBody(t, oneBatch(t), 1, 1))
		}},
		{"send with count mismatch", func(f uint64) []byte {
			return hdr{command: wire.CmdRequest, clientLo: 42, request: 1, session: f, op: wire.OpSendMessages}.frame(sendBody(t, oneBatch(t), 2, 0))
		}},
		{"send with trailing bytes", func(f uint64) []byte {
			return hdr{command: wire.CmdRequest, clientLo: 42, request: 1, session: f, op: wire.OpSendMessages}.frame(append(sendBody(t, oneBatch(t), 1, 0), 0))
		}},
		{"send with truncated batch", func(f uint64) []byte {
			b := sendBody(t, oneBatch(t), 1, 0)
			return hdr{command: wire.CmdRequest, clientLo: 42, request: 1, session: f, op: wire.OpSendMessages}.frame(b[:len(b)-3])
		}},
	}
	s := newServer(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, s)
			fence := r.login()
			before := s.Rejected()
			r.send(tc.frame(fence))
			waitRejected(t, s, before)
			r.pingAnswers(77, fence)
		})
	}
}

func waitRejected(t *testing.T, s *Server, before int64) {
	t.Helper()
	await.True(t, 2*time.Second, "frame rejected", func() bool { return s.Rejected() != before })
}

// TestMalformedFramesClose: a size field out of range cannot be skipped,
// so the connection is closed.
func TestMalformedFramesClose(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, size := range []int{1, 255, wire.MaxFrame + 1} {
		r := dialRaw(t, s)
		r.send(hdr{size: size, command: wire.CmdRequest, clientLo: 42, request: 1, op: wire.OpNonReplicated, code: wire.CodePing}.frame(nil))
		if _, err := r.read(); !errors.Is(err, io.EOF) {
			t.Errorf("size %d: connection not closed: %v", size, err)
		}
	}
}

// TestLoginRules: login first, version gate, credentials, legacy codes.
func TestLoginRules(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	register := func(body []byte) []byte {
		return hdr{command: wire.CmdRequest, clientLo: 42, op: wire.OpRegister}.frame(body)
	}
	evictions := []struct {
		name   string
		frame  []byte
		reason byte
	}{
		{"wrong password", register(buildLogin(wire.ProtocolVersion, "iggy", "nope")), wire.EvictInvalidCredentials},
		{"protocol 0.10.0", register(buildLogin(wire.PackVersion(0, 10, 0), "iggy", "iggy")), wire.EvictIncompatibleProtocol},
		{"protocol 0.12.0", register(buildLogin(wire.PackVersion(0, 12, 0), "iggy", "iggy")), wire.EvictIncompatibleProtocol},
		{"malformed body", register([]byte{0, 0x2c, 0, 0, 9}), wire.EvictMalformedLogin},
		{"legacy LoginUser", nr(wire.CodeLoginUser, 1, 0).frame([]byte{4, 'i', 'g', 'g', 'y'}), wire.EvictMalformedLogin},
		{"replicated op before login", hdr{command: wire.CmdRequest, clientLo: 42, request: 1, session: 1, op: wire.OpCreateStream}.frame([]byte{1, 'x'}), wire.EvictNoSession},
	}
	for _, tc := range evictions {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, s)
			r.send(tc.frame)
			f := r.mustRead()
			if f[wire.OffCommand] != wire.CmdEviction || f[wire.EvReason] != tc.reason {
				t.Fatalf("got command %d reason %d", f[wire.OffCommand], f[wire.EvReason])
			}
			if _, err := r.read(); !errors.Is(err, io.EOF) {
				t.Fatalf("connection left open: %v", err)
			}
		})
	}
	t.Run("read before login", func(t *testing.T) {
		r := dialRaw(t, s)
		r.pingAnswers(1, 0) // Ping is allowed
		r.send(nr(wire.CodeGetTopics, 1, 0).frame([]byte{2, 5, 'k', 'a', 'f', 'k', 'a'}))
		if f := r.mustRead(); le.Uint32(f[wire.RepStatus:]) != wire.StatusUnauthenticated {
			t.Fatalf("status %d", le.Uint32(f[wire.RepStatus:]))
		}
	})
}

// TestSessionRules: request checksums, unknown codes, metadata replays.
func TestSessionRules(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	r := dialRaw(t, s)
	fence := r.login()
	body := []byte{2, 5, 'k', 'a', 'f', 'k', 'a'}
	h := nr(wire.CodeGetTopics, 1, fence)
	h.checksum = xxh3.Hash(body) + 1
	r.send(h.frame(body))
	if f := r.mustRead(); le.Uint32(f[wire.RepStatus:]) != wire.StatusInvalidFormat {
		t.Fatalf("bad request checksum: status %d", le.Uint32(f[wire.RepStatus:]))
	}
	h.checksum = xxh3.Hash(body)
	r.send(h.frame(body))
	if f := r.mustRead(); le.Uint32(f[wire.RepStatus:]) != 0 {
		t.Fatalf("good request checksum: status %d", le.Uint32(f[wire.RepStatus:]))
	}
	r.send(nr(9999, 1, fence).frame(nil))
	if f := r.mustRead(); le.Uint32(f[wire.RepStatus:]) != wire.StatusInvalidCommand {
		t.Fatalf("unknown code: status %d", le.Uint32(f[wire.RepStatus:]))
	}
	create := hdr{command: wire.CmdRequest, clientLo: 42, request: 1, session: fence, op: wire.OpCreateStream}.frame([]byte{3, 'a', 'b', 'c'})
	r.send(create)
	first := r.mustRead()
	r.send(create) // a resend gets the cached reply, not "already exists"
	if again := r.mustRead(); !bytes.Equal(first, again) {
		t.Fatal("replayed metadata request was applied twice")
	}
	if le.Uint32(first[wire.HeaderSize:]) != 0 {
		t.Fatal("create stream was rejected")
	}
}

// TestEvictionVectors checks the server's eviction frames against the
// official SDK's vectors, when the shared file is present.
func TestEvictionVectors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../../shared/iggy/vectors.json")
	if os.IsNotExist(err) {
		t.Skip("shared vectors not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct{ Name, Hex string }
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	h := reqHeader{clientLo: 0x0807060504030201, clientHi: 0x100f0e0d0c0b0a09}
	want := map[string]uint8{
		"eviction_invalid_credentials":   wire.EvictInvalidCredentials,
		"eviction_incompatible_protocol": wire.EvictIncompatibleProtocol,
		"eviction_malformed_login":       wire.EvictMalformedLogin,
	}
	n := 0
	for _, v := range vs {
		reason, ok := want[v.Name]
		if !ok {
			continue
		}
		n++
		if got := hex.EncodeToString(evictionFrame(&h, reason)); got != v.Hex {
			t.Errorf("%s:\n got %s\nwant %s", v.Name, got, v.Hex)
		}
	}
	if n != len(want) {
		t.Fatalf("found %d of %d vectors", n, len(want))
	}
}
