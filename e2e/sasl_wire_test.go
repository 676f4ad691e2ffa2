package e2e

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
)

// The pre-authentication rules on the wire: ApiVersions is answered, any
// other key closes the connection; an unknown mechanism is refused with
// the list; SaslAuthenticate before SaslHandshake is ILLEGAL_SASL_STATE.
func TestSaslWireBeforeAuth(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withSasl(t))
	apiVersionsOK(t, gw.Addr)

	w := dialWire(t, gw.Addr)
	w.write(frameOf(kmsg.NewPtrMetadataRequest(), 9, 1))
	w.expectClosed("Metadata before authentication")

	w = dialWire(t, gw.Addr)
	hs := w.handshake("GSSAPI", 1, 1)
	if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hs.SupportedMechanisms, ",") != strings.Join(allMechs, ",") {
		t.Fatalf("GSSAPI handshake: error %d, mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
	}
	w.write(frameOf(kmsg.NewPtrMetadataRequest(), 9, 2))
	w.expectClosed("Metadata after a refused handshake")

	w = dialWire(t, gw.Addr)
	if a := w.authenticate(plainToken(saslUser, saslPass), 1, 1); a.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslAuthenticate before SaslHandshake: error %d", a.ErrorCode)
	}
	w.write(frameOf(kmsg.NewPtrMetadataRequest(), 9, 2))
	w.expectClosed("Metadata after SaslAuthenticate without handshake")

	// A frame over the pre-authentication cap closes before it is read.
	w = dialWire(t, gw.Addr)
	w.write(binary.BigEndian.AppendUint32(nil, 1<<20))
	w.expectClosed("a 1 MiB frame before authentication")
	apiVersionsOK(t, gw.Addr)
	if !strings.Contains(gw.Log.String(), "reason=sasl_required") || !strings.Contains(gw.Log.String(), "reason=sasl_frame_size") {
		t.Errorf("the close reasons sasl_required and sasl_frame_size are not logged")
	}
}

// KIP-43 framing: a v0 handshake, then bare tokens, for PLAIN and SCRAM;
// the server's SCRAM signature verifies; afterwards Kafka requests work.
// A bare PLAIN token with a wrong password closes the connection.
func TestSaslWireRawV0(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withSasl(t))

	w := dialWire(t, gw.Addr)
	if hs := w.handshake(handlers.MechPlain, 0, 1); hs.ErrorCode != 0 {
		t.Fatalf("handshake v0: error %d", hs.ErrorCode)
	}
	out, err := w.rawToken(plainToken(saslUser, saslPass))
	if err != nil || len(out) != 0 {
		t.Fatalf("bare PLAIN token: %q, %v", out, err)
	}
	w.metadataOK(2)

	for _, mech := range []string{handlers.MechScramSHA256, handlers.MechScramSHA512} {
		w := dialWire(t, gw.Addr)
		if hs := w.handshake(mech, 0, 1); hs.ErrorCode != 0 {
			t.Fatalf("%s handshake v0: error %d", mech, hs.ErrorCode)
		}
		sc := newScramClient(mech, saslUser, saslPass)
		first, err := w.rawToken(sc.clientFirst())
		if err != nil {
			t.Fatalf("%s bare client-first: %v", mech, err)
		}
		final, err := w.rawToken(sc.clientFinal(t, first, "", false))
		if err != nil || !sc.serverSignatureOK(final) {
			t.Fatalf("%s bare client-final: %q, %v", mech, final, err)
		}
		w.metadataOK(2)
	}

	w = dialWire(t, gw.Addr)
	w.handshake(handlers.MechPlain, 0, 1)
	b := binary.BigEndian.AppendUint32(nil, uint32(len(plainToken(saslUser, "wrong"))))
	w.write(append(b, plainToken(saslUser, "wrong")...))
	w.expectClosed("a bare PLAIN token with a wrong password")
	if !strings.Contains(gw.Log.String(), "reason=sasl_failed") {
		t.Errorf("close reason sasl_failed not logged")
	}
}

