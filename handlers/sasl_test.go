package handlers

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/internal/scram"
)

func saslGateway(t *testing.T, mod ...func(*SaslConfig)) *Gateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	if err := scram.SetUser(path, "alice", "pw", []scram.Mechanism{scram.SHA256, scram.SHA512}, 4096); err != nil {
		t.Fatal(err)
	}
	u, err := scram.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := &SaslConfig{Mechanisms: []string{MechPlain, MechScramSHA256}, Users: u,
		// Long: the test re-runs a parked call at once (Final) rather than
		// waiting, and a PBKDF2 under -race on a loaded machine must not
		// outlast the delay.
		FailDelay: 10 * time.Second, MaxFailDelay: 20 * time.Second}
	for _, m := range mod {
		m(sc)
	}
	return newGateway(t, func(c *Config) { c.Sasl = sc })
}

func saslCall(g *Gateway, s *SaslConn, key, version int16) *Call {
	c := newCall(g, key, version)
	c.Sasl = s
	return c
}

func handshake(t *testing.T, g *Gateway, s *SaslConn, mech string, v int16) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = v, mech
	return roundTrip(t, saslCall(g, s, 17, v), req).(*kmsg.SASLHandshakeResponse)
}

// authenticate runs one SaslAuthenticate as the loop does, re-running a
// parked call at its deadline; it returns the answer, the Go error and how
// long the park asked to wait.
func authenticate(t *testing.T, g *Gateway, s *SaslConn, tok []byte, v int16) (*kmsg.SASLAuthenticateResponse, time.Duration, error) {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = v, tok
	c := saslCall(g, s, 36, v)
	resp, err := run(t, c, req)
	var waited time.Duration
	if resp == nil && err == nil {
		w := c.Parked()
		if w == nil || len(w.Keys) != 0 {
			t.Fatalf("no answer and no park: %+v", w)
		}
		waited = time.Until(w.Until)
		c.Final = true
		resp, err = run(t, c, req)
	}
	if resp == nil {
		return nil, waited, err
	}
	return resp.(*kmsg.SASLAuthenticateResponse), waited, err
}

func TestSaslOff(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	if hs := handshake(t, g, nil, MechPlain, 1); hs.ErrorCode != kerr.IllegalSaslState.Code || len(hs.SupportedMechanisms) != 0 {
		t.Fatalf("handshake with SASL off: %+v", hs)
	}
	if a, _, err := authenticate(t, g, nil, []byte("\x00a\x00b"), 1); err != nil || a.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("authenticate with SASL off: %+v %v", a, err)
	}
}

