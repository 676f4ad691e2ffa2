package handlers

// SASL state: the gateway-wide configuration (which mechanisms, where
// credentials come from, how failures are slowed) and the per-connection
// exchange. The loop owns one SaslConn per connection on a SASL listener
// and passes it in Call.Sasl; the handlers of keys 17 and 36 drive it.
//
// Concurrency: the loop never runs a SASL request (or, before
// authentication, any request) while another request of the same
// connection is in flight, so the exchange fields are touched by one
// goroutine at a time with a happens-before edge between them (the job
// queue, the reply ring). Only the atomics are read by the loop while a
// worker may write them.

import (
	"context"
	"crypto/rand"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/scram"
)

// Mechanism names, as Kafka spells them.
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
)

// ErrSaslFailed is returned by the SaslAuthenticate handler when the
// exchange runs in KIP-43 raw framing (after a v0 SaslHandshake), where
// there is no error field: the loop closes the connection with its SASL
// close reason, as a Kafka broker does.
var ErrSaslFailed = errors.New("handlers: SASL authentication failed")

// PlainChecker checks a PLAIN user name and password. ok=false is a wrong
// name or password (the two must not be told apart); err is a failure to
// check at all (the credential store is unreachable). It runs on a worker
// and must honour ctx's deadline.
type PlainChecker func(ctx context.Context, user, password string) (ok bool, err error)

// CredentialStore looks up SCRAM credentials. Any goroutine.
type CredentialStore interface {
	Lookup(user string, mech scram.Mechanism) (scram.Credential, bool)
}

// SaslConfig turns SASL on for the listener. Set Config.Sasl before the
// gateway serves; read-only afterwards except for the failure books.
type SaslConfig struct {
	// Mechanisms are the enabled mechanisms, in the order SaslHandshake
	// lists them.
	Mechanisms []string
	// Users holds SCRAM credentials; PLAIN is checked against them too
	// when Plain is nil. nil: no users (every login fails).
	Users CredentialStore
	// Plain, when set, checks PLAIN instead of Users (the Iggy backend:
	// a login to Iggy as that user).
	Plain PlainChecker
	// Permissions, when set with Plain (the Iggy backend), are the Iggy
	// permissions of the user a PLAIN client logged in as: they bound what
	// that client may do to topics beside the ACLs (authz.go). SCRAM and
	// certificate principals are not Iggy users: ACLs only.
	Permissions bridge.PrincipalPermissions
	// PlainTimeout bounds one Plain call; default 5s.
	PlainTimeout time.Duration
	// Secret keys the fake salts of unknown users; random when empty.
	Secret []byte
	// SessionLifetime is KIP-368's session lifetime: 0 means sessions
	// never expire. A connection whose session expired may send only
	// SaslHandshake/SaslAuthenticate (re-authentication); anything else
	// closes it.
	SessionLifetime time.Duration
	// MaxAuthBytes bounds one SaslAuthenticate token; default 4096.
	MaxAuthBytes int
	// FailDelay is how long after it began a failed login is answered
	// (so every failure takes the same time); each further failure from
	// the same address within FailWindow doubles it, up to MaxFailDelay.
	// Defaults 200ms, 5s, 1m.
	FailDelay, MaxFailDelay, FailWindow time.Duration

	initOnce sync.Once
	logFail  rateLog
	failMu   sync.Mutex
	fails    map[netip.Addr]failEntry
}

type failEntry struct {
	n    int
	last time.Time
}

// maxFailAddrs bounds the failure books; beyond it, an address not yet in
// them is treated as having failed often (the slowest answer), which is
// bounded and errs against the attacker.
const maxFailAddrs = 16384

func (sc *SaslConfig) init() {
	sc.initOnce.Do(func() {
		if sc.PlainTimeout <= 0 {
			sc.PlainTimeout = 5 * time.Second
		}
		if sc.MaxAuthBytes <= 0 {
			sc.MaxAuthBytes = 4096
		}
		if sc.FailDelay <= 0 {
			sc.FailDelay = 200 * time.Millisecond
		}
		if sc.MaxFailDelay < sc.FailDelay {
			sc.MaxFailDelay = 5 * time.Second
			if sc.MaxFailDelay < sc.FailDelay {
				sc.MaxFailDelay = sc.FailDelay
			}
		}
		if sc.FailWindow <= 0 {
			sc.FailWindow = time.Minute
		}
		if len(sc.Secret) == 0 {
			sc.Secret = make([]byte, 32)
			_, _ = rand.Read(sc.Secret)
		}
		sc.fails = make(map[netip.Addr]failEntry)
	})
}

