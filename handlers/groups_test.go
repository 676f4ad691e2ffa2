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
)

// groupGateway is a gateway whose coordinator has no initial rebalance
// delay and accepts short sessions, so tests run fast.
func groupGateway(tb testing.TB, mods ...func(*GroupConfig)) *Gateway {
	g := newGateway(tb)
	cfg := GroupConfig{InitialRebalanceDelay: -1, MinSessionTimeout: 10 * time.Millisecond}
	for _, m := range mods {
		m(&cfg)
	}
	g.Groups = NewGroups(cfg, g.Watch, g.Log)
	return g
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

func await[T kmsg.Response](tb testing.TB, ch <-chan kmsg.Response) T {
	tb.Helper()
	select {
	case r := <-ch:
		v, ok := r.(T)
		if !ok {
			tb.Fatalf("response %T", r)
		}
		return v
	case <-time.After(10 * time.Second):
		tb.Fatal("no response in 10s")
	}
	var zero T
	return zero
}

// pending reports whether ch has no response yet after a short wait.
func pending(ch <-chan kmsg.Response) bool {
	select {
	case r := <-ch:
		_ = r
		return false
	case <-time.After(100 * time.Millisecond):
		return true
	}
}

const testGroup = "grp"

func joinReq(member, instance string, session time.Duration, meta string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = testGroup
	r.SessionTimeoutMillis = int32(session / time.Millisecond)
	r.RebalanceTimeoutMillis = 2000
	r.MemberID = member
	if instance != "" {
		r.InstanceID = kmsg.StringPtr(instance)
	}
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte(meta)
	r.Protocols = append(r.Protocols, p)
	return r
}

// newMember does the KIP-394 first step and returns the member id.
func newMember(t *testing.T, g *Gateway, instance string) string {
	t.Helper()
	if instance != "" {
		return ""
	}
	r := do(t, g, joinReq("", "", time.Second, "m")).(*kmsg.JoinGroupResponse)
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("first join: code %d id %q", r.ErrorCode, r.MemberID)
	}
	return r.MemberID
}

func heartbeatCode(t *testing.T, g *Gateway, member, instance string, gen int32) int16 {
	t.Helper()
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation = testGroup, member, gen
	if instance != "" {
		r.InstanceID = kmsg.StringPtr(instance)
	}
	return do(t, g, r).(*kmsg.HeartbeatResponse).ErrorCode
}

func syncReq(member, instance string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation = testGroup, member, gen
	if instance != "" {
		r.InstanceID = kmsg.StringPtr(instance)
	}
	r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func describe(t *testing.T, g *Gateway) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{testGroup}
	return do(t, g, r).(*kmsg.DescribeGroupsResponse).Groups[0]
}

// stableTwo builds a Stable group of members a and b (generation 2) and
// returns their ids and the generation.
func stableTwo(t *testing.T, g *Gateway) (a, b string, gen int32) {
	t.Helper()
	a = newMember(t, g, "")
	ja := await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq(a, "", time.Second, "ma")))
	if ja.ErrorCode != 0 || ja.Generation != 1 || ja.LeaderID != a || len(ja.Members) != 1 {
		t.Fatalf("a alone: %+v", ja)
	}
	sa := await[*kmsg.SyncGroupResponse](t, async(t, g, syncReq(a, "", 1, map[string]string{a: "A1"})))
	if sa.ErrorCode != 0 || string(sa.MemberAssignment) != "A1" {
		t.Fatalf("a sync: %+v", sa)
	}
	if d := describe(t, g); d.State != "Stable" {
		t.Fatalf("state %s", d.State)
	}

	// b joins: the group rebalances; a learns through its heartbeat.
	b = newMember(t, g, "")
	chB := async(t, g, joinReq(b, "", time.Second, "mb"))
	if !pending(chB) {
		t.Fatal("b's join did not wait for a")
	}
	if d := describe(t, g); d.State != "PreparingRebalance" {
		t.Fatalf("state %s", d.State)
	}
	if code := heartbeatCode(t, g, a, "", 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %d", code)
	}
	ja = await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq(a, "", time.Second, "ma")))
	jb := await[*kmsg.JoinGroupResponse](t, chB)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 2 || jb.Generation != 2 {
		t.Fatalf("rejoin: a %+v b %+v", ja, jb)
	}
	if ja.LeaderID != a || len(ja.Members) != 2 || len(jb.Members) != 0 {
		t.Fatalf("leader %s, %d/%d members", ja.LeaderID, len(ja.Members), len(jb.Members))
	}
	// The follower's sync waits for the leader's.
	chSB := async(t, g, syncReq(b, "", 2, nil))
	if !pending(chSB) {
		t.Fatal("follower sync did not wait")
	}
	sa = await[*kmsg.SyncGroupResponse](t, async(t, g, syncReq(a, "", 2, map[string]string{a: "A2", b: "B2"})))
	sb := await[*kmsg.SyncGroupResponse](t, chSB)
	if string(sa.MemberAssignment) != "A2" || string(sb.MemberAssignment) != "B2" {
		t.Fatalf("assignments %q %q", sa.MemberAssignment, sb.MemberAssignment)
	}
	return a, b, 2
}

