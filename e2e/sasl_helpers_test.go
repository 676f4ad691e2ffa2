package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/iggy-kafka/gateway/handlers"
	iscram "github.com/iggy-kafka/gateway/internal/scram"
	"github.com/iggy-kafka/gateway/loop"
)

const (
	saslUser = "alice"
	saslPass = "alice-secret-ü"
	// saslFailDelay is the tests' FailDelay: short, so refusals are quick,
	// but long enough to tell from an immediate answer.
	saslFailDelay = 150 * time.Millisecond
)

var allMechs = []string{handlers.MechPlain, handlers.MechScramSHA256, handlers.MechScramSHA512}

// saslUsersFile writes a users file with alice (both SCRAM mechanisms)
// and bob (SCRAM-SHA-256 only) through the same code as `sasl-user add`.
func saslUsersFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	all := []iscram.Mechanism{iscram.SHA256, iscram.SHA512}
	if err := iscram.SetUser(path, saslUser, saslPass, all, iscram.DefaultIterations); err != nil {
		t.Fatal(err)
	}
	if err := iscram.SetUser(path, "bob", "bob-pw", all[:1], iscram.DefaultIterations); err != nil {
		t.Fatal(err)
	}
	return path
}

// withSasl turns SASL on with the users of saslUsersFile.
func withSasl(t testing.TB, mod ...func(*handlers.SaslConfig)) gwOption {
	u, err := iscram.LoadFile(saslUsersFile(t))
	if err != nil {
		t.Fatal(err)
	}
	sc := &handlers.SaslConfig{Mechanisms: allMechs, Users: u, FailDelay: saslFailDelay, MaxFailDelay: 4 * saslFailDelay}
	for _, m := range mod {
		m(sc)
	}
	return func(h *handlers.Config, _ *loop.Config) { h.Sasl = sc }
}

func kgoMech(mech, user, pass string) sasl.Mechanism {
	switch mech {
	case handlers.MechPlain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	case handlers.MechScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	default:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
}

// kgoLoginErr pings with a fresh client logging in as user/pass and returns
// the error (nil: logged in), and how long it took.
func kgoLoginErr(t *testing.T, addr, mech, user, pass string) (time.Duration, error) {
	t.Helper()
	cl := newClient(t, addr, kgo.SASL(kgoMech(mech, user, pass)), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := cl.Ping(ctx)
	d := time.Since(start)
	cl.Close()
	return d, err
}

func plainToken(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

func (w *wire) handshake(mech string, version int16, corr int32) *kmsg.SASLHandshakeResponse {
	w.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = mech
	return w.roundTrip(req, version, corr).(*kmsg.SASLHandshakeResponse)
}

func (w *wire) authenticate(tok []byte, version int16, corr int32) *kmsg.SASLAuthenticateResponse {
	w.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SASLAuthBytes = tok
	return w.roundTrip(req, version, corr).(*kmsg.SASLAuthenticateResponse)
}

// rawToken sends a bare KIP-43 token and reads the bare answer.
func (w *wire) rawToken(tok []byte) ([]byte, error) {
	w.t.Helper()
	b := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
	w.write(append(b, tok...))
	_ = w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := readFull(w, size[:]); err != nil {
		return nil, err
	}
	out := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := readFull(w, out)
	return out, err
}

func readFull(w *wire, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := w.c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (w *wire) metadataOK(corr int32) {
	w.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	resp := w.roundTrip(req, 9, corr).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 1 {
		w.t.Fatalf("Metadata after login: %d brokers", len(resp.Brokers))
	}
}

// scramClient is the client side of SCRAM for hand-driven exchanges.
type scramClient struct {
	h           func() hash.Hash
	user, pass  string
	nonce       string
	first, srv  string
	salted      []byte
	fullNonce   string
	withoutProf string
}

func newScramClient(mech, user, pass string) *scramClient {
	h := sha256.New
	if mech == handlers.MechScramSHA512 {
		h = sha512.New
	}
	return &scramClient{h: h, user: user, pass: pass, nonce: "fyko+d2lbbFgONRv9qkxdawL"}
}

func (c *scramClient) clientFirst() []byte {
	c.first = "n=" + c.user + ",r=" + c.nonce
	return []byte("n,," + c.first)
}

// clientFinal answers server-first; nonce overrides the echoed nonce when
// not empty, badProof flips a proof bit.
func (c *scramClient) clientFinal(t testing.TB, serverFirst []byte, nonce string, badProof bool) []byte {
	t.Helper()
	c.srv = string(serverFirst)
	var salt []byte
	iters := 0
	for _, a := range strings.Split(c.srv, ",") {
		switch {
		case strings.HasPrefix(a, "r="):
			c.fullNonce = a[2:]
		case strings.HasPrefix(a, "s="):
			salt, _ = base64.StdEncoding.DecodeString(a[2:])
		case strings.HasPrefix(a, "i="):
			iters, _ = strconv.Atoi(a[2:])
		}
	}
	if !strings.HasPrefix(c.fullNonce, c.nonce) || len(salt) == 0 || iters < 4096 {
		t.Fatalf("server-first %q", c.srv)
	}
	if nonce == "" {
		nonce = c.fullNonce
	}
	salted, err := pbkdf2.Key(c.h, c.pass, salt, iters, c.h().Size())
	if err != nil {
		t.Fatal(err)
	}
	c.salted = salted
	c.withoutProf = "c=biws,r=" + nonce
	authMsg := c.first + "," + c.srv + "," + c.withoutProf
	ck := mac(c.h, salted, "Client Key")
	sk := c.h()
	sk.Write(ck)
	sig := mac(c.h, sk.Sum(nil), authMsg)
	proof := make([]byte, len(ck))
	for i := range ck {
		proof[i] = ck[i] ^ sig[i]
	}
	if badProof {
		proof[0] ^= 1
	}
	return []byte(c.withoutProf + ",p=" + base64.StdEncoding.EncodeToString(proof))
}

// serverSignatureOK checks the server-final-message: the server proved it
// knows the credential too.
func (c *scramClient) serverSignatureOK(final []byte) bool {
	authMsg := c.first + "," + c.srv + "," + c.withoutProf
	want := "v=" + base64.StdEncoding.EncodeToString(mac(c.h, mac(c.h, c.salted, "Server Key"), authMsg))
	return string(final) == want
}

func mac(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
