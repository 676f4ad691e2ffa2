package handlers

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/bridge/iggy"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
	"github.com/iggy-kafka/gateway/group"
	"github.com/iggy-kafka/gateway/group/grouptest"
)

// groupGateway is a gateway whose coordinator has no initial rebalance
// delay and accepts short sessions, so tests run fast.
func groupGateway(tb testing.TB, mods ...func(*group.Config)) *Gateway {
	g := newGateway(tb)
	g.Cfg.Groups = group.Config{InitialRebalanceDelay: -1, MinSessionTimeout: 10 * time.Millisecond}
	for _, m := range mods {
		m(&g.Cfg.Groups)
	}
	rewireGroups(tb, g)
	return g
}

// rewireGroups gives g a fresh coordinator over its current Store (after a
// test swapped it), closed at cleanup.
func rewireGroups(tb testing.TB, g *Gateway) {
	g.Groups = newCoordinator(g.Cfg, g.Store, g.Watch, g.Log, nil)
	tb.Cleanup(g.Groups.Close)
}

// gatewayRunner drives the group keys through their handlers, parking as
// the loop does (async), for the grouptest scenarios.
type gatewayRunner struct{ g *Gateway }

func (r gatewayRunner) Do(tb testing.TB, req kmsg.Request) kmsg.Response { return do(tb, r.g, req) }
func (r gatewayRunner) Async(tb testing.TB, req kmsg.Request) <-chan kmsg.Response {
	return async(tb, r.g, req)
}

// async runs req as the loop would: a parked call waits for its keys or
// its deadline and runs again. The response arrives on the channel.
func async(tb testing.TB, g *Gateway, req kmsg.Request) <-chan kmsg.Response {
	tb.Helper()
	dec, err := Decode(req.Key(), req.GetVersion(), req.AppendTo(nil))
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	c := newCall(g, req.Key(), req.GetVersion())
	ch := make(chan kmsg.Response, 1)
	var step func(final bool)
	step = func(final bool) {
		c.Final = final
		resp, err := Lookup(req.Key()).Handle(c, dec)
		if err != nil {
			tb.Errorf("key %d: %v", req.Key(), err)
			ch <- nil
			return
		}
		if resp != nil {
			_ = resp.AppendTo(nil)
			ch <- resp
			return
		}
		w := c.Parked()
		if w == nil {
			ch <- nil
			return
		}
		var mu sync.Mutex
		fired := false
		var timer *time.Timer
		var cancel func()
		fire := func(final bool) {
			mu.Lock()
			if fired {
				mu.Unlock()
				return
			}
			fired = true
			if timer != nil {
				timer.Stop()
			}
			cl := cancel
			mu.Unlock()
			go func() {
				if cl != nil {
					cl()
				}
				step(final)
			}()
		}
		mu.Lock()
		timer = time.AfterFunc(time.Until(w.Until), func() { fire(true) })
		cancel = g.Watch.Watch(w.Keys, func() { fire(false) })
		mu.Unlock()
	}
	go step(false)
	return ch
}

// The offsets part runs against both backends: the embedded store and
// the Iggy store (over iggytest over an embedded store).
func TestGroupOffsetsBackends(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"embedded", "iggy"} {
		t.Run(backend, func(t *testing.T) {
			g := groupGateway(t)
			if backend == "iggy" {
				g.Store = iggyStore(t)
				rewireGroups(t, g)
			}
			createTopic(t, g, "t", 2)
			produceOne(t, g, produceReq(9, "t", 0, valueBatch(5)))
			// Generation -1, no members: an admin or simple consumer.
			if code := grouptest.Commit(t, gatewayRunner{g}, "", -1, "t", 0, 3); code != 0 {
				t.Fatalf("commit: %d", code)
			}
			for _, v := range []int16{1, 7, 9} {
				if off, code := grouptest.FetchCommitted(t, gatewayRunner{g}, v, "t", 0); code != 0 || off != 3 {
					t.Fatalf("v%d fetch: %d %d", v, off, code)
				}
			}
			// All topics of the group (null topic list).
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version = 7
			r.Group = grouptest.Group
			resp := do(t, g, r).(*kmsg.OffsetFetchResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 3 {
				t.Fatalf("all topics: %+v", resp)
			}
			// Describe: Empty with offsets.
			if d := grouptest.Describe(t, gatewayRunner{g}); d.State != "Empty" {
				t.Fatalf("state %s", d.State)
			}
			// Commit 0 (reset to earliest) reads back 0 on both (on Iggy
			// from the group log, docs/CONSUMER_GROUPS.md).
			if code := grouptest.Commit(t, gatewayRunner{g}, "", -1, "t", 0, 0); code != 0 {
				t.Fatalf("commit 0: %d", code)
			}
			if off, _ := grouptest.FetchCommitted(t, gatewayRunner{g}, 9, "t", 0); off != 0 {
				t.Fatalf("after commit 0: %d want 0", off)
			}
			// Past the end: the embedded store keeps it, Iggy refuses.
			code := grouptest.Commit(t, gatewayRunner{g}, "", -1, "t", 1, 7)
			if backend == "iggy" && code != kerr.InvalidCommitOffsetSize.Code || backend == "embedded" && code != 0 {
				t.Fatalf("commit past end: %d", code)
			}
			// OffsetDelete, DeleteGroups.
			grouptest.Commit(t, gatewayRunner{g}, "", -1, "t", 0, 5)
			od := kmsg.NewPtrOffsetDeleteRequest()
			od.Group = grouptest.Group
			odt := kmsg.NewOffsetDeleteRequestTopic()
			odt.Topic = "t"
			odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}
			od.Topics = append(od.Topics, odt)
			if r := do(t, g, od).(*kmsg.OffsetDeleteResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("offset delete: %+v", r)
			}
			if off, _ := grouptest.FetchCommitted(t, gatewayRunner{g}, 9, "t", 1); off != -1 {
				t.Fatalf("after offset delete: %d", off)
			}
			dg := kmsg.NewPtrDeleteGroupsRequest()
			dg.Version = 2
			dg.Groups = []string{grouptest.Group, "other"}
			dr := do(t, g, dg).(*kmsg.DeleteGroupsResponse)
			if dr.Groups[0].ErrorCode != 0 || dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("delete groups: %+v", dr.Groups)
			}
			if off, _ := grouptest.FetchCommitted(t, gatewayRunner{g}, 9, "t", 0); off != -1 {
				t.Fatalf("after delete group: %d", off)
			}
		})
	}
}

