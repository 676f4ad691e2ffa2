package iggy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// env is a client Store talking to iggytest over an embedded store, or
// to a real Iggy server (srv and backing nil) in a stream of the test's own.
type env struct {
	backing bridge.Backend
	srv     *iggytest.Server
	store   *Store
	opts    Options
	stream  string // where the test keeps its topics
}

func testOptions(addr string) Options {
	return Options{
		Addr: addr, PoolSize: 3, CallTimeout: 2 * time.Second, DialTimeout: time.Second,
		ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, Logger: quiet(),
	}
}

func newEmbedded(t testing.TB) bridge.Backend {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newEnv(t testing.TB, mutate ...func(*Options)) *env {
	t.Helper()
	e := &env{backing: newEmbedded(t), stream: "kafka"}
	srv, err := iggytest.Start(e.backing, iggytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	e.opts = testOptions(srv.Addr())
	for _, m := range mutate {
		m(&e.opts)
	}
	e.store, err = Open(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.store.Close()
		e.srv.Close()
	})
	return e
}

// newRealEnv is a client Store on the real Iggy server tests share
// (internal/iggyreal), in a stream of the test's own that is deleted when
// the test ends. It skips when the server is not there.
func newRealEnv(t testing.TB, mutate ...func(*Options)) *env {
	t.Helper()
	e := &env{stream: iggyreal.Stream(t)}
	e.opts = testOptions(iggyreal.Shared(t))
	e.opts.CallTimeout = 10 * time.Second
	e.opts.StateStream = e.stream + ".gw"
	for _, m := range mutate {
		m(&e.opts)
	}
	var err error
	e.store, err = Open(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, st := range []string{e.stream, e.opts.StateStream} {
			if err := e.store.c.DeleteStream(ctx, Name(st)); err != nil && !errors.Is(err, ErrStreamNotFound) {
				t.Errorf("deleting stream %s: %v", st, err)
			}
		}
		e.store.Close()
	})
	return e
}

// another opens a second Store on e's server (another gateway sharing
// it), closed when the test ends.
func (e *env) another(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// topic creates topic in e.stream with n partitions.
func (e *env) topic(t testing.TB, topic string, n int32) {
	t.Helper()
	if _, err := e.store.CreateTopic(context.Background(), e.stream, topic, n); err != nil {
		t.Fatal(err)
	}
}

// configuredTopic creates topic in e.stream with n partitions and cfg.
func (e *env) configuredTopic(t testing.TB, topic string, n int32, cfg bridge.TopicConfigs) {
	t.Helper()
	if _, err := e.store.CreateTopicWithConfigs(context.Background(), e.stream, topic, n, cfg); err != nil {
		t.Fatal(err)
	}
}

// put appends batch to a partition of topic in e.stream.
func (e *env) put(t testing.TB, topic string, partition int32, batch []byte) {
	t.Helper()
	if _, err := e.store.Append(context.Background(), e.stream, topic, partition, batch); err != nil {
		t.Fatal(err)
	}
}

// eachServer runs fn against iggytest and against the real Iggy server,
// in parallel (each has a server or a stream of its own): the Store
// conformance tests hold both to the same answers.
func eachServer(t *testing.T, fn func(t *testing.T, e *env), mutate ...func(*Options)) {
	t.Run("iggytest", func(t *testing.T) { t.Parallel(); fn(t, newEnv(t, mutate...)) })
	t.Run("real", func(t *testing.T) { t.Parallel(); fn(t, newRealEnv(t, mutate...)) })
}

// serverScenario is one conformance scenario of a table eachScenario runs.
type serverScenario struct {
	name string
	run  func(t *testing.T, e *env)
}

// eachScenario runs every scenario as a parallel subtest of its own, on
// both servers (eachServer).
func eachScenario(t *testing.T, scenarios ...serverScenario) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			eachServer(t, sc.run)
		})
	}
}

const origin0 = 1_700_000_000_000_000 // µs

// testBatch builds a send batch of n messages whose payloads are
// "<tag>-<i>" and whose origin timestamps are origin0 + first+i ms.
func testBatch(t testing.TB, tag string, first, n int) []byte {
	t.Helper()
	return buildBatch(t, origin0+uint64(first)*1000, n, func(i int) testMsg {
		return testMsg{id: [16]byte{byte(first + i)}, ts: origin0 + uint64(first+i)*1000, payload: fmt.Appendf(nil, "%s-%d", tag, first+i)}
	})
}

