package group

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// fakeClock fires timers only when a test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// advance moves time on by d, running every timer due on the way, in
// order, on the test goroutine.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var next *fakeTimer
		for i, t := range c.timers {
			if t.stopped {
				continue
			}
			if !t.at.After(end) {
				next = t
				c.timers = append(c.timers[:i:i], c.timers[i+1:]...)
			}
			break
		}
		// Drop stopped timers at the front.
		c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool { return t.stopped })
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		next.stopped = true
		c.now = next.at
		c.mu.Unlock()
		next.f()
	}
}

type coord848 struct {
	*Coordinator
	store bridge.Backend
	clock *fakeClock
}

func newCoord848(tb testing.TB, mods ...func(*Config)) *coord848 {
	tb.Helper()
	st, log := openTestStore(tb)
	cfg := Config{InitialRebalanceDelay: -1, MinSessionTimeout: 10 * time.Millisecond, MetadataMaxAge: -1, StreamsInitialRebalanceDelay: -1}
	for _, m := range mods {
		m(&cfg)
	}
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c := &coord848{store: st, clock: clk}
	c.Coordinator = New(Options{Config: cfg, Store: st, Stream: testStream, Log: log, Clock: clk})
	tb.Cleanup(c.Close)
	return c
}

func (c *coord848) topic(tb testing.TB, name string, parts int32) [16]byte {
	tb.Helper()
	ti, err := c.store.CreateTopic(context.Background(), testStream, name, parts)
	if err != nil {
		tb.Fatal(err)
	}
	return c.topicID(ti)
}

// cmem is a test member: it heartbeats like a client that revokes at once
// (or not, with hold) and remembers what it owns.
type cmem struct {
	t        testing.TB
	c        *coord848
	group    string
	id       string
	instance string
	epoch    int32
	owned    partSet
	topics   []string
}

func (c *coord848) member(tb testing.TB, group, id string, topics ...string) *cmem {
	return &cmem{t: tb, c: c, group: group, id: id, topics: topics, owned: partSet{}}
}

// joined is a member of group that has sent its first heartbeat.
func (c *coord848) joined(tb testing.TB, group, id string, topics ...string) *cmem {
	tb.Helper()
	m := c.member(tb, group, id, topics...)
	m.mustBeat()
	return m
}

func (m *cmem) request() *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = m.group, m.id, m.epoch
	if m.instance != "" {
		r.InstanceID = kmsg.StringPtr(m.instance)
	}
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, p := range m.owned.sortedBy(cmpTP) {
		if n := len(r.Topics); n == 0 || r.Topics[n-1].TopicID != p.topic {
			r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: p.topic})
		}
		r.Topics[len(r.Topics)-1].Partitions = append(r.Topics[len(r.Topics)-1].Partitions, p.part)
	}
	if m.epoch == 0 {
		r.RebalanceTimeoutMillis = 60000
		r.SubscribedTopicNames = m.topics
	}
	return r
}

// send sends r and returns the response (encoded and decoded again, as a
// client would read it).
func (m *cmem) send(r *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	// Through the wire encoding, as the handler gets it.
	b := r.AppendTo(nil)
	dec := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	dec.Version = r.Version
	if err := dec.ReadFrom(b); err != nil {
		m.t.Fatal(err)
	}
	resp := m.c.ConsumerHeartbeat(context.Background(), dec, "client-"+m.id, "/127.0.0.1")
	out := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	out.Version = r.Version
	if err := out.ReadFrom(resp.AppendTo(nil)); err != nil {
		m.t.Fatal(err)
	}
	return out
}

// beat heartbeats and applies the answer the way the Java client does:
// an assignment replaces what it owns (revoking at once).
func (m *cmem) beat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	resp := m.send(m.request())
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.owned = partSet{}
		for _, t := range resp.Assignment.Topics {
			for _, p := range t.Partitions {
				m.owned[tp{t.TopicID, p}] = struct{}{}
			}
		}
	}
	return resp
}

func (m *cmem) mustBeat() *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	resp := m.beat()
	if resp.ErrorCode != 0 {
		m.t.Fatalf("%s heartbeat: %v %v", m.id, kerr.ErrorForCode(resp.ErrorCode), str(resp.ErrorMessage))
	}
	return resp
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// noOverlap fails when two members own one partition.
func noOverlap(tb testing.TB, ms ...*cmem) {
	tb.Helper()
	seen := map[tp]string{}
	for _, m := range ms {
		for p := range m.owned {
			if o, ok := seen[p]; ok {
				tb.Fatalf("partition %d owned by %s and %s", p.part, o, m.id)
			}
			seen[p] = m.id
		}
	}
}