func TestGroupRebalanceOnJoinAndLeave(t *testing.T) {
	g := groupGateway(t)
	a, b, gen := stableTwo(t, g)

	// A stale generation is refused.
	if code := heartbeatCode(t, g, a, "", gen-1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("stale heartbeat: %d", code)
	}
	if r := await[*kmsg.SyncGroupResponse](t, async(t, g, syncReq(b, "", gen-1, nil))); r.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("stale sync: %d", r.ErrorCode)
	}
	if code := heartbeatCode(t, g, a, "", gen); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}

	// a leaves: b's heartbeat says rebalance, b rejoins alone.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = testGroup
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = a
	lr.Members = append(lr.Members, lm)
	if r := do(t, g, lr).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	if code := heartbeatCode(t, g, b, "", gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after leave: %d", code)
	}
	jb := await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq(b, "", time.Second, "mb")))
	if jb.ErrorCode != 0 || jb.Generation != gen+1 || jb.LeaderID != b || len(jb.Members) != 1 {
		t.Fatalf("b alone: %+v", jb)
	}
	// The member that left is unknown now.
	if code := heartbeatCode(t, g, a, "", gen+1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("left member heartbeat: %d", code)
	}
	// b leaves too: the group is Empty (and stays known, as on Kafka).
	lr.Members[0].MemberID = b
	do(t, g, lr)
	if d := describe(t, g); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("state after all left: %s", d.State)
	}
}

func TestGroupSessionExpiry(t *testing.T) {
	g := groupGateway(t)
	a, b, gen := stableTwo(t, g)
	// b stops heartbeating; a keeps going until b's 1s session runs out.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code := heartbeatCode(t, g, a, "", gen)
		if code == kerr.RebalanceInProgress.Code {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("heartbeat: %d", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ja := await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq(a, "", time.Second, "ma")))
	if ja.ErrorCode != 0 || ja.Generation != gen+1 || len(ja.Members) != 1 || ja.Members[0].MemberID != a {
		t.Fatalf("after expiry: %+v", ja)
	}
	if code := heartbeatCode(t, g, b, "", gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member: %d", code)
	}
}

func TestGroupUnknownMember(t *testing.T) {
	g := groupGateway(t)
	if code := heartbeatCode(t, g, "nobody", "", 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat, no group: %d", code)
	}
	if r := do(t, g, joinReq("nobody", "", time.Second, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join with unknown id: %d", r.ErrorCode)
	}
	stableTwo(t, g)
	if code := heartbeatCode(t, g, "nobody", "", 2); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat: %d", code)
	}
	if r := do(t, g, syncReq("nobody", "", 2, nil)).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("sync: %d", r.ErrorCode)
	}
	if r := do(t, g, joinReq("nobody", "", time.Second, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join: %d", r.ErrorCode)
	}
	// Session outside the bounds.
	if r := do(t, g, joinReq("", "", time.Hour, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session 1h: %d", r.ErrorCode)
	}
	// Commit from an unknown member of a live group.
	if code := commit(t, g, "nobody", 2, "t", 0, 5); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit: %d", code)
	}
}

