// Package scram is the server side of SCRAM-SHA-256 and SCRAM-SHA-512
// (RFC 5802, RFC 7677) as Kafka uses them (KIP-84), the credential
// derivation shared with PLAIN, and the users file that holds salted
// credentials. It is pure: no I/O except the users file functions, and no
// global state. Every function may run on any goroutine.
//
// Not implemented, as Kafka does not: channel binding (a client asking for
// it with "p=" is refused), SASLprep of names and passwords (the UTF-8 bytes
// are used as they are, as Kafka's ScramFormatter does).
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
)

// Mechanism is one SCRAM hash.
type Mechanism uint8

const (
	SHA256 Mechanism = iota + 1
	SHA512
)

// Kafka's bounds on the iteration count (ScramMechanism.minIterations and
// its 16384 cap in kafka-configs).
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 4096
	saltLen           = 32
)

// ParseMechanism maps a Kafka mechanism name to a Mechanism.
func ParseMechanism(name string) (Mechanism, bool) {
	switch name {
	case "SCRAM-SHA-256":
		return SHA256, true
	case "SCRAM-SHA-512":
		return SHA512, true
	}
	return 0, false
}

func (m Mechanism) String() string {
	switch m {
	case SHA256:
		return "SCRAM-SHA-256"
	case SHA512:
		return "SCRAM-SHA-512"
	}
	return "SCRAM-unknown"
}

func (m Mechanism) newHash() func() hash.Hash {
	if m == SHA512 {
		return sha512.New
	}
	return sha256.New
}

// Credential is what the server keeps for one user and mechanism: never the
// password, only the salt, the iteration count and the two keys derived
// from the salted password (RFC 5802 section 3).
type Credential struct {
	Mech       Mechanism
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// Derive computes the credential of password with salt and iterations.
// Costs one PBKDF2 run (iterations HMACs): call it on a worker, never on an
// event loop.
func Derive(m Mechanism, password string, salt []byte, iterations int) (Credential, error) {
	if iterations < 1 {
		return Credential{}, errors.New("scram: iterations must be positive")
	}
	h := m.newHash()
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return Credential{}, err
	}
	return fromSalted(m, salted, salt, iterations), nil
}

// FromSalted is the credential of a salted password a client computed
// itself (Kafka's AlterUserScramCredentials sends SaltedPassword =
// Hi(password, salt, iterations), never the password). Cheap: two HMACs
// and a hash. ok is false when salted is not the hash's size.
func FromSalted(m Mechanism, salted, salt []byte, iterations int) (Credential, bool) {
	if len(salted) != m.newHash()().Size() {
		return Credential{}, false
	}
	return fromSalted(m, salted, salt, iterations), true
}

// fromSalted derives the stored and server keys of a salted password of
// the hash's size (RFC 5802: StoredKey = H(HMAC(salted, "Client Key")),
// ServerKey = HMAC(salted, "Server Key")).
func fromSalted(m Mechanism, salted, salt []byte, iterations int) Credential {
	h := m.newHash()
	stored := h()
	stored.Write(hmacSum(h, salted, []byte("Client Key")))
	return Credential{
		Mech:       m,
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  stored.Sum(nil),
		ServerKey:  hmacSum(h, salted, []byte("Server Key")),
	}
}