// settle heartbeats every member round robin until no assignment changes
// (the group is Stable), checking after every step that no partition has
// two owners.
func settle(tb testing.TB, ms ...*cmem) {
	tb.Helper()
	for round := 0; round < 20; round++ {
		for _, m := range ms {
			m.mustBeat()
			noOverlap(tb, ms...)
		}
		if stable(ms...) {
			return
		}
	}
	tb.Fatal("group did not settle in 20 rounds")
}

func stable(ms ...*cmem) bool {
	c := ms[0].c
	c.mu.Lock()
	defer c.mu.Unlock()
	cg := c.groups[ms[0].group].consumer
	return cg.state() == "Stable"
}

func counts(ms ...*cmem) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = len(m.owned)
	}
	return out
}

func TestConsumerRevocationBeforeAssignment(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "orders", 12)
	a := c.joined(t, "g", "a", "orders")
	if len(a.owned) != 12 || a.epoch != 1 {
		t.Fatalf("first member: %d partitions at epoch %d, want 12 at 1", len(a.owned), a.epoch)
	}
	b := c.member(t, "g", "b", "orders")
	resp := b.mustBeat()
	// Every partition is still a's: b gets none yet, but the new epoch.
	if len(b.owned) != 0 || resp.MemberEpoch != 2 {
		t.Fatalf("b before a revoked: %d partitions, epoch %d", len(b.owned), resp.MemberEpoch)
	}
	// a is asked to revoke: its assignment shrinks, its epoch stays.
	resp = a.send(a.request())
	if resp.MemberEpoch != 1 || resp.Assignment == nil || countAssign(resp.Assignment) != 6 {
		t.Fatalf("a asked to revoke: epoch %d, assignment %v", resp.MemberEpoch, resp.Assignment)
	}
	// a has not released them yet (its heartbeat still lists all 12): b
	// must still get nothing.
	for range 2 {
		if r := a.send(a.request()); r.MemberEpoch != 1 {
			t.Fatalf("a moved on while still holding: epoch %d", r.MemberEpoch)
		}
		b.mustBeat()
		if len(b.owned) != 0 {
			t.Fatalf("b got %d partitions while a still holds them", len(b.owned))
		}
	}
	// a releases (its next heartbeat lists the six it keeps): it moves to
	// epoch 2, then b gets the other six.
	a.owned = partSet{}
	for _, t := range resp.Assignment.Topics {
		for _, p := range t.Partitions {
			a.owned[tp{t.TopicID, p}] = struct{}{}
		}
	}
	a.mustBeat()
	if a.epoch != 2 || len(a.owned) != 6 {
		t.Fatalf("a after revoking: epoch %d, %d partitions", a.epoch, len(a.owned))
	}
	b.mustBeat()
	if len(b.owned) != 6 || b.epoch != 2 {
		t.Fatalf("b after a released: %d partitions at epoch %d", len(b.owned), b.epoch)
	}
	noOverlap(t, a, b)
	if !stable(a, b) {
		t.Fatal("group not Stable")
	}
}

func countAssign(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) int {
	n := 0
	for _, t := range a.Topics {
		n += len(t.Partitions)
	}
	return n
}