// testMsg is one message of a batch buildBatch makes.
type testMsg struct {
	id      [16]byte
	ts      uint64 // origin timestamp, µs
	payload []byte
	headers []byte // TLV block, or nil
}

// buildBatch is a send batch of n messages, message i as msg makes it;
// origin is the batch's origin timestamp, at or below every message's.
func buildBatch(tb testing.TB, origin uint64, n int, msg func(i int) testMsg) []byte {
	tb.Helper()
	var bb bridge.IggyBatchBuilder
	buf := bb.Begin(nil, origin)
	for i := range n {
		m := msg(i)
		var err error
		if buf, err = bb.Append(buf, m.id, m.ts, m.payload, m.headers); err != nil {
			tb.Fatal(err)
		}
	}
	buf, err := bb.Finish(buf)
	if err != nil {
		tb.Fatal(err)
	}
	return buf
}

// polled is what Poll passed: offsets and payloads of messages at or
// after from, and the number of batches.
type polled struct {
	offsets  []uint64
	payloads []string
	batches  int
}

func pollAll(t *testing.T, s bridge.Backend, stream, topic string, p int32, from uint64, maxBytes int) polled {
	t.Helper()
	var out polled
	err := s.Poll(context.Background(), stream, topic, p, from, maxBytes, func(b []byte) bool {
		out.batches++
		for _, m := range messagesOf(t, b) {
			if m.Offset >= from {
				out.offsets = append(out.offsets, m.Offset)
				out.payloads = append(out.payloads, string(m.Payload))
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scenario is the Store contract the gateway relies on. It runs against
// the embedded store and against the client over iggytest, so the two
// backends are held to the same answers.
func scenario(t *testing.T, s bridge.Backend, stream string) {
	ctx := context.Background()
	if ts, err := s.Topics(ctx, stream); err != nil || len(ts) != 0 {
		t.Fatalf("topics of a missing stream: %v %v", ts, err)
	}
	if _, err := s.Topic(ctx, stream, "orders"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("missing topic: %v", err)
	}
	info, err := s.CreateTopic(ctx, stream, "orders", 3)
	if err != nil || info.Name != "orders" || info.Stream != stream || info.Partitions != 3 {
		t.Fatalf("create: %+v %v", info, err)
	}
	if _, err := s.CreateTopic(ctx, stream, "orders", 3); !errors.Is(err, bridge.ErrTopicExists) {
		t.Fatalf("create twice: %v", err)
	}
	if got, err := s.Topic(ctx, stream, "orders"); err != nil || got != info {
		t.Fatalf("topic: %+v %v, want %+v", got, err, info)
	}
	if ts, err := s.Topics(ctx, stream); err != nil || len(ts) != 1 || ts[0] != info {
		t.Fatalf("topics: %+v %v", ts, err)
	}
	if st, err := s.Partition(ctx, stream, "orders", 0); err != nil || st != (bridge.PartitionState{}) {
		t.Fatalf("empty partition: %+v %v", st, err)
	}
	for i := range 3 {
		base, err := s.Append(ctx, stream, "orders", 1, testBatch(t, "m", 5*i, 5))
		if err != nil || base != uint64(5*i) {
			t.Fatalf("append %d: base %d %v", i, base, err)
		}
	}
	if st, err := s.Partition(ctx, stream, "orders", 1); err != nil || st != (bridge.PartitionState{Earliest: 0, Next: 15}) {
		t.Fatalf("partition 1: %+v %v", st, err)
	}
	checkPolls(t, s, stream)
	checkErrors(t, s, stream)
	checkTimestamps(t, s, stream)

	if err := s.DeleteTopic(ctx, stream, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Topic(ctx, stream, "orders"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("deleted topic: %v", err)
	}
	if err := s.DeleteTopic(ctx, stream, "orders"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	again, err := s.CreateTopic(ctx, stream, "orders", 1)
	if err != nil || again.ID == info.ID {
		t.Fatalf("re-created topic must get a new id: %+v %v (old %d)", again, err, info.ID)
	}
	if st, err := s.Partition(ctx, stream, "orders", 0); err != nil || st.Next != 0 {
		t.Fatalf("re-created topic holds data: %+v %v", st, err)
	}
}

func checkPolls(t *testing.T, s bridge.Backend, stream string) {
	all := pollAll(t, s, stream, "orders", 1, 0, 1<<20)
	if len(all.offsets) != 15 || all.batches != 3 {
		t.Fatalf("poll all: %+v", all)
	}
	for i, off := range all.offsets {
		if off != uint64(i) || all.payloads[i] != fmt.Sprintf("m-%d", i) {
			t.Fatalf("message %d: offset %d payload %q", i, off, all.payloads[i])
		}
	}
	mid := pollAll(t, s, stream, "orders", 1, 7, 1<<20)
	if len(mid.offsets) != 8 || mid.offsets[0] != 7 || mid.payloads[7] != "m-14" {
		t.Fatalf("poll from 7: %+v", mid)
	}
	if one := pollAll(t, s, stream, "orders", 1, 0, 1); one.batches != 1 {
		t.Fatalf("maxBytes 1 must pass exactly the first batch: %+v", one)
	}
	if end := pollAll(t, s, stream, "orders", 1, 15, 1<<20); end.batches != 0 {
		t.Fatalf("poll at the end: %+v", end)
	}
	calls := 0
	err := s.Poll(context.Background(), stream, "orders", 1, 0, 1<<20, func([]byte) bool { calls++; return false })
	if err != nil || calls != 1 {
		t.Fatalf("fn returning false: %d calls, %v", calls, err)
	}
}

func checkErrors(t *testing.T, s bridge.Backend, stream string) {
	ctx := context.Background()
	b := testBatch(t, "x", 0, 1)
	if _, err := s.Append(ctx, stream, "nope", 0, b); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Errorf("append to missing topic: %v", err)
	}
	if _, err := s.Append(ctx, stream, "orders", 7, b); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Errorf("append to missing partition: %v", err)
	}
	if _, err := s.Append(ctx, stream, "orders", 0, b[:100]); !errors.Is(err, bridge.ErrInvalidBatch) {
		t.Errorf("append of a truncated batch: %v", err)
	}
	if _, err := s.Partition(ctx, stream, "orders", 3); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Errorf("missing partition: %v", err)
	}
	if _, err := s.Partition(ctx, stream, "nope", 0); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Errorf("partition of missing topic: %v", err)
	}
	if err := s.Poll(ctx, stream, "nope", 0, 0, 100, func([]byte) bool { return true }); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Errorf("poll of missing topic: %v", err)
	}
	if err := s.Poll(ctx, stream, "orders", 9, 0, 100, func([]byte) bool { return true }); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Errorf("poll of missing partition: %v", err)
	}
}

func checkTimestamps(t *testing.T, s bridge.Backend, stream string) {
	ctx := context.Background()
	for _, tc := range []struct {
		ts    uint64
		off   uint64
		found bool
	}{
		{0, 0, true},
		{origin0, 0, true},
		{origin0 + 6500, 7, true}, // between messages 6 and 7
		{origin0 + 14000, 14, true},
		{origin0 + 14001, 0, false},
		{uint64(time.Now().Add(time.Hour).UnixMicro()), 0, false},
	} {
		off, found, err := s.OffsetForTimestamp(ctx, stream, "orders", 1, tc.ts)
		if err != nil || off != tc.off || found != tc.found {
			t.Errorf("OffsetForTimestamp(%d) = %d %v %v, want %d %v", tc.ts, off, found, err, tc.off, tc.found)
		}
	}
	if _, found, err := s.OffsetForTimestamp(ctx, stream, "orders", 0, 0); err != nil || found {
		t.Errorf("empty partition: %v %v", found, err)
	}
}

func TestScenarioEmbedded(t *testing.T) {
	t.Parallel()
	scenario(t, newEmbedded(t), "kafka")
}

func TestScenarioIggy(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) { scenario(t, e.store, e.stream) })
}