// Hostile SCRAM and PLAIN exchanges over SaslAuthenticate: each gets
// SASL_AUTHENTICATION_FAILED with the one message, the connection closes
// on its next request, and the gateway keeps serving others. Repeated
// failures from one address are answered later and later, up to the cap.
func TestSaslWireHostile(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, withSasl(t))
	refused := func(what string, w *wire, a *kmsg.SASLAuthenticateResponse) {
		t.Helper()
		if a.ErrorCode != kerr.SaslAuthenticationFailed.Code || a.ErrorMessage == nil ||
			*a.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Errorf("%s: error %d message %v, want SASL_AUTHENTICATION_FAILED", what, a.ErrorCode, a.ErrorMessage)
		}
		w.write(frameOf(kmsg.NewPtrMetadataRequest(), 9, 99))
		w.expectClosed(what + ", then Metadata")
		apiVersionsOK(t, gw.Addr)
	}
	scramStart := func(mech string) (*wire, *scramClient, []byte) {
		w := dialWire(t, gw.Addr)
		if hs := w.handshake(mech, 1, 1); hs.ErrorCode != 0 {
			t.Fatalf("handshake: %d", hs.ErrorCode)
		}
		sc := newScramClient(mech, saslUser, saslPass)
		a := w.authenticate(sc.clientFirst(), 2, 2)
		if a.ErrorCode != 0 {
			t.Fatalf("client-first: error %d", a.ErrorCode)
		}
		return w, sc, a.SASLAuthBytes
	}

	// The happy path over v2 first, with the server's signature checked.
	w, sc, first := scramStart(handlers.MechScramSHA512)
	a := w.authenticate(sc.clientFinal(t, first, "", false), 2, 3)
	if a.ErrorCode != 0 || !sc.serverSignatureOK(a.SASLAuthBytes) {
		t.Fatalf("SCRAM-SHA-512 over v2: error %d, server-final %q", a.ErrorCode, a.SASLAuthBytes)
	}
	w.metadataOK(4)

	w, sc, first = scramStart(handlers.MechScramSHA256)
	refused("SCRAM with a wrong nonce", w, w.authenticate(sc.clientFinal(t, first, sc.nonce+"forged", false), 2, 3))
	w, sc, first = scramStart(handlers.MechScramSHA256)
	refused("SCRAM with a wrong proof", w, w.authenticate(sc.clientFinal(t, first, "", true), 2, 3))
	w, _, _ = scramStart(handlers.MechScramSHA256)
	refused("SCRAM with a garbage final", w, w.authenticate([]byte("c=biws,p=!!!"), 2, 3))

	for name, tok := range map[string][]byte{
		"SCRAM garbage client-first":       []byte("hello"),
		"SCRAM with channel binding":       []byte("p=tls-unique,,n=alice,r=abc"),
		"SCRAM with a mandatory extension": []byte("n,,m=x,n=alice,r=abc"),
		"SCRAM with a bad name escape":     []byte("n,,n=al=ice,r=abc"),
		"oversized SCRAM token":            bytes.Repeat([]byte("a"), 5000),
	} {
		w := dialWire(t, gw.Addr)
		w.handshake(handlers.MechScramSHA256, 1, 1)
		refused(name, w, w.authenticate(tok, 1, 2))
	}
	for name, tok := range map[string][]byte{
		"PLAIN without separators":   []byte("alice"),
		"PLAIN with another authzid": []byte("bob\x00alice\x00" + saslPass),
		"oversized PLAIN token":      append(plainToken(saslUser, saslPass), bytes.Repeat([]byte("x"), 5000)...),
	} {
		w := dialWire(t, gw.Addr)
		w.handshake(handlers.MechPlain, 1, 1)
		refused(name, w, w.authenticate(tok, 1, 2))
	}
	if strings.Contains(gw.Log.String(), saslPass) {
		t.Errorf("the gateway log contains a password")
	}
}

