// Package metrics holds the gateway's Prometheus collectors. Every method
// is safe on a nil *Metrics (a no-op), so tests and tools need no registry.
// Hot-path methods do not allocate: label children are resolved once.
package metrics

import "time"

// Outcome of one request, as a label value.
const (
	OutcomeOK     = "ok"     // answered (Kafka error codes inside still count as ok)
	OutcomeClosed = "closed" // the request closed the connection
	OutcomeNoAck  = "noack"  // acks=0 Produce, no reply by design
)

// Metrics is the set of collectors. (metrics.go; owner: cmd/metrics work)
type Metrics struct{ impl *collectors }

type collectors struct{}

// Request records one finished request of key with its outcome and latency.
func (m *Metrics) Request(key int16, outcome string, d time.Duration) {}

// BytesIn counts bytes read from Kafka clients.
func (m *Metrics) BytesIn(n int) {}

// BytesOut counts bytes written to Kafka clients.
func (m *Metrics) BytesOut(n int) {}

// ConnOpened counts an accepted connection.
func (m *Metrics) ConnOpened() {}

// ConnClosed counts a closed connection by close reason.
func (m *Metrics) ConnClosed(reason string) {}

// QueueDepth sets the current worker-pool queue depth.
func (m *Metrics) QueueDepth(n int) {}

// StoreLatency records one store call (op: append, poll, meta).
func (m *Metrics) StoreLatency(op string, d time.Duration) {}