// TestReconnect stops the server under the client: calls fail with
// bridge.ErrUnavailable (never a false success) until a server is back on
// the same address, then the pool redials by itself.
func TestReconnect(t *testing.T) {
	// Serial: it starts its server again on the port it freed, which a parallel test's server could take.
	e := newEnv(t)
	ctx := context.Background()
	e.topic(t, "t", 2)
	e.put(t, "t", 0, testBatch(t, "a", 0, 3))
	addr := e.srv.Addr()
	e.srv.Close()
	for p := range int32(2) {
		if _, err := e.store.Append(ctx, e.stream, "t", p, testBatch(t, "b", 0, 1)); !errors.Is(err, bridge.ErrUnavailable) {
			t.Fatalf("append while down: %v", err)
		}
	}
	await.True(t, 5*time.Second, "reads answer ErrUnavailable", func() bool {
		_, err := e.store.Topic(ctx, e.stream, "t")
		return errors.Is(err, bridge.ErrUnavailable)
	})
	// Every slot has noticed by now or will on first use; none may answer.
	for range 10 {
		if _, err := e.store.Partition(ctx, e.stream, "t", 0); !errors.Is(err, bridge.ErrUnavailable) {
			t.Fatalf("partition while down: %v", err)
		}
	}
	srv, err := iggytest.Start(e.backing, iggytest.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	await.True(t, 5*time.Second, "a send stored at 3", func() bool {
		base, err := e.store.Append(ctx, e.stream, "t", 0, testBatch(t, "c", 3, 1))
		return err == nil && base == 3
	})
	if st, err := e.store.Partition(ctx, e.stream, "t", 0); err != nil || st.Next != 4 {
		t.Fatalf("after reconnect: %+v %v", st, err)
	}
}

// TestDroppedConnections: a blip that closes every connection costs the
// calls in flight, not the server's data, and heals by itself.
func TestDroppedConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.topic(t, "t", 1)
	e.srv.DropConnections()
	await.True(t, 5*time.Second, "a ping answered", func() bool { return e.store.c.Ping(ctx) == nil })
	await.True(t, 5*time.Second, "a send stored", func() bool {
		_, err := e.store.Append(ctx, e.stream, "t", 0, testBatch(t, "a", 0, 1))
		return err == nil
	})
}