// Verify reports whether password yields c, in time independent of where
// the keys differ. Costs one PBKDF2 run.
func (c Credential) Verify(password string) bool {
	d, err := Derive(c.Mech, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(d.StoredKey, c.StoredKey) == 1
}

// Fake is the credential presented for a user that does not exist, so the
// exchange looks and costs the same as for a real user with a wrong
// password: its salt is derived from secret and the name (stable across
// attempts, as a real user's would be), and its keys match no password
// anyone knows.
func Fake(m Mechanism, secret []byte, name string) Credential {
	h := m.newHash()
	mac := func(label string) []byte {
		x := hmac.New(h, secret)
		x.Write([]byte(label))
		x.Write([]byte{0})
		x.Write([]byte(name))
		return x.Sum(nil)
	}
	return Credential{
		Mech:       m,
		Salt:       mac("salt")[:saltLen],
		Iterations: DefaultIterations,
		StoredKey:  mac("stored"),
		ServerKey:  mac("server"),
	}
}

func hmacSum(h func() hash.Hash, key, msg []byte) []byte {
	x := hmac.New(h, key)
	x.Write(msg)
	return x.Sum(nil)
}

// Errors of the exchange. The gateway answers every one of them with the
// same SASL_AUTHENTICATION_FAILED and message, so a client learns nothing
// about which check failed; the kind is logged at debug.
var (
	ErrMalformed      = errors.New("scram: malformed message")
	ErrChannelBinding = errors.New("scram: channel binding is not supported")
	ErrExtension      = errors.New("scram: unsupported mandatory extension")
	ErrAuthzid        = errors.New("scram: authorization id differs from the user name")
	ErrNonce          = errors.New("scram: nonce does not match")
	ErrBinding        = errors.New("scram: channel-binding data does not match the header")
	ErrProof          = errors.New("scram: proof does not verify")
	ErrState          = errors.New("scram: message out of order")
)

// ClientFirst is a parsed client-first-message.
type ClientFirst struct {
	GS2Header string // "n,," or "y,," (with a=authzid when given)
	Authzid   string
	User      string // unescaped
	Nonce     string
	Bare      string // client-first-message-bare, for the AuthMessage
	// TokenAuth is Kafka's tokenauth=true extension (delegation tokens),
	// which the gateway does not serve.
	TokenAuth bool
}

// ParseClientFirst parses gs2-header client-first-message-bare
// (RFC 5802 section 7). It never panics and allocates at most a few
// strings the size of msg.
func ParseClientFirst(msg []byte) (ClientFirst, error) {
	var cf ClientFirst
	s := string(msg)
	// gs2-header = gs2-cbind-flag "," [ authzid ] ","
	if len(s) < 3 {
		return cf, ErrMalformed
	}
	switch s[0] {
	case 'n', 'y':
		if s[1] != ',' {
			return cf, ErrMalformed
		}
	case 'p':
		return cf, ErrChannelBinding
	default:
		return cf, ErrMalformed
	}
	rest := s[2:]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return cf, ErrMalformed
	}
	if az := rest[:comma]; az != "" {
		if !strings.HasPrefix(az, "a=") {
			return cf, ErrMalformed
		}
		name, ok := unescapeName(az[2:])
		if !ok || name == "" {
			return cf, ErrMalformed
		}
		cf.Authzid = name
	}
	cf.GS2Header = s[:2+comma+1]
	cf.Bare = rest[comma+1:]
	// client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
	attrs := strings.Split(cf.Bare, ",")
	if len(attrs) < 2 {
		return cf, ErrMalformed
	}
	if strings.HasPrefix(attrs[0], "m=") {
		return cf, ErrExtension
	}
	if !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return cf, ErrMalformed
	}
	user, ok := unescapeName(attrs[0][2:])
	if !ok || user == "" {
		return cf, ErrMalformed
	}
	cf.User = user
	cf.Nonce = attrs[1][2:]
	if !validNonce(cf.Nonce) {
		return cf, ErrMalformed
	}
	for _, ext := range attrs[2:] {
		k, v, ok := strings.Cut(ext, "=")
		if !ok || k == "" {
			return cf, ErrMalformed
		}
		if k == "tokenauth" && v == "true" {
			cf.TokenAuth = true
		}
	}
	if cf.Authzid != "" && cf.Authzid != cf.User {
		return cf, ErrAuthzid
	}
	return cf, nil
}

// ClientFinal is a parsed client-final-message.
type ClientFinal struct {
	Binding      string // c= value, base64 of the gs2 header
	Nonce        string
	Proof        []byte
	WithoutProof string // client-final-message-without-proof, for the AuthMessage
}

// ParseClientFinal parses channel-binding "," nonce ["," extensions] ","
// proof (RFC 5802 section 7). It never panics.
func ParseClientFinal(msg []byte) (ClientFinal, error) {
	var cf ClientFinal
	s := string(msg)
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return cf, ErrMalformed
	}
	cf.WithoutProof = s[:i]
	proof, err := base64.StdEncoding.DecodeString(s[i+3:])
	if err != nil || len(proof) == 0 {
		return cf, ErrMalformed
	}
	cf.Proof = proof
	attrs := strings.Split(cf.WithoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return cf, ErrMalformed
	}
	cf.Binding = attrs[0][2:]
	cf.Nonce = attrs[1][2:]
	for _, ext := range attrs[2:] {
		if k, _, ok := strings.Cut(ext, "="); !ok || k == "" {
			return cf, ErrMalformed
		}
	}
	return cf, nil
}