func TestConsumerSpreadAndJoinLeave(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "orders", 12)
	ms := []*cmem{c.member(t, "g", "m1", "orders"), c.member(t, "g", "m2", "orders"), c.member(t, "g", "m3", "orders")}
	settle(t, ms...)
	if got := counts(ms...); !slices.Equal(got, []int{4, 4, 4}) {
		t.Fatalf("3 members: %v", got)
	}
	before := map[string]partSet{}
	for _, m := range ms {
		before[m.id] = m.owned.clone()
	}
	m4 := c.member(t, "g", "m4", "orders")
	ms = append(ms, m4)
	settle(t, ms...)
	if got := counts(ms...); !slices.Equal(got, []int{3, 3, 3, 3}) {
		t.Fatalf("4 members: %v", got)
	}
	// Sticky: the three old members kept 3 of their 4 each.
	for _, m := range ms[:3] {
		if !m.owned.subsetOf(before[m.id]) {
			t.Fatalf("%s moved partitions it did not have to", m.id)
		}
	}
	// m2 leaves: the rest share its partitions.
	leave := ms[1].request()
	leave.MemberEpoch = epochLeave
	if r := ms[1].send(leave); r.ErrorCode != 0 || r.MemberEpoch != epochLeave {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	rest := []*cmem{ms[0], ms[2], ms[3]}
	settle(t, rest...)
	if got := counts(rest...); !slices.Equal(got, []int{4, 4, 4}) {
		t.Fatalf("after a leave: %v", got)
	}
	if r := ms[1].send(ms[1].request()); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after leaving: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestConsumerEpochFencing(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "orders", 4)
	a := c.joined(t, "g", "a", "orders")
	b := c.joined(t, "g", "b", "orders")
	settle(t, a, b) // a: epoch 1 -> 2
	if a.epoch != 2 {
		t.Fatalf("a at epoch %d", a.epoch)
	}
	ahead := a.request()
	ahead.MemberEpoch = 3
	if r := a.send(ahead); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("epoch ahead: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// The previous epoch with a subset of the assignment: a lost response,
	// accepted.
	prev := a.request()
	prev.MemberEpoch = 1
	if r := a.send(prev); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("previous epoch with a subset: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	// The previous epoch owning what is not its own: fenced.
	bad := a.request()
	bad.MemberEpoch = 1
	bad.Topics = append(bad.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: [16]byte{9}, Partitions: []int32{0}})
	if r := a.send(bad); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("previous epoch, foreign partition: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A fenced member rejoins with epoch 0 and its id, holding nothing.
	a.epoch, a.owned = 0, partSet{}
	a.mustBeat()
	settle(t, a, b)
	if got := counts(a, b); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("after the rejoin: %v", got)
	}
}

func TestConsumerSessionTimeout(t *testing.T) {
	t.Parallel()
	c := newCoord848(t, func(cfg *Config) { cfg.ConsumerSessionTimeout = 10 * time.Second })
	c.topic(t, "orders", 6)
	a, b := c.member(t, "g", "a", "orders"), c.member(t, "g", "b", "orders")
	settle(t, a, b)
	// b keeps heartbeating, a goes silent.
	for range 3 {
		c.clock.advance(4 * time.Second)
		b.mustBeat()
	}
	replaced(t, a, b, 6, "its session")
}

// replaced: after gone's deadline (what), gone's heartbeat is refused as
// from an unknown member, and heir's next one gets all n partitions.
func replaced(tb testing.TB, gone, heir *cmem, n int, what string) {
	tb.Helper()
	if r := gone.send(gone.request()); r.ErrorCode != kerr.UnknownMemberID.Code {
		tb.Fatalf("%s after %s: %v", gone.id, what, kerr.ErrorForCode(r.ErrorCode))
	}
	heir.mustBeat()
	if len(heir.owned) != n {
		tb.Fatalf("%s after %s was removed: %d partitions", heir.id, gone.id, len(heir.owned))
	}
}

func TestConsumerRebalanceTimeoutFences(t *testing.T) {
	t.Parallel()
	c := newCoord848(t, func(cfg *Config) { cfg.ConsumerSessionTimeout = time.Hour })
	c.topic(t, "orders", 6)
	a := c.joined(t, "g", "a", "orders")
	b := c.joined(t, "g", "b", "orders")
	// a is told to revoke but keeps listing all six (a stuck poll loop).
	hold := a.owned.clone()
	a.send(a.request())
	a.owned = hold
	c.clock.advance(59 * time.Second)
	a.send(a.request())
	b.mustBeat()
	if len(b.owned) != 0 {
		t.Fatalf("b got partitions a holds: %d", len(b.owned))
	}
	c.clock.advance(2 * time.Second) // past a's 60 s rebalance timeout
	replaced(t, a, b, 6, "its rebalance timeout")
}

func TestConsumerStaticMember(t *testing.T) {
	t.Parallel()
	c := newCoord848(t, func(cfg *Config) { cfg.ConsumerSessionTimeout = 30 * time.Second })
	c.topic(t, "orders", 6)
	a, b := c.member(t, "g", "a1", "orders"), c.member(t, "g", "b", "orders")
	a.instance = "inst-a"
	settle(t, a, b)
	mine := a.owned.clone()
	epoch := groupEpoch(c, "g")

	// A second process with the same instance id while a is live.
	dup := c.member(t, "g", "a2", "orders")
	dup.instance = "inst-a"
	if r := dup.beat(); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("instance still held: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// a stops (static leave, -2) and restarts within its session with a
	// new member id: it gets the same partitions, the group epoch stays.
	leave := a.request()
	leave.MemberEpoch = epochStaticLeave
	if r := a.send(leave); r.ErrorCode != 0 || r.MemberEpoch != epochStaticLeave {
		t.Fatalf("static leave: %v %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	c.clock.advance(10 * time.Second)
	b.mustBeat()
	if len(b.owned) != 3 {
		t.Fatalf("b took the absent static member's partitions: %d", len(b.owned))
	}
	dup.mustBeat()
	if !dup.owned.equal(mine) {
		t.Fatalf("restarted static member got %v, had %v", dup.owned.sortedBy(cmpTP), mine.sortedBy(cmpTP))
	}
	if e := groupEpoch(c, "g"); e != epoch {
		t.Fatalf("group epoch moved %d -> %d on a static rejoin", epoch, e)
	}
	// The old member id is fenced.
	if r := a.send(a.request()); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("old incarnation: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A static member that does not come back is removed at its session.
	leave = dup.request()
	leave.MemberEpoch = epochStaticLeave
	dup.send(leave)
	for range 4 {
		c.clock.advance(10 * time.Second)
		b.mustBeat()
	}
	if len(b.owned) != 6 {
		t.Fatalf("b after the static member's session: %d partitions", len(b.owned))
	}
}

func groupEpoch(c *coord848, g string) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[g].consumer.epoch
}

func TestConsumerMetadataChanges(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "orders", 4)
	a, b := c.member(t, "g", "a", "orders", "later"), c.member(t, "g", "b", "orders", "later")
	settle(t, a, b)
	if got := counts(a, b); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("start: %v", got)
	}
	if _, err := c.store.GrowPartitions(context.Background(), testStream, "orders", 8); err != nil {
		t.Fatal(err)
	}
	settle(t, a, b)
	if got := counts(a, b); !slices.Equal(got, []int{4, 4}) {
		t.Fatalf("after growing to 8: %v", got)
	}
	c.topic(t, "later", 2)
	settle(t, a, b)
	if got := counts(a, b); !slices.Equal(got, []int{5, 5}) {
		t.Fatalf("after a subscribed topic appeared: %v", got)
	}
	if err := c.store.DeleteTopic(context.Background(), testStream, "later"); err != nil {
		t.Fatal(err)
	}
	settle(t, a, b)
	if got := counts(a, b); !slices.Equal(got, []int{4, 4}) {
		t.Fatalf("after the topic was deleted: %v", got)
	}
}

func TestConsumerRegexSubscription(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "logs-a", 2)
	c.topic(t, "metrics", 2)
	m := c.member(t, "g", "a")
	r := m.request()
	r.SubscribedTopicNames = nil
	r.SubscribedTopicRegex = kmsg.StringPtr("logs-.*")
	resp := m.send(r)
	if resp.ErrorCode != 0 || countAssign(resp.Assignment) != 2 {
		t.Fatalf("regex join: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.Assignment)
	}
	m.epoch = resp.MemberEpoch
	c.topic(t, "logs-b", 3)
	m.beat()
	if len(m.owned) != 5 {
		t.Fatalf("after logs-b appeared: %d partitions", len(m.owned))
	}
	// A partial match is no match (Kafka matches the whole name).
	c.topic(t, "xlogs-c", 1)
	m.beat()
	if len(m.owned) != 5 {
		t.Fatalf("xlogs-c matched: %d", len(m.owned))
	}
	bad := c.member(t, "g", "b")
	r = bad.request()
	r.SubscribedTopicNames = nil
	r.SubscribedTopicRegex = kmsg.StringPtr("logs-(")
	if resp := bad.send(r); resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad regex: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestConsumerInvalidRequests(t *testing.T) {
	t.Parallel()
	c := newCoord848(t, func(cfg *Config) { cfg.MaxGroupSize = 2 })
	c.topic(t, "orders", 2)
	base := func() *kmsg.ConsumerGroupHeartbeatRequest { return c.member(t, "g", "x", "orders").request() }
	cases := []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		code int16
	}{
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest.Code},
		{"empty member id v1", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest.Code},
		{"owned at join", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}, kerr.InvalidRequest.Code},
		{"null owned at join", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest.Code},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest.Code},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest.Code},
		{"empty instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }, kerr.InvalidRequest.Code},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, kerr.UnsupportedAssignor.Code},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 5 }, kerr.UnknownMemberID.Code},
		{"too many owned partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.MemberEpoch = 5
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: make([]int32, maxOwnedPartitions+1)}}
		}, kerr.InvalidRequest.Code},
	}
	for _, tc := range cases {
		r := base()
		tc.mod(r)
		m := &cmem{t: t, c: c}
		if resp := m.send(r); resp.ErrorCode != tc.code {
			t.Errorf("%s: got %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tc.code))
		} else if resp.ErrorMessage == nil && tc.code == kerr.InvalidRequest.Code {
			t.Errorf("%s: no error message", tc.name)
		}
	}
	a, b, d := c.member(t, "g", "a", "orders"), c.member(t, "g", "b", "orders"), c.member(t, "g", "d", "orders")
	a.mustBeat()
	b.mustBeat()
	if r := d.beat(); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member of a group capped at 2: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// v0 hands out a member id.
	v0 := c.member(t, "g2", "", "orders").request()
	v0.Version = 0
	if r := (&cmem{t: t, c: c}).send(v0); r.ErrorCode != 0 || r.MemberID == nil || *r.MemberID == "" {
		t.Fatalf("v0 join without member id: %v %v", kerr.ErrorForCode(r.ErrorCode), r.MemberID)
	}
}

