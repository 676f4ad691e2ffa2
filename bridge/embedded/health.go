package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// How the store answers a storage failure (docs/STORAGE.md, "When the disk
// fills or fails"). Pebble treats a failed WAL write or fsync as fatal: its
// commit pipeline calls Logger.Fatalf, or panics while it holds its commit
// lock, and a write that returned from Fatalf would look like a success.
// So pebble never sees a write error: diskFS (fs.go) sits under it and
//
//   - on ENOSPC/EDQUOT from a write, preallocation or file creation (the
//     write did not happen, nothing is lost) puts the store in the
//     disk-full state and retries the operation at a bounded rate until it
//     succeeds; pebble just sees a slow disk. New writes are refused at once
//     with bridge.ErrStorage, reads go on, and once the blocked operations
//     went through and the writes in flight finished the store serves
//     again by itself;
//   - on any other write error, and on any fsync error (after a failed
//     fsync the kernel may have dropped the dirty pages, so a retry could
//     report success for lost data), puts the store in the failed state
//     ("restart needed") and never returns: the goroutine waits forever.
//
// Logger.Fatalf does the same (records the cause, waits forever): it must
// neither return (its caller would go on as if the write had succeeded)
// nor panic (pebble holds its locks). Calls stuck this way are cut off by
// the guard (bridge.Guard) at their deadline or as soon as the state
// changes; Close does not wait for them.

// healthState is the store's failure state machine. Any goroutine.
type healthState struct {
	log *slog.Logger

	mu      sync.Mutex
	h       bridge.Health
	changed chan struct{} // closed and replaced on every change of h

	state   atomic.Int32 // mirror of h.State for the hot path
	blocked atomic.Int64 // disk operations waiting for space
	writing atomic.Int64 // store writes in flight (Append, catalog, offsets, marks)

	// Unix nanos of the last line of each rate-limited kind.
	lastPebble, lastWait atomic.Int64
	opened               atomic.Bool // Open finished: Fatalf before it panics (startup)
}

func newHealthState(log *slog.Logger) *healthState {
	return &healthState{log: log, changed: make(chan struct{})}
}

// Health reports the disk: full (Degraded) or failed (NeedsRestart).
func (h *healthState) Health() (bridge.Health, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.h, h.changed
}

// setLocked moves to st with cause. Under mu.
func (h *healthState) setLocked(st bridge.HealthState, cause error) {
	h.h = bridge.Health{State: st, Cause: cause, Since: time.Now()}
	h.state.Store(int32(st))
	close(h.changed)
	h.changed = make(chan struct{})
}

// err is the error calls get in the current state, nil when healthy.
func (h *healthState) err() error {
	if bridge.HealthState(h.state.Load()) == bridge.Healthy {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.h.Cause
}

// needsRestart reports the sticky failed state.
func (h *healthState) needsRestart() bool {
	return bridge.HealthState(h.state.Load()) == bridge.NeedsRestart
}

// diskFull enters the disk-full state (unless failed worse) for the
// operation op on path that got err.
func (h *healthState) diskFull(op, path string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h.State != bridge.Healthy {
		return
	}
	cause := fmt.Errorf("%w: disk full (%s %s: %w); writes are refused until space is freed", bridge.ErrStorage, op, path, err)
	h.setLocked(bridge.Degraded, cause)
	h.log.Error("embedded store: disk full; refusing writes (KAFKA_STORAGE_ERROR) until space is freed, reads go on",
		"op", op, "path", path, "err", err)
}

// fatal enters the failed state for good.
func (h *healthState) fatal(what string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h.State == bridge.NeedsRestart {
		return
	}
	cause := fmt.Errorf("%w: %s: %w; restart the gateway", bridge.ErrStorage, what, err)
	h.setLocked(bridge.NeedsRestart, cause)
	h.log.Error("embedded store failed; every write is refused (KAFKA_STORAGE_ERROR) until the gateway is restarted",
		"what", what, "err", err)
}

// maybeRecover leaves the disk-full state once nothing waits for space and
// no write that was in flight when the disk filled is still running: those
// finish first, so a client's retry finds them stored (and an idempotent
// retry is recognised as a duplicate, not stored twice).
func (h *healthState) maybeRecover() {
	if bridge.HealthState(h.state.Load()) != bridge.Degraded || h.blocked.Load() > 0 || h.writing.Load() > 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.h.State != bridge.Degraded || h.blocked.Load() > 0 || h.writing.Load() > 0 {
		return
	}
	down := time.Since(h.h.Since)
	h.setLocked(bridge.Healthy, nil)
	h.log.Warn("embedded store: disk space is back; serving writes again", "after", down.Round(time.Millisecond))
}

// beginWrite admits one store write, or returns the state's error.
// endWrite must follow an admitted write.
func (h *healthState) beginWrite() error {
	h.writing.Add(1)
	if err := h.err(); err != nil {
		h.endWrite()
		return err
	}
	return nil
}

func (h *healthState) endWrite() {
	if h.writing.Add(-1) == 0 {
		h.maybeRecover()
	}
}

// every reports whether a line of the kind whose last time is in last may
// be logged now: at most one per period.
func every(last *atomic.Int64, period time.Duration) bool {
	now := time.Now().UnixNano()
	l := last.Load()
	return now-l >= int64(period) && last.CompareAndSwap(l, now)
}

// isNoSpace reports a full disk or an exhausted quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// waitForever parks the calling goroutine for good. It is how a storage
// error that pebble must not see, and pebble's Fatalf, end: the goroutine
// may hold pebble's locks, so it must neither return nor unwind.
func waitForever() {
	select {}
}