func iggyStore(t *testing.T) bridge.Backend {
	t.Helper()
	srv := iggyServer(t)
	st, err := iggy.Open(context.Background(), iggy.Options{Addr: srv.Addr(), PoolSize: 2, CallTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// iggyServer is an iggytest server over an embedded store in a fresh
// directory; both are closed when the test ends, after what the test
// registers to close later.
func iggyServer(t *testing.T) *iggytest.Server {
	t.Helper()
	backing, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backing.Close() })
	srv, err := iggytest.Start(backing, iggytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// Committed offsets survive closing and reopening the embedded store (a
// gateway restart); membership does not.
func TestGroupOffsetsSurviveReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() *Gateway {
		st, err := embedded.Open(dir, embedded.Options{Sync: embedded.SyncAlways, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		g := NewGateway(Config{Stream: "kafka", NodeID: 1, MaxFrameSize: 1 << 20, Groups: group.Config{InitialRebalanceDelay: -1, MinSessionTimeout: 10 * time.Millisecond}}, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
		return g
	}
	g := open()
	createTopic(t, g, "t", 1)
	produceOne(t, g, produceReq(9, "t", 0, valueBatch(5)))
	a := grouptest.NewMember(t, gatewayRunner{g}, "")
	j := grouptest.Await[*kmsg.JoinGroupResponse](t, async(t, g, grouptest.JoinReq(a, "", time.Second, "m")))
	grouptest.Await[*kmsg.SyncGroupResponse](t, async(t, g, grouptest.SyncReq(a, "", j.Generation, map[string]string{a: "A"})))
	if code := grouptest.Commit(t, gatewayRunner{g}, a, j.Generation, "t", 0, 4); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if err := g.Store.Close(); err != nil {
		t.Fatal(err)
	}
	g = open()
	defer g.Store.Close()
	if off, code := grouptest.FetchCommitted(t, gatewayRunner{g}, 9, "t", 0); code != 0 || off != 4 {
		t.Fatalf("after reopen: %d %d", off, code)
	}
	// The old member is gone: its commit is refused, it must rejoin.
	if code := grouptest.Commit(t, gatewayRunner{g}, a, j.Generation, "t", 0, 5); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of a lost generation: %d", code)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	if r := do(t, g, lg).(*kmsg.ListGroupsResponse); len(r.Groups) != 1 || r.Groups[0].Group != grouptest.Group || r.Groups[0].GroupState != "Empty" {
		t.Fatalf("list after reopen: %+v", r.Groups)
	}
}

func TestFindCoordinator(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	for v := int16(0); v <= 6; v++ {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = v
		r.CoordinatorKey = grouptest.Group
		r.CoordinatorKeys = []string{grouptest.Group}
		resp := do(t, g, r).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Host != "127.0.0.1" || resp.Port != 9092 {
				t.Fatalf("v%d: %+v", v, resp)
			}
		} else if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 || resp.Coordinators[0].Port != 9092 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if v == 0 {
			continue
		}
		r.CoordinatorType = 1
		resp = do(t, g, r).(*kmsg.FindCoordinatorResponse)
		code := resp.ErrorCode
		if v >= 4 {
			code = resp.Coordinators[0].ErrorCode
		}
		if code != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Fatalf("v%d txn: %d", v, code)
		}
	}
}

// groupSeed is a FuzzDecode seed of a group key with content.
func groupSeed(key int16) kmsg.Request {
	switch key {
	case 8:
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation = "fzg", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "fz"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = 1, kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	case 9:
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = "fzg"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "fz", []int32{0}
		r.Topics = append(r.Topics, rt)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "fzg"
		r.Groups = append(r.Groups, rg)
		return r
	case 11:
		r := grouptest.JoinReq("", "fz-instance", 10*time.Second, "meta")
		r.Group = "fzg"
		return r
	case 12:
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.MemberID = "fzg", "m"
		return r
	case 13:
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Group, r.MemberID = "fzg", "m"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "m"
		r.Members = append(r.Members, m)
		return r
	case 14:
		r := grouptest.SyncReq("m", "", 1, map[string]string{"m": "a"})
		r.Group = "fzg"
		return r
	case 15:
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Groups = []string{"fzg"}
		return r
	case 16:
		r := kmsg.NewPtrListGroupsRequest()
		r.StatesFilter = []string{"Stable"}
		return r
	case 42:
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Groups = []string{"fzg"}
		return r
	default:
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = "fzg"
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "fz"
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		r.Topics = append(r.Topics, rt)
		return r
	}
}

// parkedRejoin makes a group of two stable members, a and b, on a new
// gateway and runs a's rejoin through the JoinGroup handler on a fresh
// call, failing the test unless it parked. It gives the gateway, b, the
// call and the decoded request, to run the handler again.
func parkedRejoin(t *testing.T) (*Gateway, string, *Call, kmsg.Request) {
	t.Helper()
	g := groupGateway(t)
	a, b, _ := grouptest.StableTwo(t, gatewayRunner{g})
	req := grouptest.JoinReq(a, "", time.Second, "ma")
	dec, err := Decode(11, req.Version, req.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	c := newCall(g, 11, req.Version)
	if resp, err := Lookup(11).Handle(c, dec); resp != nil || err != nil {
		t.Fatalf("join did not park: %v %v", resp, err)
	}
	return g, b, c, dec
}

// A parked join whose backstop deadline passes (or that is drained) gets
// REBALANCE_IN_PROGRESS and stops counting as joined.
func TestGroupParkedJoinFinal(t *testing.T) {
	t.Parallel()
	_, _, c, dec := parkedRejoin(t)
	w := c.Parked()
	if w == nil || len(w.Keys) != 1 || !w.Until.After(time.Now()) {
		t.Fatalf("wait: %+v", w)
	}
	c.Final = true
	resp, err := Lookup(11).Handle(c, dec)
	if err != nil || resp.(*kmsg.JoinGroupResponse).ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("final run: %+v %v", resp, err)
	}
}

// A result settled before the loop registered the parked call's watch
// still wakes the call (the coordinator signals again while it lies
// uncollected).
func TestGroupWakeBeforeWatch(t *testing.T) {
	t.Parallel()
	g, b, c, dec := parkedRejoin(t)
	w := c.Parked()
	// b's rejoin closes the barrier and settles a's ticket now.
	if jb := grouptest.Await[*kmsg.JoinGroupResponse](t, async(t, g, grouptest.JoinReq(b, "", time.Second, "mb"))); jb.ErrorCode != 0 {
		t.Fatalf("b: %d", jb.ErrorCode)
	}
	// The watch is registered late, after the coordinator's first signal
	// for a's ticket has gone by with no watch to wake: that is the case
	// under test.
	time.Sleep(5 * time.Millisecond)
	woke := make(chan struct{})
	cancel := g.Watch.Watch(w.Keys, func() { close(woke) })
	defer cancel()
	select {
	case <-woke:
	case <-time.After(2 * time.Second):
		t.Fatal("a late watch was never woken")
	}
	resp, _ := Lookup(11).Handle(c, dec)
	if j, ok := resp.(*kmsg.JoinGroupResponse); !ok || j.ErrorCode != 0 || len(j.Members) != 2 {
		t.Fatalf("collected: %+v", resp)
	}
}

// DeleteGroups v3 says why a group was not deleted in words too, as Kafka
// does; v2 has no room for them.
func TestDeleteGroupsV3ErrorMessage(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	for _, v := range []int16{2, 3} {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = v, []string{"never-made"}
		r := do(t, g, req).(*kmsg.DeleteGroupsResponse).Groups[0]
		want := v >= 3
		if r.ErrorCode != kerr.GroupIDNotFound.Code || (r.ErrorMessage != nil) != want ||
			want && *r.ErrorMessage != kerr.GroupIDNotFound.Description {
			t.Fatalf("v%d: %v, message %v", v, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
}