func TestConsumerRangeAssignor(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	id := c.topic(t, "orders", 5)
	a, b := c.member(t, "g", "a", "orders"), c.member(t, "g", "b", "orders")
	r := a.request()
	r.ServerAssignor = kmsg.StringPtr("range")
	resp := a.send(r)
	a.epoch = resp.MemberEpoch
	settle(t, a, b)
	want := func(m *cmem, parts ...int32) {
		t.Helper()
		exp := partSet{}
		for _, p := range parts {
			exp[tp{id, p}] = struct{}{}
		}
		if !m.owned.equal(exp) {
			t.Fatalf("%s owns %v, want %v", m.id, m.owned.sortedBy(cmpTP), exp.sortedBy(cmpTP))
		}
	}
	want(a, 0, 1, 2)
	want(b, 3, 4)
}

func TestAssignUniformBalanced(t *testing.T) {
	t.Parallel()
	t1, t2 := [16]byte{1}, [16]byte{2}
	topics := []assignTopic{{t1, "a", 7}, {t2, "b", 5}}
	all := map[[16]byte]bool{t1: true, t2: true}
	var ms []assignMember
	for i := range 5 {
		ms = append(ms, assignMember{id: fmt.Sprint(i), topics: all})
	}
	out := assignUniform(assignInput{members: ms, topics: topics})
	seen := partSet{}
	lo, hi := 99, 0
	for _, s := range out {
		lo, hi = min(lo, len(s)), max(hi, len(s))
		for p := range s {
			if seen.has(p) {
				t.Fatalf("partition assigned twice: %v", p)
			}
			seen[p] = struct{}{}
		}
	}
	if len(seen) != 12 || hi-lo > 1 {
		t.Fatalf("12 partitions over 5: %d assigned, sizes %d..%d", len(seen), lo, hi)
	}
	// Heterogeneous: a member subscribed to b only gets only b.
	ms = []assignMember{{id: "x", topics: map[[16]byte]bool{t1: true}}, {id: "y", topics: all}}
	out = assignUniform(assignInput{members: ms, topics: topics})
	for p := range out["x"] {
		if p.topic != t1 {
			t.Fatalf("x got a partition of a topic it does not subscribe to")
		}
	}
	if len(out["x"])+len(out["y"]) != 12 || len(out["x"]) != 6 {
		t.Fatalf("heterogeneous: x %d, y %d", len(out["x"]), len(out["y"]))
	}
}

