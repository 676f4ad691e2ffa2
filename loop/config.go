package loop

import (
	"log/slog"
	"time"

	"github.com/iggy-kafka/gateway/internal/metrics"
)

// Config bounds and tunes the server. Zero values take the defaults below.
type Config struct {
	Addr string // listen address of the default listener, e.g. 127.0.0.1:9092 (port 0 picks one); unused with Listeners
	// Listeners, when set, replace the default listener (listeners.go);
	// empty: one listener on Addr, SASL_PLAINTEXT when handlers.Config.Sasl
	// is set, else PLAINTEXT, advertising handlers.Config's address.
	Listeners          []Listener
	EventLoops         int // gnet event loops; default GOMAXPROCS
	Workers            int // worker goroutines for Produce/Fetch/store calls; default 4*GOMAXPROCS
	QueueDepth         int // jobs queued for workers before connections are held back; default 4096
	MaxInFlightPerConn int // requests in flight per connection before reading pauses; default 64
	MaxBufferedPerConn int // request bytes in flight per connection before reading pauses (mute.go); plus one socket read, the unread bytes that close a connection that cannot be muted; default 4*MaxFrameSize
	// Write backpressure (backpressure.go).
	MaxOutboundPerConn int           // reply bytes queued for writing per connection before reading pauses; default 8 MiB
	WriteStallTimeout  time.Duration // a connection over MaxOutboundPerConn whose client reads nothing this long is closed; default 30s
	MaxConnections     int           // default 1024
	// Connection fairness (limits.go).
	MaxConnectionsPerAddr int           // connections from one client address (IPv4, or IPv6 /64); default 256
	FrameTimeout          time.Duration // a request must arrive this long after its first byte (a new connection: after accept); default 30s
	MaxFrameSize          int32         // default 8 MiB
	IdleTimeout           time.Duration // default 600s
	DrainTimeout          time.Duration // default 25s
	Metrics               *metrics.Metrics
	Log                   *slog.Logger
}
