// Package loop is the gnet v2 side of the gateway: connections, framing,
// ordered replies, the worker pool, limits and shutdown.
package loop

import (
	"context"

	"github.com/iggy-kafka/gateway/handlers"
)

// Server serves the Kafka protocol for one handlers.Gateway.
type Server struct {
	cfg Config
	g   *handlers.Gateway
}

// NewServer returns a server; nothing listens until Start.
func NewServer(cfg Config, g *handlers.Gateway) *Server { return &Server{cfg: cfg, g: g} }

// Start listens and serves in the background; it returns once the listener
// is bound (or failed). Any goroutine.
func (s *Server) Start() error { panic("unimplemented") }

// Addr is the bound host:port, valid after Start.
func (s *Server) Addr() string { panic("unimplemented") }

// Shutdown stops accepting, lets in-flight requests finish within the
// drain timeout (or ctx), then closes every connection. Any goroutine.
func (s *Server) Shutdown(ctx context.Context) error { panic("unimplemented") }
