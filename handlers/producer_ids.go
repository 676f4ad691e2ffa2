package handlers

import (
	"sync/atomic"
	"time"
)

// ProducerIDs hands out idempotent producer ids: the instance id in bits
// 47..62, a 47-bit counter in bits 0..46, bit 63 clear. The counter starts
// at the wall clock in ms so a restarted gateway does not reissue an id it
// handed out before (as long as it issued fewer than one id per ms on
// average). Any goroutine.
type ProducerIDs struct {
	instance uint64
	counter  atomic.Uint64
}

const producerCounterBits = 47

// NewProducerIDs seeds the counter from now.
func NewProducerIDs(instance uint16, now time.Time) *ProducerIDs {
	p := &ProducerIDs{instance: uint64(instance)}
	p.counter.Store(uint64(now.UnixMilli()) & (1<<producerCounterBits - 1))
	return p
}

// Next returns a fresh producer id.
func (p *ProducerIDs) Next() int64 {
	c := p.counter.Add(1) & (1<<producerCounterBits - 1)
	return int64(p.instance<<producerCounterBits | c)
}