func TestConsumerOffsetCommitEpochs(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "orders", 2)
	c.joined(t, "g", "a", "orders")
	commit := func(member string, epoch int32, ver int16) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = ver, "g", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 0
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return c.CommitOffsets(context.Background(), r).Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		member string
		epoch  int32
		ver    int16
		code   int16
	}{
		{"a", 1, 9, 0},
		{"a", 0, 9, kerr.StaleMemberEpoch.Code},
		{"a", 2, 9, kerr.FencedMemberEpoch.Code},
		{"a", 1, 8, kerr.UnsupportedVersion.Code},
		{"nobody", 1, 9, kerr.UnknownMemberID.Code},
		{"", -1, 9, kerr.UnknownMemberID.Code}, // admin commit while members live
	} {
		if got := commit(tc.member, tc.epoch, tc.ver); got != tc.code {
			t.Errorf("commit %s epoch %d v%d: %v, want %v", tc.member, tc.epoch, tc.ver, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.code))
		}
	}
	fetch := func(member *string, epoch int32) int16 {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "g", member, epoch
		r.Groups = append(r.Groups, rg)
		return c.FetchOffsets(context.Background(), r).Groups[0].ErrorCode
	}
	if code := fetch(kmsg.StringPtr("a"), 1); code != 0 {
		t.Errorf("fetch with the current epoch: %v", kerr.ErrorForCode(code))
	}
	if code := fetch(kmsg.StringPtr("a"), 0); code != kerr.StaleMemberEpoch.Code {
		t.Errorf("fetch with an old epoch: %v", kerr.ErrorForCode(code))
	}
	if code := fetch(nil, -1); code != 0 {
		t.Errorf("admin fetch: %v", kerr.ErrorForCode(code))
	}
}

