package group

// The state machine and the offset operations, driven through the
// Coordinator's interface as the handlers drive it (grouptest.Runner).

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/group/grouptest"
	"github.com/iggy-kafka/gateway/internal/await"
)

func TestGroupRebalanceOnJoinAndLeave(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	a, b, gen := grouptest.StableTwo(t, g)

	// A stale generation is refused.
	if code := grouptest.HeartbeatCode(t, g, a, "", gen-1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("stale heartbeat: %d", code)
	}
	if r := grouptest.Await[*kmsg.SyncGroupResponse](t, g.Async(t, grouptest.SyncReq(b, "", gen-1, nil))); r.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("stale sync: %d", r.ErrorCode)
	}
	if code := grouptest.HeartbeatCode(t, g, a, "", gen); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}

	// a leaves: b's heartbeat says rebalance, b rejoins alone.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = grouptest.Group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = a
	lr.Members = append(lr.Members, lm)
	if r := g.Do(t, lr).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	if code := grouptest.HeartbeatCode(t, g, b, "", gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after leave: %d", code)
	}
	jb := grouptest.Await[*kmsg.JoinGroupResponse](t, g.Async(t, grouptest.JoinReq(b, "", time.Second, "mb")))
	if jb.ErrorCode != 0 || jb.Generation != gen+1 || jb.LeaderID != b || len(jb.Members) != 1 {
		t.Fatalf("b alone: %+v", jb)
	}
	// The member that left is unknown now.
	if code := grouptest.HeartbeatCode(t, g, a, "", gen+1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("left member heartbeat: %d", code)
	}
	// b leaves too: the group is Empty (and stays known, as on Kafka).
	lr.Members[0].MemberID = b
	g.Do(t, lr)
	if d := grouptest.Describe(t, g); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("state after all left: %s", d.State)
	}
}

func TestGroupSessionExpiry(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	a, b, gen := grouptest.StableTwo(t, g)
	// b stops heartbeating; a keeps going until b's 1s session runs out.
	await.Until(t, 5*time.Second, func() error {
		code := grouptest.HeartbeatCode(t, g, a, "", gen)
		if code == kerr.RebalanceInProgress.Code {
			return nil
		}
		if code != 0 {
			t.Fatalf("heartbeat: %d", code)
		}
		return errors.New("a's heartbeat still answered 0: b's session has not run out")
	})
	ja := grouptest.Await[*kmsg.JoinGroupResponse](t, g.Async(t, grouptest.JoinReq(a, "", time.Second, "ma")))
	leftAlone(t, g, ja, a, b, gen, "after b's session expired")
}

// leftAlone: ja, the answer to a's rejoin, opens generation gen+1 with a
// its only member, and b's heartbeat of generation gen is refused as from
// an unknown member; when names the case.
func leftAlone(t *testing.T, g *coord, ja *kmsg.JoinGroupResponse, a, b string, gen int32, when string) {
	t.Helper()
	if ja.ErrorCode != 0 || ja.Generation != gen+1 || len(ja.Members) != 1 || ja.Members[0].MemberID != a {
		t.Fatalf("%s: %+v", when, ja)
	}
	if code := grouptest.HeartbeatCode(t, g, b, "", gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("%s: b's heartbeat answered %d", when, code)
	}
}

func TestGroupUnknownMember(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	if code := grouptest.HeartbeatCode(t, g, "nobody", "", 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat, no group: %d", code)
	}
	if r := g.Do(t, grouptest.JoinReq("nobody", "", time.Second, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join with unknown id: %d", r.ErrorCode)
	}
	grouptest.StableTwo(t, g)
	if code := grouptest.HeartbeatCode(t, g, "nobody", "", 2); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat: %d", code)
	}
	if r := g.Do(t, grouptest.SyncReq("nobody", "", 2, nil)).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("sync: %d", r.ErrorCode)
	}
	if r := g.Do(t, grouptest.JoinReq("nobody", "", time.Second, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join: %d", r.ErrorCode)
	}
	// Session outside the bounds.
	if r := g.Do(t, grouptest.JoinReq("", "", time.Hour, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session 1h: %d", r.ErrorCode)
	}
	// Commit from an unknown member of a live group.
	if code := grouptest.Commit(t, g, "nobody", 2, "t", 0, 5); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit: %d", code)
	}
}

