// Package handlers holds one file per Kafka API key, named by zero-padded
// key (00_produce.go, 18_api_versions.go), and the registry that both the
// dispatch and the ApiVersions response are built from, so advertised
// versions cannot drift from implemented ones.
//
// Handlers never see gnet. A handler turns a decoded kmsg request into a
// kmsg response. Kafka outcomes travel as error codes inside the response
// (kerr names, never numeric literals); a Go error returned by a handler
// closes the connection.
package handlers

import (
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// HandleFunc answers one request. It returns a nil response and nil error
// when no reply is to be sent (acks=0 Produce) or when the call parked
// itself (see Call.Park).
type HandleFunc func(c *Call, req kmsg.Request) (kmsg.Response, error)

// Spec is one API key the gateway serves. Besides the handler it carries
// what the event loop must know of a key before it decodes a request, so
// the loop asks the Spec and never tests key numbers.
type Spec struct {
	Key int16
	// MinVersion and MaxVersion are what ApiVersions advertises and what
	// the version firewall accepts.
	MinVersion, MaxVersion int16
	// Inline handlers are cheap and never block: the event loop runs them
	// straight from the peeked frame. Others go to the worker pool.
	Inline bool
	// Queued, on an Inline key, reports from the undecoded body of a
	// request at version that this request may block and goes to the
	// worker pool instead (InitProducerId with a transactional id, whose
	// answer is stored first). Same rules as NoReply: loop, peeked bytes,
	// no keeping, blocking or allocating. nil: always inline.
	Queued func(body []byte, version int16) bool
	// Gated, when set, says whether a gateway with cfg serves the key (a
	// feature behind a flag: transactions): ApiVersions lists it only
	// then, and otherwise a request closes the connection, as one of a
	// key the gateway does not serve.
	Gated  func(cfg *Config) bool
	Handle HandleFunc

	// NoReply reports, from the undecoded body of a request at version
	// (the frame from the header's BodyOffset on), that the request gets
	// no reply (Produce with acks=0): the loop gives it no place in the
	// connection's reply order, so later replies never wait for it. It
	// runs on the loop over peeked bytes: it must not keep them, block or
	// allocate. nil: every request is answered.
	NoReply func(body []byte, version int16) bool
	// LargeReply says replies can run to MiB (Fetch, ShareFetch): they are encoded
	// into the pool of large buffers, since bytebufferpool drops buffers
	// above the size class it calibrated on small replies.
	LargeReply bool
	// TooNew answers a request whose version is above MaxVersion, in place
	// of closing the connection: ApiVersions answers v0 with
	// UNSUPPORTED_VERSION and its key list, so the client asks again with
	// a version we list (KIP-511). The request is not decoded. It runs on
	// the loop, so it must not block. nil: a too-new version closes.
	TooNew func(c *Call) kmsg.Response

	// On a SASL listener (sasl.go). BeforeLogin keys may be sent before
	// the login (ApiVersions, which clients ask first). LoginStep keys are
	// the login itself (SaslHandshake, SaslAuthenticate): allowed before
	// it, the only keys allowed once the session expired
	// (re-authentication, KIP-368), and run alone on their connection,
	// since their outcome decides what the next frame may be.
	BeforeLogin, LoginStep bool
	// BareToken, on the one key that carries SASL tokens, reads a bare
	// token of KIP-43 framing (the frames after a v0 SaslHandshake, with
	// no Kafka header) as a v0 request of this key; the request may
	// alias token. BareReply takes the token to send back, bare, out of
	// the handler's response. Both or neither are set.
	BareToken func(token []byte) kmsg.Request
	BareReply func(resp kmsg.Response) []byte
}

// errUnknownKey closes a connection that sent a key the gateway's
// configuration does not serve (Spec.Gated).
var errUnknownKey = errors.New("handlers: key not served")

var (
	specs = map[int16]*Spec{}
	// bareToken is the spec with BareToken set (BareTokenSpec).
	bareToken *Spec
)

// typed makes a HandleFunc of a handler of one request type, handed the
// request as its kmsg type and a fresh response of the request's version.
func typed[Q kmsg.Request, R kmsg.Response](fn func(c *Call, req Q, resp R) (kmsg.Response, error)) HandleFunc {
	return func(c *Call, req kmsg.Request) (kmsg.Response, error) {
		q := req.(Q)
		return fn(c, q, q.ResponseKind().(R))
	}
}

// typedReq is typed for a handler that makes its response itself (most
// often the group coordinator does).
func typedReq[Q kmsg.Request](fn func(c *Call, req Q) (kmsg.Response, error)) HandleFunc {
	return func(c *Call, req kmsg.Request) (kmsg.Response, error) { return fn(c, req.(Q)) }
}

// register adds a key; it panics on a duplicate or a bad spec, at init.
func register(s Spec) {
	if _, dup := specs[s.Key]; dup {
		panic(fmt.Sprintf("handlers: key %d registered twice", s.Key))
	}
	if s.MinVersion < 0 || s.MaxVersion < s.MinVersion || s.Handle == nil {
		panic(fmt.Sprintf("handlers: bad spec for key %d", s.Key))
	}
	if r := kmsg.RequestForKey(s.Key); r == nil || r.MaxVersion() < s.MaxVersion {
		panic(fmt.Sprintf("handlers: kmsg cannot decode key %d v%d", s.Key, s.MaxVersion))
	}
	if (s.BareToken == nil) != (s.BareReply == nil) || (s.BareToken != nil && bareToken != nil) {
		panic(fmt.Sprintf("handlers: key %d: BareToken and BareReply go together, on one key", s.Key))
	}
	cp := s
	if gate, inner := s.Gated, s.Handle; gate != nil {
		cp.Handle = func(c *Call, req kmsg.Request) (kmsg.Response, error) {
			if !gate(&c.G.Cfg) {
				return nil, fmt.Errorf("%w: api key %d is not served by this gateway's configuration", errUnknownKey, s.Key)
			}
			return inner(c, req)
		}
	}
	specs[s.Key] = &cp
	if cp.BareToken != nil {
		bareToken = &cp
	}
}

// Lookup returns the spec of key, or nil when the gateway does not serve it.
// Any goroutine (the map is written only during init).
func Lookup(key int16) *Spec { return specs[key] }

// BareTokenSpec returns the spec that takes KIP-43 bare SASL tokens (the
// one with BareToken set). Any goroutine (set only during init).
func BareTokenSpec() *Spec { return bareToken }

// Specs returns every served key, sorted by key. Allocates; cold path.
func Specs() []Spec {
	out := make([]Spec, 0, len(specs))
	for _, s := range specs {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Decode decodes a request body of key at version into a fresh kmsg request.
// Byte fields of the result alias body. Any goroutine.
func Decode(key, version int16, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("handlers: unknown key %d", key)
	}
	req.SetVersion(version)
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("handlers: decode key %d v%d: %w", key, version, err)
	}
	return req, nil
}
