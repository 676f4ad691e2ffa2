package iggy

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// pool is a fixed set of connection slots. Each slot holds at most one
// connection, used by one caller at a time (the protocol is lockstep), and
// a goroutine that redials it with backoff after it breaks. Throughput
// comes from several slots working at once; order per partition comes from
// pinning a partition to one slot.
type pool struct {
	cfg    *connConfig
	log    *slog.Logger
	slots  []*slot
	rr     atomic.Uint32
	done   chan struct{}
	closed atomic.Bool
	wg     sync.WaitGroup

	backoffMin, backoffMax time.Duration
}

// slot is one pooled connection. sem is a one-token semaphore: holding the
// token is the right to use c. up mirrors c != nil for lock-free checks.
type slot struct {
	p    *pool
	idx  int
	sem  chan struct{}
	c    *conn
	up   atomic.Bool
	kick chan struct{}
	// lastErr is why the slot went down (guarded by sem).
	lastErr error
}

// newPool dials every slot. A failure closes what was opened and is
// returned: a gateway pointed at a wrong address should not start.
func newPool(ctx context.Context, cfg *connConfig, size int, log *slog.Logger, bmin, bmax, keepalive time.Duration) (*pool, error) {
	p := &pool{cfg: cfg, log: log, done: make(chan struct{}), backoffMin: bmin, backoffMax: bmax}
	conns := make([]*conn, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i], errs[i] = dialConn(ctx, cfg) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
		return nil, errs[firstErr(errs)]
	}
	for i, c := range conns {
		s := &slot{p: p, idx: i, sem: make(chan struct{}, 1), c: c, kick: make(chan struct{}, 1)}
		s.up.Store(true)
		p.slots = append(p.slots, s)
		p.wg.Go(s.redialLoop)
	}
	p.wg.Go(func() { p.keepalive(keepalive) })
	return p, nil
}

func firstErr(errs []error) int {
	for i, e := range errs {
		if e != nil {
			return i
		}
	}
	return 0
}

// pinned returns the slot a partition always uses, so sends to it leave in
// the order their callers were serialised and never overtake each other.
func (p *pool) pinned(stream, topic Identifier, partition uint32) *slot {
	if len(p.slots) == 1 {
		return p.slots[0]
	}
	h := idHash(stream) ^ idHash(topic)*0x9e3779b97f4a7c15 ^ uint64(partition)*0xc2b2ae3d27d4eb4f
	// Final avalanche so consecutive partitions spread over the slots.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return p.slots[h%uint64(len(p.slots))]
}

func idHash(id Identifier) uint64 {
	if id.named {
		return xxh3.HashString(id.name)
	}
	return uint64(id.num)*0x94d049bb133111eb + 1
}

// any returns a slot for a request with no ordering needs: the first idle
// live slot from a rotating start, else the next live one (to queue on),
// else nil.
func (p *pool) any() *slot {
	n := len(p.slots)
	start := int(p.rr.Add(1))
	var busy *slot
	for i := range n {
		s := p.slots[(start+i)%n]
		if !s.up.Load() {
			continue
		}
		if len(s.sem) == 0 {
			return s
		}
		if busy == nil {
			busy = s
		}
	}
	return busy
}

