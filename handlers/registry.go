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
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// HandleFunc answers one request. It returns a nil response and nil error
// when no reply is to be sent (acks=0 Produce) or when the call parked
// itself (see Call.Park).
type HandleFunc func(c *Call, req kmsg.Request) (kmsg.Response, error)

// Spec is one API key the gateway serves.
type Spec struct {
	Key int16
	// MinVersion and MaxVersion are what ApiVersions advertises and what
	// the version firewall accepts.
	MinVersion, MaxVersion int16
	// Inline handlers are cheap and never block: the event loop runs them
	// straight from the peeked frame. Others go to the worker pool.
	Inline bool
	Handle HandleFunc
}

var specs = map[int16]*Spec{}

// register adds a key; it panics on a duplicate or a bad range, at init.
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
	cp := s
	specs[s.Key] = &cp
}

// Lookup returns the spec of key, or nil when the gateway does not serve it.
// Any goroutine (the map is written only during init).
func Lookup(key int16) *Spec { return specs[key] }

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