func TestOpenFailures(t *testing.T) {
	// Serial: it dials the port its closed server freed, which a parallel test's server could take.
	ctx := context.Background()
	e := newEnv(t)
	_, err := Open(ctx, Options{Addr: e.srv.Addr(), Username: "iggy", Password: "wrong", Logger: quiet()})
	if !errors.Is(err, ErrInvalidCredentials) {
		t.Fatalf("wrong password: %v", err)
	}
	t.Log(err)
	e.srv.Close()
	_, err = Open(ctx, Options{Addr: e.srv.Addr(), DialTimeout: 200 * time.Millisecond, Logger: quiet()})
	if err == nil {
		t.Fatal("open against a closed port succeeded")
	}
	t.Log(err)
}

// TestSilentServer: a batch whose checksum is wrong is dropped by the
// server without a reply, as Iggy does; the client gives up at the call
// timeout with bridge.ErrUnavailable and replaces the connection.
func TestSilentServer(t *testing.T) {
	// Serial: it measures how long the dropped send takes.
	e := newEnv(t, func(o *Options) { o.CallTimeout = 300 * time.Millisecond; o.PoolSize = 1 })
	ctx := context.Background()
	e.topic(t, "t", 1)
	b := testBatch(t, "a", 0, 2)
	b[len(b)-1] ^= 0xff // payload no longer matches its checksum
	start := time.Now()
	if _, err := e.store.Append(ctx, e.stream, "t", 0, b); !errors.Is(err, bridge.ErrUnavailable) {
		t.Fatalf("dropped send: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("call took %v", d)
	}
	if e.srv.Rejected() == 0 {
		t.Fatal("server did not count the rejection")
	}
	await.True(t, 5*time.Second, "a send stored", func() bool {
		_, err := e.store.Append(ctx, e.stream, "t", 0, testBatch(t, "b", 0, 1))
		return err == nil
	})
}

// TestContextCancel: a cancelled context ends a call at once.
func TestContextCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.store.Topic(ctx, e.stream, "t"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if err := e.store.c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentAppends checks per-partition order and dense offsets with
// many writers spread over the pool.
func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	eachServer(t, testConcurrentAppends, func(o *Options) { o.PoolSize = 4 })
}

func testConcurrentAppends(t *testing.T, e *env) {
	ctx := context.Background()
	const parts, batches = 8, 25
	e.topic(t, "c", parts)
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for p := range int32(parts) {
		wg.Go(func() {
			for i := range batches {
				base, err := e.store.Append(ctx, e.stream, "c", p, testBatch(t, fmt.Sprint(p), 2*i, 2))
				if err != nil || base != uint64(2*i) {
					errs <- fmt.Errorf("partition %d batch %d: base %d %v", p, i, base, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for p := range int32(parts) {
		got := pollAll(t, e.store, e.stream, "c", p, 0, 1<<20)
		for i, pl := range got.payloads {
			if want := fmt.Sprintf("%d-%d", p, i); pl != want {
				t.Fatalf("partition %d message %d = %q, want %q", p, i, pl, want)
			}
		}
		if len(got.payloads) != 2*batches {
			t.Fatalf("partition %d holds %d messages", p, len(got.payloads))
		}
	}
}

// testPollManySmall makes Poll need several Iggy polls for one call (the
// first poll of a partition is a small probe).
func testPollManySmall(t *testing.T, e *env) {
	e.topic(t, "s", 1)
	for i := range 40 {
		e.put(t, "s", 0, testBatch(t, "s", i, 1))
	}
	got := pollAll(t, e.store, e.stream, "s", 0, 0, 1<<20)
	if len(got.offsets) != 40 || got.offsets[39] != 39 {
		t.Fatalf("got %d messages", len(got.offsets))
	}
	half := pollAll(t, e.store, e.stream, "s", 0, 10, 5*330)
	if len(half.offsets) == 0 || len(half.offsets) > 6 || half.offsets[0] != 10 {
		t.Fatalf("bounded poll: %v", half.offsets)
	}
}

// testConsumerOffsets: the client's consumer offsets, stored, read back,
// deleted, and refused past the end, on an empty partition or a missing
// topic.
func testConsumerOffsets(t *testing.T, e *env) {
	ctx := context.Background()
	c := e.store.Client()
	e.topic(t, "o", 2)
	ref := &OffsetRef{Consumer: PlainConsumer(Name("gw-group")), Stream: Name(e.stream), Topic: Name("o"), Partition: u32p(1)}
	if _, ok, err := c.GetConsumerOffset(ctx, ref); err != nil || ok {
		t.Fatalf("nothing stored: %v %v", ok, err)
	}
	if err := c.StoreConsumerOffset(ctx, ref, 0); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("store on an empty partition: %v", err)
	}
	e.put(t, "o", 1, testBatch(t, "a", 0, 5))
	if err := c.StoreConsumerOffset(ctx, ref, 3); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreConsumerOffset(ctx, ref, 5); !errors.Is(err, ErrInvalidOffset) {
		t.Fatalf("store past the end: %v", err)
	}
	o, ok, err := c.GetConsumerOffset(ctx, ref)
	if err != nil || !ok || o != (ConsumerOffset{PartitionID: 1, CurrentOffset: 4, StoredOffset: 3}) {
		t.Fatalf("get: %+v %v %v", o, ok, err)
	}
	if err := c.DeleteConsumerOffset(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteConsumerOffset(ctx, ref); !errors.Is(err, ErrConsumerOffsetNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	bad := *ref
	bad.Topic = Name("missing")
	if err := c.StoreConsumerOffset(ctx, &bad, 0); !errors.Is(err, ErrResourceNotFound) {
		t.Fatalf("store on a missing topic: %v", err)
	}
}

// testClientStreams: the client creates, reads and deletes a stream of
// its own and a topic in it, and knows the server's version.
func testClientStreams(t *testing.T, e *env) {
	ctx := context.Background()
	c := e.store.Client()
	other := e.stream + ".other" // the test's own: the real server is shared
	s, err := c.CreateStream(ctx, other)
	if err != nil || s.Name != other {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := c.CreateStream(ctx, other); !errors.Is(err, ErrStreamExists) {
		t.Fatalf("twice: %v", err)
	}
	if _, err := c.CreateTopic(ctx, ID(s.ID), "t1", 2, nil); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.GetStream(ctx, Name(other))
	if err != nil || !ok || got.ID != s.ID || len(got.Topics) != 1 || got.Topics[0].Name != "t1" {
		t.Fatalf("get stream: %+v %v %v", got, ok, err)
	}
	if _, err := c.CreateTopic(ctx, Name("none"), "t", 1, nil); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("topic in a missing stream: %v", err)
	}
	if err := c.DeleteStream(ctx, Name(other)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.GetStream(ctx, Name(other)); err != nil || ok {
		t.Fatalf("deleted stream: %v %v", ok, err)
	}
	if v := c.ServerVersion(); v == "" {
		t.Fatal("no server version")
	}
}

// TestStoreScenarios runs the Poll and client scenarios above on both
// servers, each a subtest of its own.
func TestStoreScenarios(t *testing.T) {
	t.Parallel()
	eachScenario(t,
		serverScenario{"PollManySmall", testPollManySmall},
		serverScenario{"ConsumerOffsets", testConsumerOffsets},
		serverScenario{"ClientStreams", testClientStreams},
	)
}