// Enabled reports whether mech is on.
func (sc *SaslConfig) Enabled(mech string) bool {
	for _, m := range sc.Mechanisms {
		if m == mech {
			return true
		}
	}
	return false
}

// failed books a failure from addr at now and returns how long after its
// start the failure is to be answered. Any goroutine.
func (sc *SaslConfig) failed(addr netip.Addr, now time.Time) time.Duration {
	sc.failMu.Lock()
	defer sc.failMu.Unlock()
	e, ok := sc.fails[addr]
	if ok && now.Sub(e.last) > sc.FailWindow {
		e = failEntry{}
	}
	if !ok && len(sc.fails) >= maxFailAddrs {
		for a, x := range sc.fails {
			if now.Sub(x.last) > sc.FailWindow {
				delete(sc.fails, a)
			}
		}
		if len(sc.fails) >= maxFailAddrs {
			return sc.MaxFailDelay
		}
	}
	e.n++
	e.last = now
	sc.fails[addr] = e
	d := sc.FailDelay
	for i := 1; i < e.n && d < sc.MaxFailDelay; i++ {
		d *= 2
	}
	return min(d, sc.MaxFailDelay)
}

// SaslConn is one connection's SASL state. The loop creates it with
// NewSaslConn when the gateway has SASL on.
type SaslConn struct {
	addr netip.Addr

	// Read by the loop at any time; written by the handlers.
	authenticated atomic.Bool
	raw           atomic.Bool  // after a v0 SaslHandshake: the next frames are bare tokens
	failedFlag    atomic.Bool  // a login failed: the next request closes the connection
	expires       atomic.Int64 // unix nanos the session ends; 0: never
	// iggyUser: the login was PLAIN checked by Plain with Permissions
	// set, so the principal is an Iggy user (authz.go).
	iggyUser atomic.Bool

	// One goroutine at a time (see the file comment).
	mech      string
	handshake bool // a SaslHandshake chose mech and no exchange finished since
	scram     *scram.Server
	principal string
	// token: the login was a delegation token's (SCRAM tokenauth=true);
	// the principal is the token's owner, who may then not use the token
	// keys (Kafka's allowTokenRequests). tokenAuth, tokenExpiry (Unix ms)
	// and tokenOwner describe the token exchange now running.
	token       bool
	tokenAuth   bool
	tokenExpiry int64
	tokenOwner  string
	start       time.Time // when the attempt now running began (its first token)
	// pending is the failure answer of a parked SaslAuthenticate,
	// released at its delay.
	pending *saslFailure
}

type saslFailure struct {
	msg string
}

// NewSaslConn returns the state of a new connection from addr (the
// per-address key failures are booked under).
func NewSaslConn(addr netip.Addr) *SaslConn { return &SaslConn{addr: addr} }

// Authenticated reports that a login succeeded on this connection.
// Any goroutine.
func (s *SaslConn) Authenticated() bool { return s.authenticated.Load() }

// Raw reports that the next frame is a bare SASL token (KIP-43 framing
// after a v0 SaslHandshake), not a Kafka request. Any goroutine.
func (s *SaslConn) Raw() bool { return s.raw.Load() }

// bareSaslToken is SaslAuthenticate's Spec.BareToken: a bare token is the
// auth bytes of a v0 request, aliasing token. Any goroutine.
func bareSaslToken(token []byte) kmsg.Request {
	return &kmsg.SASLAuthenticateRequest{SASLAuthBytes: token}
}

// bareSaslReply is SaslAuthenticate's Spec.BareReply: the auth bytes of
// its answer, which go back bare. Any goroutine.
func bareSaslReply(resp kmsg.Response) []byte {
	if r, ok := resp.(*kmsg.SASLAuthenticateResponse); ok {
		return r.SASLAuthBytes
	}
	return nil
}

// Failed reports that a login failed on this connection; the loop closes
// it on its next request. Any goroutine.
func (s *SaslConn) Failed() bool { return s.failedFlag.Load() }

// Expired reports that the authenticated session's lifetime (KIP-368)
// ended before now. Any goroutine.
func (s *SaslConn) Expired(now time.Time) bool {
	e := s.expires.Load()
	return e != 0 && now.UnixNano() > e
}

// Principal is "User:name" once authenticated, else "". The goroutine
// that runs the connection's requests.
func (s *SaslConn) Principal() string { return s.principal }

// rateLog lets through at most 10 lines a second (failure logs must not
// become a way to flood the log). Any goroutine.
type rateLog struct {
	mu    sync.Mutex
	sec   int64
	count int
}

func (r *rateLog) allow(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := now.Unix(); s != r.sec {
		r.sec, r.count = s, 0
	}
	r.count++
	return r.count <= 10
}