func TestGroupStaticRejoinKeepsAssignment(t *testing.T) {
	g := groupGateway(t)
	ch1 := async(t, g, joinReq("", "i-a", time.Second, "ma"))
	j1 := await[*kmsg.JoinGroupResponse](t, ch1)
	if j1.ErrorCode != 0 || j1.Generation != 1 {
		t.Fatalf("a: %+v", j1)
	}
	a := j1.MemberID
	await[*kmsg.SyncGroupResponse](t, async(t, g, syncReq(a, "i-a", 1, map[string]string{a: "A1"})))
	chB := async(t, g, joinReq("", "i-b", time.Second, "mb"))
	if !pending(chB) {
		t.Fatal("b did not wait")
	}
	ja := await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq(a, "i-a", time.Second, "ma")))
	jb := await[*kmsg.JoinGroupResponse](t, chB)
	b := jb.MemberID
	gen := ja.Generation
	chSB := async(t, g, syncReq(b, "i-b", gen, nil))
	await[*kmsg.SyncGroupResponse](t, async(t, g, syncReq(a, "i-a", gen, map[string]string{a: "A2", b: "B2"})))
	if sb := await[*kmsg.SyncGroupResponse](t, chSB); string(sb.MemberAssignment) != "B2" {
		t.Fatalf("b assignment %q", sb.MemberAssignment)
	}

	// b restarts: same instance id, no member id. It gets a new id, the
	// same generation, and no rebalance happens.
	r := await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq("", "i-b", time.Second, "mb")))
	if r.ErrorCode != 0 || r.Generation != gen || r.MemberID == b || r.MemberID == "" {
		t.Fatalf("static rejoin: %+v", r)
	}
	nb := r.MemberID
	if d := describe(t, g); d.State != "Stable" {
		t.Fatalf("state after static rejoin: %s", d.State)
	}
	if code := heartbeatCode(t, g, a, "i-a", gen); code != 0 {
		t.Fatalf("a heartbeat after static rejoin: %d (rebalance triggered?)", code)
	}
	sb := await[*kmsg.SyncGroupResponse](t, async(t, g, syncReq(nb, "i-b", gen, nil)))
	if sb.ErrorCode != 0 || string(sb.MemberAssignment) != "B2" {
		t.Fatalf("static member's assignment after rejoin: %d %q", sb.ErrorCode, sb.MemberAssignment)
	}
	// The old incarnation is fenced.
	if code := heartbeatCode(t, g, b, "i-b", gen); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old static member: %d", code)
	}
	// The leader restarting keeps its role and is told to skip assignment.
	r = await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq("", "i-a", time.Second, "ma")))
	if r.ErrorCode != 0 || r.Generation != gen || r.LeaderID != r.MemberID || !r.SkipAssignment || len(r.Members) != 2 {
		t.Fatalf("static leader rejoin: %+v", r)
	}
	// Leave by instance id.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 4
	lr.Group = testGroup
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.InstanceID = kmsg.StringPtr("i-b")
	lm2 := kmsg.NewLeaveGroupRequestMember()
	lm2.InstanceID = kmsg.StringPtr("i-zz")
	lr.Members = append(lr.Members, lm, lm2)
	resp := do(t, g, lr).(*kmsg.LeaveGroupResponse)
	if resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave by instance: %+v", resp.Members)
	}
	if d := describe(t, g); d.State != "PreparingRebalance" || len(d.Members) != 1 {
		t.Fatalf("after static leave: %s %d", d.State, len(d.Members))
	}
}

func TestGroupJoinV3NoMemberIDRequired(t *testing.T) {
	g := groupGateway(t)
	r := joinReq("", "", time.Second, "m")
	r.Version = 3
	j := await[*kmsg.JoinGroupResponse](t, async(t, g, r))
	if j.ErrorCode != 0 || j.MemberID == "" || j.Generation != 1 {
		t.Fatalf("v3 join: %+v", j)
	}
}

func TestGroupInitialDelay(t *testing.T) {
	g := groupGateway(t, func(c *GroupConfig) { c.InitialRebalanceDelay = 300 * time.Millisecond })
	a := newMember(t, g, "")
	start := time.Now()
	chA := async(t, g, joinReq(a, "", time.Second, "ma"))
	time.Sleep(100 * time.Millisecond)
	b := newMember(t, g, "")
	chB := async(t, g, joinReq(b, "", time.Second, "mb"))
	ja := await[*kmsg.JoinGroupResponse](t, chA)
	jb := await[*kmsg.JoinGroupResponse](t, chB)
	if time.Since(start) < 300*time.Millisecond {
		t.Fatalf("barrier closed before the delay: %v", time.Since(start))
	}
	if ja.Generation != 1 || jb.Generation != 1 || len(ja.Members)+len(jb.Members) != 2 {
		t.Fatalf("one generation for both: %+v %+v", ja, jb)
	}
}

