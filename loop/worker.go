package loop

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/metrics"
)

// job is one request handed to the worker pool. It owns frame, the only
// copy of the request bytes; kmsg's decoded byte fields alias it, so frame
// goes back to its pool only after the handler and the encode are done.
type job struct {
	cs      *connState
	spec    *handlers.Spec
	seq     uint64
	noReply bool  // acks=0 Produce: no reply slot
	raw     bool  // a bare SASL token (sasl.go): req is preset, the reply is bare
	held    int64 // bytes of frame counted in cs.reqHeld
	frame   *bytebufferpool.ByteBuffer
	req     kmsg.Request
	call    handlers.Call
	start   time.Time
	ran     time.Duration // the handler's running time, over every run of a parked call
	// delayReply: the reply is sent after the call's throttle time, for a
	// client that predates KIP-219 (throttle.go).
	delayReply bool
	// outPool is the pool of the reply's buffer when it is not the
	// spec's (a Fetch reply built in its batches' buffer).
	outPool *bytebufferpool.Pool
	// orderReleased: the connection's next job was started already
	// (ReleaseOrder), so ending this one must not start it again.
	orderReleased bool
}

// ReleaseOrder implements handlers.OrderReleaser: the connection's next
// job starts now, before this one ends. The worker running j.
func (j *job) ReleaseOrder() {
	if !j.orderReleased {
		j.orderReleased = true
		j.cs.runNext()
	}
}

var jobPool = sync.Pool{New: func() any { return new(job) }}

// getJob and putJob recycle jobs; putJob clears j so the pool holds no
// pointer into a finished request. Any goroutine.
func getJob() *job { return jobPool.Get().(*job) }

func putJob(j *job) {
	*j = job{}
	jobPool.Put(j)
}

// worker runs jobs until the server quits. The queue is never closed, so
// a late resubmit cannot panic. Its own goroutine, one per configured
// worker; never one per request.
func (s *Server) worker() {
	defer s.workersDone.Done()
	for {
		select {
		case j := <-s.jobs:
			s.runJob(j)
		case <-s.quit:
			return
		}
	}
}

// trySubmit queues j without blocking. Loop or any goroutine.
func (s *Server) trySubmit(j *job) bool {
	select {
	case s.jobs <- j:
		s.cfg.Metrics.QueueDepth(len(s.jobs))
		return true
	default:
		return false
	}
}

// resubmit queues a woken parked job or a connection's next one; it must
// not block the goroutine that woke it (a timer or a producing worker), so
// a full queue hands the send to a goroutine of its own. That happens only
// under overload. Any goroutine.
func (s *Server) resubmit(j *job) {
	if !s.trySubmit(j) {
		go func() { s.jobs <- j }()
	}
}

// runJob decodes (first run only), handles, encodes and hands the reply to
// the ordered writer. Worker goroutines only.
func (s *Server) runJob(j *job) {
	out, outcome, parkedOn := s.handleJob(j)
	if parkedOn != nil {
		s.park(j, parkedOn)
		return
	}
	s.endJob(j, out, outcome)
}

// handleJob runs the handler; a panic in it closes the connection instead
// of the process. What it may recover is the gateway's own handler and
// codec code: store calls run on goroutines of their own under
// bridge.Guard (cmd wraps every store), so a panic inside a storage engine,
// which may hold the engine's locks, is never recovered here; it crashes
// the process. Worker goroutines only.
func (s *Server) handleJob(j *job) (out *bytebufferpool.ByteBuffer, outcome string, w *handlers.Wait) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panic", "key", j.spec.Key, "panic", r)
			j.cs.close(CloseInternal, fmt.Errorf("panic: %v", r))
			out, outcome, w = nil, metrics.OutcomeClosed, nil
		}
	}()
	if j.req == nil {
		hdr := &j.call.Header // parsed on the loop, pointing into j.frame
		req, err := handlers.Decode(hdr.Key, hdr.Version, j.frame.B[hdr.BodyOffset:])
		if err != nil {
			j.cs.close(CloseDecode, err)
			return nil, metrics.OutcomeClosed, nil
		}
		j.req = req
	}
	j.call.ReplyRoom = j.cs.replyRoom()
	ran := time.Now()
	resp, err := j.spec.Handle(&j.call, j.req)
	j.ran += time.Since(ran)
	if err != nil {
		j.cs.close(handlerCloseReason(err), err)
		return nil, metrics.OutcomeClosed, nil
	}
	if resp == nil {
		if w := j.call.Parked(); w != nil {
			return nil, "", w
		}
	}
	if !j.noReply {
		// Kafka leaves acks=0 Produce out of the request quota.
		j.call.RequestThrottle(resp, j.ran) // client quotas (throttle.go)
	}
	if resp == nil {
		return nil, metrics.OutcomeNoAck, nil
	}
	j.delayReply = throttledBefore(resp, j.call.ThrottleMillis())
	if j.noReply {
		return nil, metrics.OutcomeNoAck, nil
	}
	if j.raw {
		return encodeBareToken(j.spec.BareReply(resp)), metrics.OutcomeOK, nil
	}
	if j.spec.LargeReply {
		// A Fetch reply built around its batches, in their buffer
		// (handlers.EncodeReplyInPlace), saves copying them.
		if out := j.call.EncodeReplyInPlace(&j.call.Header, resp, &smallBufs); out != nil {
			j.outPool = handlers.FetchBufPool()
			return out, metrics.OutcomeOK, nil
		}
	}
	return encodeReply(replyPool(j.spec), &j.call.Header, resp), metrics.OutcomeOK, nil
}