func TestGroupStaticRejoinKeepsAssignment(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	ch1 := g.Async(t, grouptest.JoinReq("", "i-a", time.Second, "ma"))
	j1 := grouptest.Await[*kmsg.JoinGroupResponse](t, ch1)
	if j1.ErrorCode != 0 || j1.Generation != 1 {
		t.Fatalf("a: %+v", j1)
	}
	a := j1.MemberID
	grouptest.Await[*kmsg.SyncGroupResponse](t, g.Async(t, grouptest.SyncReq(a, "i-a", 1, map[string]string{a: "A1"})))
	chB := g.Async(t, grouptest.JoinReq("", "i-b", time.Second, "mb"))
	if !grouptest.Pending(chB) {
		t.Fatal("b did not wait")
	}
	ja := grouptest.Await[*kmsg.JoinGroupResponse](t, g.Async(t, grouptest.JoinReq(a, "i-a", time.Second, "ma")))
	jb := grouptest.Await[*kmsg.JoinGroupResponse](t, chB)
	b := jb.MemberID
	gen := ja.Generation
	chSB := g.Async(t, grouptest.SyncReq(b, "i-b", gen, nil))
	grouptest.Await[*kmsg.SyncGroupResponse](t, g.Async(t, grouptest.SyncReq(a, "i-a", gen, map[string]string{a: "A2", b: "B2"})))
	if sb := grouptest.Await[*kmsg.SyncGroupResponse](t, chSB); string(sb.MemberAssignment) != "B2" {
		t.Fatalf("b assignment %q", sb.MemberAssignment)
	}

	// b restarts: same instance id, no member id. It gets a new id, the
	// same generation, and no rebalance happens.
	r := grouptest.Await[*kmsg.JoinGroupResponse](t, g.Async(t, grouptest.JoinReq("", "i-b", time.Second, "mb")))
	if r.ErrorCode != 0 || r.Generation != gen || r.MemberID == b || r.MemberID == "" {
		t.Fatalf("static rejoin: %+v", r)
	}
	nb := r.MemberID
	if d := grouptest.Describe(t, g); d.State != "Stable" {
		t.Fatalf("state after static rejoin: %s", d.State)
	}
	if code := grouptest.HeartbeatCode(t, g, a, "i-a", gen); code != 0 {
		t.Fatalf("a heartbeat after static rejoin: %d (rebalance triggered?)", code)
	}
	sb := grouptest.Await[*kmsg.SyncGroupResponse](t, g.Async(t, grouptest.SyncReq(nb, "i-b", gen, nil)))
	if sb.ErrorCode != 0 || string(sb.MemberAssignment) != "B2" {
		t.Fatalf("static member's assignment after rejoin: %d %q", sb.ErrorCode, sb.MemberAssignment)
	}
	// The old incarnation is fenced.
	if code := grouptest.HeartbeatCode(t, g, b, "i-b", gen); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old static member: %d", code)
	}
	// The leader restarting keeps its role and is told to skip assignment.
	r = grouptest.Await[*kmsg.JoinGroupResponse](t, g.Async(t, grouptest.JoinReq("", "i-a", time.Second, "ma")))
	if r.ErrorCode != 0 || r.Generation != gen || r.LeaderID != r.MemberID || !r.SkipAssignment || len(r.Members) != 2 {
		t.Fatalf("static leader rejoin: %+v", r)
	}
	// Leave by instance id.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 4
	lr.Group = grouptest.Group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.InstanceID = kmsg.StringPtr("i-b")
	lm2 := kmsg.NewLeaveGroupRequestMember()
	lm2.InstanceID = kmsg.StringPtr("i-zz")
	lr.Members = append(lr.Members, lm, lm2)
	resp := g.Do(t, lr).(*kmsg.LeaveGroupResponse)
	if resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave by instance: %+v", resp.Members)
	}
	if d := grouptest.Describe(t, g); d.State != "PreparingRebalance" || len(d.Members) != 1 {
		t.Fatalf("after static leave: %s %d", d.State, len(d.Members))
	}
}

func TestGroupJoinV3NoMemberIDRequired(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	r := grouptest.JoinReq("", "", time.Second, "m")
	r.Version = 3
	j := grouptest.Await[*kmsg.JoinGroupResponse](t, g.Async(t, r))
	if j.ErrorCode != 0 || j.MemberID == "" || j.Generation != 1 {
		t.Fatalf("v3 join: %+v", j)
	}
}