func commit(t *testing.T, g *Gateway, member string, gen int32, topic string, part int32, off int64) int16 {
	t.Helper()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group, r.MemberID, r.Generation = testGroup, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.Metadata = part, off, kmsg.StringPtr("meta")
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return do(t, g, r).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func fetchCommitted(t *testing.T, g *Gateway, version int16, topic string, part int32) (int64, int16) {
	t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = version
	if version >= 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = testGroup
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, []int32{part}
		rg.Topics = append(rg.Topics, rt)
		r.Groups = append(r.Groups, rg)
		resp := do(t, g, r).(*kmsg.OffsetFetchResponse)
		gr := resp.Groups[0]
		if gr.ErrorCode != 0 {
			return 0, gr.ErrorCode
		}
		return gr.Topics[0].Partitions[0].Offset, gr.Topics[0].Partitions[0].ErrorCode
	}
	r.Group = testGroup
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{part}
	r.Topics = append(r.Topics, rt)
	resp := do(t, g, r).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		return 0, resp.ErrorCode
	}
	return resp.Topics[0].Partitions[0].Offset, resp.Topics[0].Partitions[0].ErrorCode
}

func TestGroupCommitChecks(t *testing.T) {
	g := groupGateway(t)
	createTopic(t, g, "t", 2)
	produceOne(t, g, produceReq(9, "t", 0, valueBatch(5)))
	a, b, gen := stableTwo(t, g)
	if code := commit(t, g, a, gen, "t", 0, 3); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code := commit(t, g, b, gen-1, "t", 0, 4); code != kerr.IllegalGeneration.Code {
		t.Fatalf("stale commit: %d", code)
	}
	if code := commit(t, g, "", -1, "t", 0, 4); code != kerr.UnknownMemberID.Code {
		t.Fatalf("admin commit to a live group: %d", code)
	}
	if code := commit(t, g, a, gen, "nope", 0, 4); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", code)
	}
	if off, code := fetchCommitted(t, g, 9, "t", 0); code != 0 || off != 3 {
		t.Fatalf("fetch: %d %d", off, code)
	}
	if off, code := fetchCommitted(t, g, 5, "t", 1); code != 0 || off != -1 {
		t.Fatalf("fetch uncommitted: %d %d", off, code)
	}
}