func TestSaslPlainHandler(t *testing.T) {
	t.Parallel()
	g := saslGateway(t, func(sc *SaslConfig) { sc.SessionLifetime = time.Minute })
	s := NewSaslConn(netip.MustParseAddr("10.0.0.1"))
	if hs := handshake(t, g, s, MechScramSHA512, 1); hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(hs.SupportedMechanisms) != 2 {
		t.Fatalf("disabled mechanism: %+v", hs)
	}
	if hs := handshake(t, g, s, MechPlain, 1); hs.ErrorCode != 0 || s.Raw() {
		t.Fatalf("handshake: %+v", hs)
	}
	a, waited, err := authenticate(t, g, s, []byte("alice\x00alice\x00pw"), 1)
	if err != nil || a.ErrorCode != 0 || waited != 0 || !s.Authenticated() || s.Principal() != "User:alice" {
		t.Fatalf("login: %+v %v waited %v", a, err, waited)
	}
	if a.SessionLifetimeMillis != 60000 || s.Expired(time.Now()) || !s.Expired(time.Now().Add(2*time.Minute)) {
		t.Fatalf("session lifetime %d", a.SessionLifetimeMillis)
	}
	// Re-authentication with another mechanism is refused.
	if hs := handshake(t, g, s, MechScramSHA256, 1); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("re-auth with another mechanism: %+v", hs)
	}

	for name, tok := range map[string]string{"wrong password": "\x00alice\x00nope", "unknown user": "\x00mallory\x00pw"} {
		s := NewSaslConn(netip.MustParseAddr("10.0.0.2"))
		handshake(t, g, s, MechPlain, 1)
		a, waited, err := authenticate(t, g, s, []byte(tok), 1)
		if err != nil || a.ErrorCode != kerr.SaslAuthenticationFailed.Code || *a.ErrorMessage != saslFailMsg {
			t.Fatalf("%s: %+v %v", name, a, err)
		}
		if waited < 5*time.Second || !s.Failed() || s.Authenticated() {
			t.Fatalf("%s: waited %v failed %v", name, waited, s.Failed())
		}
	}
	// SaslAuthenticate without a handshake.
	s = NewSaslConn(netip.MustParseAddr("10.0.0.3"))
	if a, _, _ := authenticate(t, g, s, []byte("\x00alice\x00pw"), 1); a.ErrorCode != kerr.IllegalSaslState.Code || !s.Failed() {
		t.Fatalf("no handshake: %+v", a)
	}
	// Bare-token framing: a failure is a Go error (the loop closes).
	s = NewSaslConn(netip.MustParseAddr("10.0.0.4"))
	if hs := handshake(t, g, s, MechPlain, 0); hs.ErrorCode != 0 || !s.Raw() {
		t.Fatalf("v0 handshake: %+v raw %v", hs, s.Raw())
	}
	if _, _, err := authenticate(t, g, s, []byte("\x00alice\x00nope"), 0); !errors.Is(err, ErrSaslFailed) {
		t.Fatalf("bare failure: %v", err)
	}
}

// The Iggy-style checker: a failure to check is answered at once, not
// booked; a refusal like any other.
func TestSaslPlainChecker(t *testing.T) {
	t.Parallel()
	var fail error
	g := saslGateway(t, func(sc *SaslConfig) {
		sc.Plain = func(ctx context.Context, user, pw string) (bool, error) {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("the checker got no deadline")
			}
			return user == "iggyuser" && pw == "iggypw", fail
		}
	})
	s := NewSaslConn(netip.MustParseAddr("10.0.1.1"))
	handshake(t, g, s, MechPlain, 1)
	if a, _, _ := authenticate(t, g, s, []byte("\x00iggyuser\x00iggypw"), 1); a.ErrorCode != 0 {
		t.Fatalf("login: %+v", a)
	}
	fail = errors.New("iggy down")
	s = NewSaslConn(netip.MustParseAddr("10.0.1.1"))
	handshake(t, g, s, MechPlain, 1)
	a, waited, _ := authenticate(t, g, s, []byte("\x00iggyuser\x00iggypw"), 1)
	if a.ErrorCode != kerr.SaslAuthenticationFailed.Code || waited != 0 || *a.ErrorMessage == saslFailMsg {
		t.Fatalf("store down: %+v waited %v", a, waited)
	}
}

func TestSaslFailureBooks(t *testing.T) {
	t.Parallel()
	sc := &SaslConfig{FailDelay: 100 * time.Millisecond, MaxFailDelay: time.Second, FailWindow: time.Minute}
	sc.init()
	a := netip.MustParseAddr("192.0.2.1")
	now := time.Now()
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, sc.failed(a, now))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v", got)
		}
	}
	if d := sc.failed(a, now.Add(2*time.Minute)); d != 100*time.Millisecond {
		t.Fatalf("after the window: %v", d)
	}
	if d := sc.failed(netip.MustParseAddr("192.0.2.2"), now); d != 100*time.Millisecond {
		t.Fatalf("another address: %v", d)
	}
	for i := 0; len(sc.fails) < maxFailAddrs; i++ {
		sc.failed(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), now)
	}
	if d := sc.failed(netip.MustParseAddr("198.51.100.1"), now); d != time.Second || len(sc.fails) > maxFailAddrs {
		t.Fatalf("books full: %v, %d entries", d, len(sc.fails))
	}
}