// Failures from one address are answered later each time (doubling from
// FailDelay, capped at MaxFailDelay), an unknown user exactly like a wrong
// password.
func TestSaslFailuresSlowed(t *testing.T) {
	// Serial: times each refusal against its delay.
	gw := startGateway(t, withSasl(t))
	var took []time.Duration
	for i, user := range []string{saslUser, "nobody", saslUser, "nobody"} {
		w := dialWire(t, gw.Addr)
		w.handshake(handlers.MechPlain, 1, 1)
		start := time.Now()
		a := w.authenticate(plainToken(user, "wrong"), 1, 2)
		took = append(took, time.Since(start))
		if a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("attempt %d: error %d", i, a.ErrorCode)
		}
	}
	want := []time.Duration{saslFailDelay, 2 * saslFailDelay, 4 * saslFailDelay, 4 * saslFailDelay}
	for i := range took {
		if took[i] < want[i] || took[i] > want[i]+2*time.Second {
			t.Errorf("attempt %d answered after %v, want %v (a little more under load)", i, took[i], want[i])
		}
	}
	// A success is not delayed.
	w := dialWire(t, gw.Addr)
	w.handshake(handlers.MechPlain, 1, 1)
	start := time.Now()
	if a := w.authenticate(plainToken(saslUser, saslPass), 1, 2); a.ErrorCode != 0 {
		t.Fatalf("login: error %d", a.ErrorCode)
	}
	if d := time.Since(start); d >= saslFailDelay {
		t.Logf("a good login took %v (machine loaded?)", d)
	}
}

// KIP-368: SaslAuthenticate v1 tells the session lifetime; after it a
// request other than re-authentication closes the connection; a
// re-authentication extends it; franz-go re-authenticates on its own and
// keeps producing past several lifetimes.
func TestSaslSessionLifetime(t *testing.T) {
	// Serial: sleeps across 1.5 s session lifetimes that a stalled neighbour would stretch.
	const life = 1500 * time.Millisecond
	gw := startGateway(t, withSasl(t, func(sc *handlers.SaslConfig) { sc.SessionLifetime = life }))

	login := func(w *wire, corr int32) {
		t.Helper()
		if hs := w.handshake(handlers.MechPlain, 1, corr); hs.ErrorCode != 0 {
			t.Fatalf("handshake: %d", hs.ErrorCode)
		}
		a := w.authenticate(plainToken(saslUser, saslPass), 1, corr+1)
		if a.ErrorCode != 0 || a.SessionLifetimeMillis != life.Milliseconds() {
			t.Fatalf("login: error %d, session_lifetime_ms %d", a.ErrorCode, a.SessionLifetimeMillis)
		}
	}
	w := dialWire(t, gw.Addr)
	login(w, 1)
	w.metadataOK(3)
	time.Sleep(life + 300*time.Millisecond) // past the session's end: the expiry is what is tested
	w.write(frameOf(kmsg.NewPtrMetadataRequest(), 9, 4))
	w.expectClosed("Metadata after the session expired")

	w = dialWire(t, gw.Addr)
	login(w, 1)
	time.Sleep(life * 2 / 3) // into the session, then across its end
	login(w, 3)              // re-authentication
	time.Sleep(life * 2 / 3)
	w.metadataOK(5) // past the first session's end, within the second's

	// Re-authenticating as someone else is refused.
	w2 := dialWire(t, gw.Addr)
	login(w2, 1)
	w2.handshake(handlers.MechPlain, 1, 3)
	if a := w2.authenticate(plainToken("bob", "bob-pw"), 1, 4); a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as bob: error %d", a.ErrorCode)
	}

	before := strings.Count(gw.Log.String(), "principal=User:alice")
	cl := clientWithTopic(t, gw.Addr, "sasl-reauth", 1, kgo.SASL(kgoMech(handlers.MechScramSHA256, saslUser, saslPass)))
	// Produce for three lifetimes (a load over a set time, not a wait).
	deadline := time.Now().Add(3 * life)
	n := 0
	for time.Now().Before(deadline) {
		produceAll(t, cl, testRecords("sasl-reauth", 1))
		n++
		time.Sleep(100 * time.Millisecond)
	}
	if c := strings.Count(gw.Log.String(), "principal=User:alice") - before; c < 3 {
		t.Errorf("%d logins of alice logged over 3 session lifetimes, want franz-go to re-authenticate (>= 3)", c)
	}
	t.Logf("produced %d times over %v", n, 3*life)
}