// The offsets part runs against both backends: the embedded store and
// the Iggy store (over iggytest over an embedded store).
func TestGroupOffsetsBackends(t *testing.T) {
	for _, backend := range []string{"embedded", "iggy"} {
		t.Run(backend, func(t *testing.T) {
			g := groupGateway(t)
			if backend == "iggy" {
				g.Store = iggyStore(t)
			}
			createTopic(t, g, "t", 2)
			produceOne(t, g, produceReq(9, "t", 0, valueBatch(5)))
			// Generation -1, no members: an admin or simple consumer.
			if code := commit(t, g, "", -1, "t", 0, 3); code != 0 {
				t.Fatalf("commit: %d", code)
			}
			for _, v := range []int16{1, 7, 9} {
				if off, code := fetchCommitted(t, g, v, "t", 0); code != 0 || off != 3 {
					t.Fatalf("v%d fetch: %d %d", v, off, code)
				}
			}
			// All topics of the group (null topic list).
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version = 7
			r.Group = testGroup
			resp := do(t, g, r).(*kmsg.OffsetFetchResponse)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 3 {
				t.Fatalf("all topics: %+v", resp)
			}
			// Describe: Empty with offsets.
			if d := describe(t, g); d.State != "Empty" {
				t.Fatalf("state %s", d.State)
			}
			// Commit 0 (reset to earliest) reads back 0 on both (on Iggy
			// from the group log, docs/CONSUMER_GROUPS.md).
			if code := commit(t, g, "", -1, "t", 0, 0); code != 0 {
				t.Fatalf("commit 0: %d", code)
			}
			if off, _ := fetchCommitted(t, g, 9, "t", 0); off != 0 {
				t.Fatalf("after commit 0: %d want 0", off)
			}
			// Past the end: the embedded store keeps it, Iggy refuses.
			code := commit(t, g, "", -1, "t", 1, 7)
			if backend == "iggy" && code != kerr.InvalidCommitOffsetSize.Code || backend == "embedded" && code != 0 {
				t.Fatalf("commit past end: %d", code)
			}
			// OffsetDelete, DeleteGroups.
			commit(t, g, "", -1, "t", 0, 5)
			od := kmsg.NewPtrOffsetDeleteRequest()
			od.Group = testGroup
			odt := kmsg.NewOffsetDeleteRequestTopic()
			odt.Topic = "t"
			odt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}
			od.Topics = append(od.Topics, odt)
			if r := do(t, g, od).(*kmsg.OffsetDeleteResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("offset delete: %+v", r)
			}
			if off, _ := fetchCommitted(t, g, 9, "t", 1); off != -1 {
				t.Fatalf("after offset delete: %d", off)
			}
			dg := kmsg.NewPtrDeleteGroupsRequest()
			dg.Version = 2
			dg.Groups = []string{testGroup, "other"}
			dr := do(t, g, dg).(*kmsg.DeleteGroupsResponse)
			if dr.Groups[0].ErrorCode != 0 || dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("delete groups: %+v", dr.Groups)
			}
			if off, _ := fetchCommitted(t, g, 9, "t", 0); off != -1 {
				t.Fatalf("after delete group: %d", off)
			}
		})
	}
}