func TestConsumerGroupTypes(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	id := c.topic(t, "orders", 2)
	a := c.member(t, "g", "a", "orders")
	a.instance = "i1"
	a.mustBeat()

	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Version = 1
	d.Groups = []string{"g", "nope"}
	dr := c.ConsumerDescribe(d)
	_ = dr.AppendTo(nil)
	g := dr.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 1 || g.AssignmentEpoch != 1 || g.AssignorName != "uniform" || len(g.Members) != 1 {
		t.Fatalf("describe: %+v", g)
	}
	m := g.Members[0]
	if m.MemberID != "a" || str(m.InstanceID) != "i1" || m.MemberEpoch != 1 || !slices.Equal(m.SubscribedTopics, []string{"orders"}) ||
		len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "orders" || m.Assignment.TopicPartitions[0].TopicID != id {
		t.Fatalf("describe member: %+v", m)
	}
	if dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %v", kerr.ErrorForCode(dr.Groups[1].ErrorCode))
	}

	// A classic group beside it.
	j := kmsg.NewPtrJoinGroupRequest()
	j.Version, j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = 3, "classic", 10000, 10000, "consumer"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	if resp, _ := c.Join(j, "", ""); resp.(*kmsg.JoinGroupResponse).ErrorCode != 0 {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(resp.(*kmsg.JoinGroupResponse).ErrorCode))
	}
	d.Groups = []string{"classic"}
	if code := c.ConsumerDescribe(d).Groups[0].ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %v", kerr.ErrorForCode(code))
	}
	l := kmsg.NewPtrListGroupsRequest()
	l.Version = 5
	types := func(filter ...string) map[string]string {
		l.TypesFilter = filter
		out := map[string]string{}
		for _, g := range c.List(context.Background(), l).Groups {
			out[g.Group] = g.GroupType + "/" + g.GroupState
		}
		return out
	}
	if got := types(); got["g"] != "consumer/Stable" || got["classic"] != "classic/CompletingRebalance" {
		t.Fatalf("ListGroups: %v", got)
	}
	if got := types("Consumer"); len(got) != 1 || got["g"] == "" {
		t.Fatalf("ListGroups consumer filter: %v", got)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 6, []string{"g"}
	if r := c.Describe(context.Background(), dg).Groups[0]; r.ErrorCode != kerr.GroupIDNotFound.Code || r.State != "Dead" {
		t.Fatalf("DescribeGroups of a consumer group: %v %s", kerr.ErrorForCode(r.ErrorCode), r.State)
	}
	// Protocols do not mix.
	j.Group = "g"
	if resp, _ := c.Join(j, "", ""); resp.(*kmsg.JoinGroupResponse).ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join to a consumer group: %v", kerr.ErrorForCode(resp.(*kmsg.JoinGroupResponse).ErrorCode))
	}
	cm := c.member(t, "classic", "z", "orders")
	if r := cm.beat(); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a classic group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// DeleteGroups refuses a live consumer group.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	if code := c.Delete(context.Background(), del).Groups[0].ErrorCode; code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a live consumer group: %v", kerr.ErrorForCode(code))
	}
}
