package group

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/group/grouptest"
)

const testStream = "kafka"

// coord is a Coordinator over a real embedded store, with the parking the
// loop does played by Async: a waiting call registers for its ticket,
// sleeps until Wake or its deadline, and collects.
type coord struct {
	*Coordinator
	store bridge.Backend

	mu      sync.Mutex
	waiters map[Ticket]chan struct{}
}

var _ grouptest.Runner = (*coord)(nil)

// newCoord is a coordinator with no initial rebalance delay that accepts
// short sessions, so tests run fast.
func newCoord(tb testing.TB, mods ...func(*Config)) *coord {
	tb.Helper()
	st, log := openTestStore(tb)
	cfg := Config{InitialRebalanceDelay: -1, MinSessionTimeout: 10 * time.Millisecond}
	for _, m := range mods {
		m(&cfg)
	}
	c := &coord{store: st, waiters: map[Ticket]chan struct{}{}}
	c.Coordinator = New(Options{Config: cfg, Store: st, Stream: testStream, Wake: c.wake, Log: log})
	tb.Cleanup(c.Close)
	return c
}

// openTestStore is an embedded store in a fresh directory, closed when the
// test ends (after what the test registers to close later), and a logger
// that discards.
func openTestStore(tb testing.TB) (*embedded.Store, *slog.Logger) {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := embedded.Open(tb.TempDir(), embedded.Options{Sync: embedded.SyncNever, Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st, log
}

// wake is the Wake hook: it fires the call registered on t, if any.
func (c *coord) wake(t Ticket) bool {
	c.mu.Lock()
	ch, ok := c.waiters[t]
	delete(c.waiters, t)
	c.mu.Unlock()
	if ok {
		close(ch)
	}
	return ok
}

func (c *coord) createTopic(tb testing.TB, name string, parts int32) {
	tb.Helper()
	if _, err := c.store.CreateTopic(context.Background(), testStream, name, parts); err != nil {
		tb.Fatal(err)
	}
}

// run calls req's operation once: a response, or a Wait.
func (c *coord) run(tb testing.TB, req kmsg.Request) (kmsg.Response, Wait) {
	tb.Helper()
	ctx := context.Background()
	var resp kmsg.Response
	var w Wait
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		resp, w = c.Join(r, "", "")
	case *kmsg.SyncGroupRequest:
		resp, w = c.Sync(r)
	case *kmsg.HeartbeatRequest:
		resp = c.Heartbeat(r)
	case *kmsg.LeaveGroupRequest:
		resp = c.Leave(r)
	case *kmsg.OffsetCommitRequest:
		resp = c.CommitOffsets(ctx, r)
	case *kmsg.OffsetFetchRequest:
		resp = c.FetchOffsets(ctx, r)
	case *kmsg.OffsetDeleteRequest:
		resp = c.DeleteOffsets(ctx, r)
	case *kmsg.DescribeGroupsRequest:
		resp = c.Describe(ctx, r)
	case *kmsg.ListGroupsRequest:
		resp = c.List(ctx, r)
	case *kmsg.DeleteGroupsRequest:
		resp = c.Delete(ctx, r)
	default:
		tb.Fatalf("no coordinator operation for %T", req)
	}
	if resp != nil {
		// Encode as the loop would: catches fields kmsg cannot write.
		_ = resp.AppendTo(nil)
	}
	return resp, w
}

// Do runs req once; a call that has to wait gives nil.
func (c *coord) Do(tb testing.TB, req kmsg.Request) kmsg.Response {
	tb.Helper()
	resp, _ := c.run(tb, req)
	return resp
}

// Async runs req as the loop would: a waiting call parks on its ticket
// until woken or its deadline, then collects (finally at the deadline).
func (c *coord) Async(tb testing.TB, req kmsg.Request) <-chan kmsg.Response {
	tb.Helper()
	ch := make(chan kmsg.Response, 1)
	resp, w := c.run(tb, req)
	if resp != nil {
		ch <- resp
		return ch
	}
	go func() {
		for {
			woken := make(chan struct{})
			c.mu.Lock()
			c.waiters[w.Ticket] = woken
			c.mu.Unlock()
			final := false
			select {
			case <-woken:
			case <-time.After(time.Until(w.Until)):
				final = true
				c.mu.Lock()
				delete(c.waiters, w.Ticket)
				c.mu.Unlock()
			}
			if r, ok := c.Collect(w, final); ok {
				_ = r.AppendTo(nil)
				ch <- r
				return
			}
		}
	}()
	return ch
}