// acquire takes the slot's connection, or fails fast when the slot is
// down (the caller gets bridge.ErrUnavailable, never a queued wait on a
// dead server) or the pool is closed.
func (s *slot) acquire(ctx context.Context) (*conn, error) {
	if s.p.closed.Load() {
		return nil, bridge.ErrClosed
	}
	if !s.up.Load() {
		return nil, s.p.downErr(nil)
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.c == nil {
		err := s.lastErr
		<-s.sem
		return nil, s.p.downErr(err)
	}
	return s.c, nil
}

// release returns the connection. A *ConnError means the connection is
// broken: it is closed and the slot's redial loop is woken.
func (s *slot) release(c *conn, err error) {
	if err != nil {
		s.retire(c, err)
	}
	<-s.sem
}

// replace closes the broken connection old (cause says why) and dials a
// fresh one in its place, within ctx, while the caller keeps holding the
// slot. When the dial fails the slot goes down (its redial loop takes
// over) and the error is a *ConnError. The caller holds sem.
func (s *slot) replace(ctx context.Context, old *conn, cause error) (*conn, error) {
	if s.c == old && old != nil {
		old.close()
		s.c = nil
	}
	if s.p.closed.Load() {
		s.up.Store(false)
		return nil, bridge.ErrClosed
	}
	dctx, cancel := context.WithTimeout(ctx, s.p.cfg.dialTimeout+s.p.cfg.callTimeout)
	defer cancel()
	c, err := dialConn(dctx, s.p.cfg)
	if err != nil {
		s.lastErr = err
		s.up.Store(false)
		s.p.log.Warn("iggy: connection lost, reconnect failed", "addr", s.p.cfg.addr, "slot", s.idx, "cause", cause, "err", err)
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return nil, s.p.downErr(err)
	}
	s.c, s.lastErr = c, nil
	s.p.log.Info("iggy: connection replaced", "addr", s.p.cfg.addr, "slot", s.idx, "cause", cause)
	return c, nil
}

// keepalive pings every connection left idle for a period, so one
// the server dropped (a restart, an idle cut) is found and redialled in the
// background, not by the next request. Busy connections are skipped: their
// traffic is the check.
func (p *pool) keepalive(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		for _, s := range p.slots {
			s.ping(every / 2) // so no connection goes 1.5 periods without a request
		}
	}
}

// ping checks the slot's connection if it is up, idle and free.
func (s *slot) ping(idleFor time.Duration) {
	if !s.up.Load() {
		return
	}
	select {
	case s.sem <- struct{}{}:
	default:
		return // in use
	}
	c := s.c
	var err error
	if c != nil && c.idle() >= idleFor {
		ctx, cancel := context.WithTimeout(context.Background(), min(s.p.cfg.callTimeout, 5*time.Second))
		_, err = c.roundTrip(ctx, wire.OpNonReplicated, wire.CodePing, c.begin(), nil)
		cancel()
	}
	s.release(c, err)
}

// retire closes c when err says it is broken. The caller holds sem.
func (s *slot) retire(c *conn, err error) {
	var ce *ConnError
	if errors.As(err, &ce) && s.c == c {
		c.close()
		s.c = nil
		s.lastErr = ce.Err
		s.up.Store(false)
		s.p.log.Warn("iggy: connection lost, reconnecting", "addr", s.p.cfg.addr, "slot", s.idx, "err", ce.Err)
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

func (p *pool) downErr(cause error) error {
	if cause == nil {
		cause = errors.New("connection down, reconnecting")
	}
	return &ConnError{Addr: p.cfg.addr, Op: "unavailable", Err: cause}
}

// redialLoop reconnects the slot whenever release reports it broken, with
// exponential backoff and jitter so a restarted server is not hit by every
// gateway at once.
func (s *slot) redialLoop() {
	for {
		select {
		case <-s.p.done:
			return
		case <-s.kick:
		}
		c := s.redial()
		if c == nil {
			return // pool closed
		}
		s.sem <- struct{}{}
		s.c, s.lastErr = c, nil
		s.up.Store(true)
		<-s.sem
		s.p.log.Info("iggy: reconnected", "addr", s.p.cfg.addr, "slot", s.idx)
	}
}

// redial dials until it succeeds or the pool closes.
func (s *slot) redial() *conn {
	wait := s.p.backoffMin
	for {
		t := time.NewTimer(jitter(wait))
		select {
		case <-s.p.done:
			t.Stop()
			return nil
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.p.cfg.dialTimeout+s.p.cfg.callTimeout)
		c, err := dialConn(ctx, s.p.cfg)
		cancel()
		if err == nil {
			if s.p.closed.Load() {
				c.close()
				return nil
			}
			return c
		}
		s.p.log.Debug("iggy: reconnect failed", "addr", s.p.cfg.addr, "slot", s.idx, "err", err, "next", wait)
		s.sem <- struct{}{}
		s.lastErr = err
		<-s.sem
		wait = min(2*wait, s.p.backoffMax)
	}
}

// jitter spreads d over [d/2, d).
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// close stops the redial loops, then logs out and closes every connection
// once its current call (bounded by the call timeout) has returned.
func (p *pool) close() {
	if p.closed.Swap(true) {
		return
	}
	close(p.done)
	p.wg.Wait()
	for _, s := range p.slots {
		s.sem <- struct{}{}
		if s.c != nil {
			s.c.logout()
			s.c.close()
			s.c = nil
		}
		s.up.Store(false)
		<-s.sem
	}
}