// validNonce: printable ASCII except ',' (RFC 5802 "printable"), 1 to 256
// bytes (a bound of ours; clients send 20 to 48).
func validNonce(n string) bool {
	if n == "" || len(n) > 256 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// unescapeName undoes saslname escaping: "=2C" is ',', "=3D" is '='; any
// other '=' or a bare ',' is malformed.
func unescapeName(s string) (string, bool) {
	if !strings.ContainsAny(s, "=,") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',':
			return "", false
		case '=':
			if i+3 > len(s) {
				return "", false
			}
			switch s[i+1 : i+3] {
			case "2C":
				b.WriteByte(',')
			case "3D":
				b.WriteByte('=')
			default:
				return "", false
			}
			i += 2
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), true
}

// EscapeName is the client side of unescapeName (tests, tools).
func EscapeName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// Server is one SCRAM exchange on the server: First answers the
// client-first-message, Final checks the client-final-message. Owned by one
// goroutine at a time.
type Server struct {
	mech      Mechanism
	cred      Credential
	first     ClientFirst
	nonce     string // client nonce + server nonce
	serverMsg string // server-first-message
	step      uint8
}

// NewServer starts an exchange for m.
func NewServer(m Mechanism) *Server { return &Server{mech: m} }

// Mechanism is the exchange's hash.
func (s *Server) Mechanism() Mechanism { return s.mech }

// User is the name from the client-first-message ("" before it).
func (s *Server) User() string { return s.first.User }

// First takes the parsed client-first-message, the user's credential (a
// Fake one when the user is unknown: the answer must not tell) and fresh
// random bytes for the server nonce, and returns the server-first-message.
func (s *Server) First(cf ClientFirst, cred Credential, serverNonce []byte) ([]byte, error) {
	if s.step != 0 {
		return nil, ErrState
	}
	s.step = 1
	s.first = cf
	s.cred = cred
	s.nonce = cf.Nonce + base64.RawURLEncoding.EncodeToString(serverNonce)
	s.serverMsg = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) +
		",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverMsg), nil
}

// Final checks the client-final-message and returns the server-final-message
// (v=ServerSignature). The check costs two HMACs and a hash whether or not
// it passes, and compares in constant time.
func (s *Server) Final(msg []byte) ([]byte, error) {
	if s.step != 1 {
		return nil, ErrState
	}
	s.step = 2
	cf, err := ParseClientFinal(msg)
	if err != nil {
		return nil, err
	}
	h := s.mech.newHash()
	authMsg := []byte(s.first.Bare + "," + s.serverMsg + "," + cf.WithoutProof)
	sig := hmacSum(h, s.cred.StoredKey, authMsg)
	ok := 1
	if len(cf.Proof) != len(sig) {
		ok = 0
		cf.Proof = make([]byte, len(sig))
	}
	clientKey := make([]byte, len(sig))
	subtle.XORBytes(clientKey, cf.Proof, sig)
	sum := h()
	sum.Write(clientKey)
	ok &= subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey)
	// The nonce must end with the one we sent, as Kafka checks it
	// (ScramSaslServer: endsWith): librdkafka sends its client nonce
	// again in front of it. The proof covers the message as sent.
	nonceOK := strings.HasSuffix(cf.Nonce, s.nonce)
	if len(cf.Nonce) >= len(s.nonce) {
		ok &= subtle.ConstantTimeCompare([]byte(cf.Nonce[len(cf.Nonce)-len(s.nonce):]), []byte(s.nonce))
	} else {
		ok = 0
	}
	ok &= subtle.ConstantTimeCompare([]byte(cf.Binding), []byte(base64.StdEncoding.EncodeToString([]byte(s.first.GS2Header))))
	if ok != 1 {
		switch {
		case !nonceOK:
			return nil, ErrNonce
		case cf.Binding != base64.StdEncoding.EncodeToString([]byte(s.first.GS2Header)):
			return nil, ErrBinding
		}
		return nil, ErrProof
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacSum(h, s.cred.ServerKey, authMsg))), nil
}