func TestGroupInitialDelay(t *testing.T) {
	// Not parallel: it times a real rebalance delay, which load from parallel tests would stretch.
	g := newCoord(t, func(c *Config) { c.InitialRebalanceDelay = 300 * time.Millisecond })
	a := grouptest.NewMember(t, g, "")
	start := time.Now()
	chA := g.Async(t, grouptest.JoinReq(a, "", time.Second, "ma"))
	// b joins a while after a, inside the delay: both must land in the one
	// generation the delay waits for.
	time.Sleep(100 * time.Millisecond)
	b := grouptest.NewMember(t, g, "")
	chB := g.Async(t, grouptest.JoinReq(b, "", time.Second, "mb"))
	ja := grouptest.Await[*kmsg.JoinGroupResponse](t, chA)
	jb := grouptest.Await[*kmsg.JoinGroupResponse](t, chB)
	if time.Since(start) < 300*time.Millisecond {
		t.Fatalf("barrier closed before the delay: %v", time.Since(start))
	}
	if ja.Generation != 1 || jb.Generation != 1 || len(ja.Members)+len(jb.Members) != 2 {
		t.Fatalf("one generation for both: %+v %+v", ja, jb)
	}
}

func TestGroupCommitChecks(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	g.createTopic(t, "t", 2)
	a, b, gen := grouptest.StableTwo(t, g)
	if code := grouptest.Commit(t, g, a, gen, "t", 0, 3); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code := grouptest.Commit(t, g, b, gen-1, "t", 0, 4); code != kerr.IllegalGeneration.Code {
		t.Fatalf("stale commit: %d", code)
	}
	if code := grouptest.Commit(t, g, "", -1, "t", 0, 4); code != kerr.UnknownMemberID.Code {
		t.Fatalf("admin commit to a live group: %d", code)
	}
	if code := grouptest.Commit(t, g, a, gen, "nope", 0, 4); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", code)
	}
	if off, code := grouptest.FetchCommitted(t, g, 9, "t", 0); code != 0 || off != 3 {
		t.Fatalf("fetch: %d %d", off, code)
	}
	if off, code := grouptest.FetchCommitted(t, g, 5, "t", 1); code != 0 || off != -1 {
		t.Fatalf("fetch uncommitted: %d %d", off, code)
	}
}

func TestDescribeAndListGroups(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	a, b, _ := grouptest.StableTwo(t, g)
	d := grouptest.Describe(t, g)
	if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if d.Members[0].MemberID != a || string(d.Members[0].MemberAssignment) != "A2" || d.Members[1].MemberID != b {
		t.Fatalf("members: %+v", d.Members)
	}
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 6
	r.Groups = []string{"missing"}
	if rg := g.Do(t, r).(*kmsg.DescribeGroupsResponse).Groups[0]; rg.ErrorCode != kerr.GroupIDNotFound.Code || rg.State != "Dead" {
		t.Fatalf("missing: %+v", rg)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lg.StatesFilter = []string{"stable"}
	if resp := g.Do(t, lg).(*kmsg.ListGroupsResponse); len(resp.Groups) != 1 || resp.Groups[0].GroupState != "Stable" || resp.Groups[0].GroupType != "classic" {
		t.Fatalf("list: %+v", resp.Groups)
	}
	lg.StatesFilter = []string{"Empty"}
	if resp := g.Do(t, lg).(*kmsg.ListGroupsResponse); len(resp.Groups) != 0 {
		t.Fatalf("list empty: %+v", resp.Groups)
	}
	// A live group cannot be deleted.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{grouptest.Group}
	if resp := g.Do(t, dg).(*kmsg.DeleteGroupsResponse); resp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete live: %+v", resp.Groups)
	}
}

func TestGroupCaps(t *testing.T) {
	t.Parallel()
	g := newCoord(t, func(c *Config) { c.MaxGroupSize = 1; c.MaxMetadataBytes = 10 })
	if r := g.Do(t, grouptest.JoinReq("", "", time.Second, "01234567890")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("metadata cap: %d", r.ErrorCode)
	}
	grouptest.NewMember(t, g, "")
	if r := g.Do(t, grouptest.JoinReq("", "", time.Second, "m")).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("group size cap: %d", r.ErrorCode)
	}
	long := kmsg.NewPtrJoinGroupRequest()
	*long = *grouptest.JoinReq("", "", time.Second, "m")
	long.Group = string(make([]byte, 247))
	if r := g.Do(t, long).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("long group id: %d", r.ErrorCode)
	}
}