// endJob releases what the job holds and passes out (nil: no bytes) to the
// ordered writer. Any goroutine.
func (s *Server) endJob(j *job, out *bytebufferpool.ByteBuffer, outcome string) {
	j.call.RunDeferred()
	largeBufs.Put(j.frame)
	spec := j.spec
	s.cfg.Metrics.Request(spec.Key, outcome, time.Since(j.start))
	cs, seq, noReply, started := j.cs, j.seq, j.noReply, j.orderReleased
	cs.throttle(j.call.ThrottleMillis())
	cs.reqHeld.Add(-j.held)
	delayed := j.delayReply
	pool := replyPool(spec)
	if j.outPool != nil {
		pool = j.outPool
	}
	putJob(j)
	if noReply {
		if !started {
			cs.runNext()
		}
		cs.finishNoReply()
		return
	}
	// The reply is counted against the write cap (finish) before the
	// connection's next job starts and reads the room left (unless the
	// handler started it early).
	if delayed {
		delayReply(cs, seq, out, pool, cs.throttleLeft())
	} else {
		cs.finish(seq, out, pool)
	}
	if !started {
		cs.runNext()
	}
}

// replyPool picks the pool for spec's replies: large ones (Fetch) get
// their own, since bytebufferpool drops buffers above the size class it
// calibrated on. Any goroutine.
func replyPool(spec *handlers.Spec) *bytebufferpool.Pool {
	if spec.LargeReply {
		return &largeBufs
	}
	return &smallBufs
}

// encodeReply frames resp for the request hdr answered. Any goroutine.
func encodeReply(pool *bytebufferpool.Pool, hdr *codec.RequestHeader, resp kmsg.Response) *bytebufferpool.ByteBuffer {
	buf := pool.Get()
	buf.B = codec.AppendResponseHeader(buf.B[:0], hdr.Key, resp.GetVersion(), hdr.CorrelationID)
	buf.B = resp.AppendTo(buf.B)
	codec.PatchFrameSize(buf.B, 0)
	return buf
}

// parked is a Fetch waiting for data or its deadline. mu guards fired,
// timer and cancel: the timer, the watch and Shutdown may race to wake it.
type parked struct {
	mu     sync.Mutex
	j      *job
	fired  bool
	timer  *time.Timer
	cancel func()
}

// park holds j until one of w.Keys is signalled or w.Until passes, without
// holding a worker. Worker goroutines only.
func (s *Server) park(j *job, w *handlers.Wait) {
	p := &parked{j: j}
	s.parkMu.Lock()
	if s.draining.Load() {
		s.parkMu.Unlock()
		j.call.Final = true
		s.resubmit(j)
		return
	}
	s.parkedSet[p] = struct{}{}
	s.parkMu.Unlock()
	p.mu.Lock()
	p.timer = time.AfterFunc(time.Until(w.Until), func() { s.wake(p, true) })
	p.mu.Unlock()
	// WatchSince may run the callback right here (a signal came after the
	// handler's read), so it is called without p.mu held.
	cancel := s.g.Watch.WatchSince(w.Keys, w.Since, func() { s.wake(p, false) })
	p.mu.Lock()
	if p.fired {
		p.mu.Unlock()
		cancel()
		return
	}
	p.cancel = cancel
	p.mu.Unlock()
}

// wake re-runs a parked job once; final means its deadline passed (or the
// gateway is draining) and the handler must answer. Any goroutine.
func (s *Server) wake(p *parked, final bool) {
	p.mu.Lock()
	if p.fired {
		p.mu.Unlock()
		return
	}
	p.fired = true
	if p.timer != nil {
		p.timer.Stop()
	}
	cancel := p.cancel
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.parkMu.Lock()
	delete(s.parkedSet, p)
	s.parkMu.Unlock()
	p.j.call.Final = final
	s.resubmit(p.j)
}

// wakeAllParked answers every parked fetch now (shutdown drain). Shutdown
// only.
func (s *Server) wakeAllParked() {
	s.parkMu.Lock()
	all := make([]*parked, 0, len(s.parkedSet))
	for p := range s.parkedSet {
		all = append(all, p)
	}
	s.parkMu.Unlock()
	for _, p := range all {
		s.wake(p, true)
	}
}
