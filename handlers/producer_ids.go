package handlers

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// ProducerIDs hands out idempotent producer ids: the instance id in bits
// 47..62, a 47-bit counter in bits 0..46, bit 63 clear. The counter starts
// at the wall clock in ms. With a store to keep a high-water mark
// (bridge.ProducerIDMarks) the counter also starts above the stored mark,
// and ids are issued only below a mark that is already durable, reserved a
// block at a time ahead of use, so a restarted gateway never reissues an
// id (docs/IDEMPOTENCE.md). Any goroutine.
type ProducerIDs struct {
	instance uint64
	counter  atomic.Uint64 // the last counter value handed out

	bindOnce sync.Once
	bound    chan struct{} // closed after the first reservation attempt
	marks    bridge.ProducerIDMarks
	log      *slog.Logger
	limit    atomic.Uint64 // counter values below it are durably reserved
	loaded   bool          // the stored mark was read; extender only
	extendMu sync.Mutex    // one extender at a time
	pending  atomic.Bool   // an extension goroutine is running
}

const producerCounterBits = 47

// producerIDBlock is how many ids one durable reservation covers. A restart
// skips what was left of the block; 2^47 ids leave room for ~2^31 restarts.
const producerIDBlock = 1 << 16

// NewProducerIDs seeds the counter from now.
func NewProducerIDs(instance uint16, now time.Time) *ProducerIDs {
	p := &ProducerIDs{instance: uint64(instance), bound: make(chan struct{})}
	p.counter.Store(uint64(now.UnixMilli()) & (1<<producerCounterBits - 1))
	return p
}

// Next returns a fresh producer id with no persistence: unique across
// restarts only under the clock rule above. Allocate is the durable path.
func (p *ProducerIDs) Next() int64 {
	return p.id(p.counter.Add(1))
}

func (p *ProducerIDs) id(c uint64) int64 {
	return int64(p.instance<<producerCounterBits | c&(1<<producerCounterBits-1))
}

// Bind starts the first reservation against the high-water mark kept in
// marks (once; later calls do nothing). It does not wait. Without marks
// (nil) ids come from the clock-seeded counter alone. Any goroutine.
func (p *ProducerIDs) Bind(marks bridge.ProducerIDMarks, log *slog.Logger) {
	p.bindOnce.Do(func() {
		if marks == nil {
			close(p.bound)
			return
		}
		p.marks, p.log = marks, log
		p.pending.Store(true)
		go func() {
			p.extend()
			close(p.bound)
		}()
	})
}

// Ready is closed once Bind's first reservation finished (or the store
// keeps no mark). Tests wait on it; the gateway never does.
func (p *ProducerIDs) Ready() <-chan struct{} { return p.bound }

// Allocate returns a fresh producer id that no earlier run of this instance
// issued, binding to store's high-water mark on the first call. ok is false
// while no durably reserved id is available (the first reservation is
// still running or failed, or a burst used up the block before the next
// one was written); the caller answers a retriable error.
func (p *ProducerIDs) Allocate(marks bridge.ProducerIDMarks, log *slog.Logger) (int64, bool) {
	p.Bind(marks, log)
	select {
	case <-p.bound:
	default:
		// Never wait here: InitProducerId runs on the event loop. The
		// client retries COORDINATOR_LOAD_IN_PROGRESS; NewGateway binds at
		// startup, so only a request in the first milliseconds sees it.
		return 0, false
	}
	if p.marks == nil {
		return p.Next(), true
	}
	for {
		c, lim := p.counter.Load(), p.limit.Load()
		if c+1 >= lim {
			p.extendAsync()
			return 0, false
		}
		if p.counter.CompareAndSwap(c, c+1) {
			if lim-(c+1) < producerIDBlock/2 {
				p.extendAsync()
			}
			return p.id(c + 1), true
		}
	}
}

// extendAsync starts one background extension unless one is running.
func (p *ProducerIDs) extendAsync() {
	if p.pending.CompareAndSwap(false, true) {
		go p.extend()
	}
}

// extend reads the stored mark once (raising the counter above it), then
// durably reserves the next block and publishes the new limit.
func (p *ProducerIDs) extend() {
	defer p.pending.Store(false)
	p.extendMu.Lock()
	defer p.extendMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst := uint16(p.instance)
	if !p.loaded {
		mark, err := p.marks.LoadProducerIDMark(ctx, inst)
		if err != nil {
			p.log.Error("producer ids: reading the high-water mark failed; InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS until it works", "err", err)
			return
		}
		for c := p.counter.Load(); c < mark && !p.counter.CompareAndSwap(c, mark); c = p.counter.Load() {
		}
		p.loaded = true
	}
	target := p.counter.Load() + producerIDBlock
	if err := p.marks.StoreProducerIDMark(ctx, inst, target); err != nil {
		p.log.Error("producer ids: writing the high-water mark failed", "err", err)
		return
	}
	p.limit.Store(target)
}