// A member that does not rejoin within the rebalance timeout is removed
// when the barrier closes.
func TestGroupRebalanceTimeoutRemovesLaggard(t *testing.T) {
	// Not parallel: it times a real rebalance timeout against real 1s sessions.
	g := newCoord(t)
	a, b, gen := grouptest.StableTwo(t, g)
	// b keeps its session alive but never rejoins; a (the leader)
	// rejoins, which opens a barrier that must close without b.
	start := time.Now()
	chA := g.Async(t, grouptest.JoinReq(a, "", time.Second, "ma2"))
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				grouptest.HeartbeatCode(t, g, b, "", gen)
			}
		}
	}()
	ja := grouptest.Await[*kmsg.JoinGroupResponse](t, chA)
	close(stop)
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Fatalf("barrier closed after %v, before the 2s rebalance timeout", d)
	}
	leftAlone(t, g, ja, a, b, gen, "after the rebalance timeout")
}

// A wait given up on its final run answers REBALANCE_IN_PROGRESS with the
// member's id, so the client rejoins; an open wait asks to park again.
func TestCollectFinalGivesUp(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	a, b, gen := grouptest.StableTwo(t, g)
	resp, w := g.Join(grouptest.JoinReq(a, "", time.Second, "ma2"), "", "")
	if resp != nil || w.Ticket == 0 || !w.Until.After(time.Now()) {
		t.Fatalf("join did not wait: %+v %+v", resp, w)
	}
	if r, ok := g.Collect(w, false); ok || r != nil {
		t.Fatalf("open wait collected: %+v", r)
	}
	r, ok := g.Collect(w, true)
	j, _ := r.(*kmsg.JoinGroupResponse)
	if !ok || j == nil || j.ErrorCode != kerr.RebalanceInProgress.Code || j.MemberID != a || j.Generation != -1 {
		t.Fatalf("final: %+v %v", r, ok)
	}
	// b's sync during the open barrier is answered at once.
	resp, w = g.Sync(grouptest.SyncReq(b, "", gen, nil))
	if s, ok := resp.(*kmsg.SyncGroupResponse); !ok || w.Ticket != 0 || s.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("sync during the barrier: %+v %+v", resp, w)
	}
}

// Close stops the coordinator's timers: a session that would have expired
// does not, and nothing fires after the store is gone.
func TestCloseStopsTimers(t *testing.T) {
	t.Parallel()
	g := newCoord(t)
	a := grouptest.NewMember(t, g, "")
	j := grouptest.Await[*kmsg.JoinGroupResponse](t, g.Async(t, grouptest.JoinReq(a, "", 200*time.Millisecond, "m")))
	if j.ErrorCode != 0 {
		t.Fatalf("join: %d", j.ErrorCode)
	}
	g.Close()
	// Past a's 200ms session on the real clock: the timer that would
	// expire it must not fire after Close.
	time.Sleep(500 * time.Millisecond)
	if code := grouptest.HeartbeatCode(t, g, a, "", j.Generation); code != 0 {
		t.Fatalf("heartbeat after Close: %d (a session timer fired)", code)
	}
}

// A store's refusal of the gateway's own user (Iggy permissions) reaches a
// committing or fetching client as TOPIC_AUTHORIZATION_FAILED, the other
// store failures as the codes clients retry or report.
func TestOffsetErrCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		code int16
	}{
		{nil, 0},
		{fmt.Errorf("iggy: %w", bridge.ErrNotPermitted), kerr.TopicAuthorizationFailed.Code},
		{bridge.ErrTopicNotFound, kerr.UnknownTopicOrPartition.Code},
		{bridge.ErrUnavailable, kerr.CoordinatorNotAvailable.Code},
		{context.DeadlineExceeded, kerr.RequestTimedOut.Code},
		{errors.New("other"), kerr.UnknownServerError.Code},
	}
	for _, c := range cases {
		if got := offsetErrCode(c.err); got != c.code {
			t.Errorf("offsetErrCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
}