func iggyStore(t *testing.T) bridge.Store {
	t.Helper()
	backing, err := embedded.Open(t.TempDir(), embedded.Options{Sync: embedded.SyncNever, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := iggytest.Start(backing, iggytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := iggy.Open(context.Background(), iggy.Options{Addr: srv.Addr(), PoolSize: 2, CallTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		srv.Close()
		backing.Close()
	})
	return st
}

// Committed offsets survive closing and reopening the embedded store (a
// gateway restart); membership does not.
func TestGroupOffsetsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	open := func() *Gateway {
		st, err := embedded.Open(dir, embedded.Options{Sync: embedded.SyncAlways, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		g := NewGateway(Config{Stream: "kafka", NodeID: 1, MaxFrameSize: 1 << 20, Groups: GroupConfig{InitialRebalanceDelay: -1, MinSessionTimeout: 10 * time.Millisecond}}, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
		return g
	}
	g := open()
	createTopic(t, g, "t", 1)
	produceOne(t, g, produceReq(9, "t", 0, valueBatch(5)))
	a := newMember(t, g, "")
	j := await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq(a, "", time.Second, "m")))
	await[*kmsg.SyncGroupResponse](t, async(t, g, syncReq(a, "", j.Generation, map[string]string{a: "A"})))
	if code := commit(t, g, a, j.Generation, "t", 0, 4); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if err := g.Store.Close(); err != nil {
		t.Fatal(err)
	}
	g = open()
	defer g.Store.Close()
	if off, code := fetchCommitted(t, g, 9, "t", 0); code != 0 || off != 4 {
		t.Fatalf("after reopen: %d %d", off, code)
	}
	// The old member is gone: its commit is refused, it must rejoin.
	if code := commit(t, g, a, j.Generation, "t", 0, 5); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of a lost generation: %d", code)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	if r := do(t, g, lg).(*kmsg.ListGroupsResponse); len(r.Groups) != 1 || r.Groups[0].Group != testGroup || r.Groups[0].GroupState != "Empty" {
		t.Fatalf("list after reopen: %+v", r.Groups)
	}
}

func TestFindCoordinator(t *testing.T) {
	g := newGateway(t)
	for v := int16(0); v <= 6; v++ {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = v
		r.CoordinatorKey = testGroup
		r.CoordinatorKeys = []string{testGroup}
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

func TestDescribeAndListGroups(t *testing.T) {
	g := groupGateway(t)
	a, b, _ := stableTwo(t, g)
	d := describe(t, g)
	if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if d.Members[0].MemberID != a || string(d.Members[0].MemberAssignment) != "A2" || d.Members[1].MemberID != b {
		t.Fatalf("members: %+v", d.Members)
	}
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 6
	r.Groups = []string{"missing"}
	if rg := do(t, g, r).(*kmsg.DescribeGroupsResponse).Groups[0]; rg.ErrorCode != kerr.GroupIDNotFound.Code || rg.State != "Dead" {
		t.Fatalf("missing: %+v", rg)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lg.StatesFilter = []string{"stable"}
	if resp := do(t, g, lg).(*kmsg.ListGroupsResponse); len(resp.Groups) != 1 || resp.Groups[0].GroupState != "Stable" || resp.Groups[0].GroupType != "classic" {
		t.Fatalf("list: %+v", resp.Groups)
	}
	lg.StatesFilter = []string{"Empty"}
	if resp := do(t, g, lg).(*kmsg.ListGroupsResponse); len(resp.Groups) != 0 {
		t.Fatalf("list empty: %+v", resp.Groups)
	}
	// A live group cannot be deleted.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{testGroup}
	if resp := do(t, g, dg).(*kmsg.DeleteGroupsResponse); resp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete live: %+v", resp.Groups)
	}
}

func TestGroupCaps(t *testing.T) {
	g := groupGateway(t, func(c *GroupConfig) { c.MaxGroupSize = 1; c.MaxMetadataBytes = 10 })
	if r := do(t, g, joinReq("", "", time.Second, "01234567890")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("metadata cap: %d", r.ErrorCode)
	}
	newMember(t, g, "")
	if r := do(t, g, joinReq("", "", time.Second, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("group size cap: %d", r.ErrorCode)
	}
	long := kmsg.NewPtrJoinGroupRequest()
	*long = *joinReq("", "", time.Second, "m")
	long.Group = string(make([]byte, 247))
	if r := do(t, g, long).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("long group id: %d", r.ErrorCode)
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
		r := joinReq("", "fz-instance", 10*time.Second, "meta")
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
		r := syncReq("m", "", 1, map[string]string{"m": "a"})
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

// A member that does not rejoin within the rebalance timeout is removed
// when the barrier closes.
func TestGroupRebalanceTimeoutRemovesLaggard(t *testing.T) {
	g := groupGateway(t)
	a, b, gen := stableTwo(t, g)
	// b keeps its session alive but never rejoins; a (the leader)
	// rejoins, which opens a barrier that must close without b.
	start := time.Now()
	chA := async(t, g, joinReq(a, "", time.Second, "ma2"))
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				heartbeatCode(t, g, b, "", gen)
			}
		}
	}()
	ja := await[*kmsg.JoinGroupResponse](t, chA)
	close(stop)
	if ja.ErrorCode != 0 || ja.Generation != gen+1 || len(ja.Members) != 1 {
		t.Fatalf("after the rebalance timeout: %+v", ja)
	}
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Fatalf("barrier closed after %v, before the 2s rebalance timeout", d)
	}
	if code := heartbeatCode(t, g, b, "", gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("laggard: %d", code)
	}
}

// A parked join whose backstop deadline passes (or that is drained) gets
// REBALANCE_IN_PROGRESS and stops counting as joined.
func TestGroupParkedJoinFinal(t *testing.T) {
	g := groupGateway(t)
	a, _, _ := stableTwo(t, g)
	req := joinReq(a, "", time.Second, "ma")
	dec, err := Decode(11, req.Version, req.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	c := newCall(g, 11, req.Version)
	if resp, err := Lookup(11).Handle(c, dec); resp != nil || err != nil {
		t.Fatalf("join did not park: %v %v", resp, err)
	}
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
	g := groupGateway(t)
	a, b, _ := stableTwo(t, g)
	req := joinReq(a, "", time.Second, "ma")
	dec, _ := Decode(11, req.Version, req.AppendTo(nil))
	c := newCall(g, 11, req.Version)
	if resp, _ := Lookup(11).Handle(c, dec); resp != nil {
		t.Fatal("join did not park")
	}
	w := c.Parked()
	// b's rejoin closes the barrier and settles a's ticket now.
	if jb := await[*kmsg.JoinGroupResponse](t, async(t, g, joinReq(b, "", time.Second, "mb"))); jb.ErrorCode != 0 {
		t.Fatalf("b: %d", jb.ErrorCode)
	}
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
