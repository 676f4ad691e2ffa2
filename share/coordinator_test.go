package share

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a loaded coordinator over a real embedded store with a fake
// clock, group configs the test sets and topics it declares.
type env struct {
	co    *Coordinator
	clk   *fakeClock
	store *embedded.Store
	close func()

	mu     sync.Mutex
	cfgs   map[string]bridge.GroupConfigs
	topics map[string]TopicMeta
	woken  []TP
}

// newEnv opens the store in dir (a new one when dir is "") and loads a
// coordinator from it; both are closed at cleanup or by env.close.
func newEnv(t *testing.T, cfg Config, dir string) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := embedded.Open(dir, embedded.Options{Sync: embedded.SyncNever, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{clk: &fakeClock{t: time.UnixMilli(1_800_000_000_000)}, store: st,
		cfgs: map[string]bridge.GroupConfigs{}, topics: map[string]TopicMeta{}}
	e.co = New(Options{
		Config: cfg,
		Store:  st,
		Configs: func(_ context.Context, group string) (bridge.GroupConfigs, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.cfgs[group], nil
		},
		Available: func(topic string, partition int32) {
			e.mu.Lock()
			e.woken = append(e.woken, TP{topic, partition})
			e.mu.Unlock()
		},
		Now:   e.clk.Now,
		Log:   slog.New(slog.DiscardHandler),
		Sweep: time.Hour, // the tests sweep by hand
	})
	var once sync.Once
	e.close = func() {
		once.Do(func() {
			e.co.Close()
			_ = st.Close()
		})
	}
	t.Cleanup(e.close)
	if err := e.co.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// storedValue is the store's value of key, nil when it has none.
func (e *env) storedValue(t *testing.T, key string) []byte {
	t.Helper()
	var out []byte
	err := e.store.TxnStates(context.Background(), func(k string, v []byte) {
		if k == key {
			out = append([]byte{}, v...)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) topic(name string, id byte, partitions int32) {
	e.mu.Lock()
	e.topics[name] = TopicMeta{ID: [16]byte{id}, Partitions: partitions}
	e.mu.Unlock()
}

func (e *env) lookup(_ context.Context, names []string) (map[string]TopicMeta, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]TopicMeta{}
	for _, n := range names {
		if tm, ok := e.topics[n]; ok {
			out[n] = tm
		}
	}
	return out, nil
}

func (e *env) hb(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	req.SubscribedTopicNames = topics
	return e.co.Heartbeat(context.Background(), HeartbeatInput{Req: req, ClientID: "cl", Host: "/127.0.0.1", Topics: e.lookup})
}

// assigned is member's assignment as "topic:p,p topic:p".
func (e *env) assigned(group, member string) string {
	e.co.mu.Lock()
	defer e.co.mu.Unlock()
	m := e.co.groups[group].members[member]
	var out []string
	for t, ps := range m.assigned {
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = fmt.Sprint(p)
		}
		out = append(out, t+":"+strings.Join(s, ","))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func msgOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestHeartbeatMembership(t *testing.T) {
	t.Parallel()
	e := newEnv(t, DefaultConfig(), "")
	e.topic("t", 1, 1)
	r := e.hb("g", "m1", 0, "t")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.HeartbeatIntervalMillis != 5000 || msgOf(r.MemberID) != "m1" {
		t.Fatalf("join: %+v", r)
	}
	if a := r.Assignment; a == nil || len(a.TopicPartitions) != 1 || a.TopicPartitions[0].TopicID != [16]byte{1} ||
		!slices.Equal(a.TopicPartitions[0].Partitions, []int32{0}) {
		t.Fatalf("join assignment: %+v", r.Assignment)
	}
	// Unchanged: no assignment sent again.
	if r := e.hb("g", "m1", 1); r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("steady heartbeat: %+v", r)
	}
	// A second member bumps the group epoch; m1's assignment stays.
	if r := e.hb("g", "m2", 0, "t"); r.ErrorCode != 0 || r.MemberEpoch != 2 || r.Assignment == nil {
		t.Fatalf("second join: %+v", r)
	}
	if r := e.hb("g", "m1", 1); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("m1 after m2 joined: %+v", r)
	}
	// Fenced: an epoch from the future.
	r = e.hb("g", "m2", 7)
	if r.ErrorCode != kerr.FencedMemberEpoch.Code || !strings.Contains(msgOf(r.ErrorMessage), "greater member epoch (7)") {
		t.Fatalf("fenced: %d %q", r.ErrorCode, msgOf(r.ErrorMessage))
	}
	// Leave.
	if r := e.hb("g", "m2", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	r = e.hb("g", "m2", 2)
	if r.ErrorCode != kerr.UnknownMemberID.Code || msgOf(r.ErrorMessage) != "Member m2 is not a member of group g." {
		t.Fatalf("after leaving: %d %q", r.ErrorCode, msgOf(r.ErrorMessage))
	}
	// A stranger cannot leave.
	if r := e.hb("g", "nobody", -1); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a stranger leaves: %+v", r)
	}
	// Rejoin with epoch 0 starts over.
	if r := e.hb("g", "m2", 0, "t"); r.ErrorCode != 0 || r.MemberEpoch == 0 || r.Assignment == nil {
		t.Fatalf("rejoin: %+v", r)
	}
	d := e.co.Describe("g")
	if d.ErrorCode != 0 || d.GroupState != "Stable" || len(d.Members) != 2 || d.Members[0].ClientID != "cl" {
		t.Fatalf("describe: %+v", d)
	}
}

func TestHeartbeatInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t, DefaultConfig(), "")
	e.topic("t", 1, 1)
	for _, c := range []struct {
		group, member string
		epoch         int32
		topics        []string
		code          int16
		msg           string
	}{
		{"", "m", 0, []string{"t"}, kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{" ", "m", 0, []string{"t"}, kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{"g", "", 0, []string{"t"}, kerr.InvalidRequest.Code, ""},
		{"g", "m", -2, []string{"t"}, kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"g", "m", 0, nil, kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."},
		{"g", "m", 3, nil, kerr.UnknownMemberID.Code, "Member m is not a member of group g."},
	} {
		r := e.hb(c.group, c.member, c.epoch, c.topics...)
		if r.ErrorCode != c.code || msgOf(r.ErrorMessage) != c.msg {
			t.Errorf("%q %q %d: %d %q, want %d %q", c.group, c.member, c.epoch, r.ErrorCode, msgOf(r.ErrorMessage), c.code, c.msg)
		}
	}
	if e.co.Exists("g") || e.co.Exists("") {
		t.Error("a refused heartbeat made a group")
	}
	// A group id of another group type.
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = "classic", "m", []string{"t"}
	r := e.co.Heartbeat(context.Background(), HeartbeatInput{Req: req, Topics: e.lookup, Foreign: func(g string) bool { return g == "classic" }})
	if r.ErrorCode != kerr.GroupIDNotFound.Code || msgOf(r.ErrorMessage) != "Group classic is not a share group." {
		t.Errorf("foreign group: %d %q", r.ErrorCode, msgOf(r.ErrorMessage))
	}
}

func TestHeartbeatLimits(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.MaxMembers, cfg.MaxGroups = 2, 2
	e := newEnv(t, cfg, "")
	e.topic("t", 1, 1)
	e.hb("g", "a", 0, "t")
	e.hb("g", "b", 0, "t")
	if r := e.hb("g", "c", 0, "t"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Errorf("third member: %d", r.ErrorCode)
	}
	e.hb("h", "a", 0, "t")
	if r := e.hb("i", "a", 0, "t"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Errorf("third group: %d", r.ErrorCode)
	}
}

func TestSimpleAssignor(t *testing.T) {
	t.Parallel()
	join := func(e *env, n int) []string {
		var ids []string
		for i := range n {
			id := fmt.Sprintf("m%d", i)
			if r := e.hb("g", id, 0, "t"); r.ErrorCode != 0 {
				t.Fatalf("join %s: %d", id, r.ErrorCode)
			}
			ids = append(ids, id)
		}
		return ids
	}
	t.Run("1 partition 3 members", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, DefaultConfig(), "")
		e.topic("t", 1, 1)
		for _, id := range join(e, 3) {
			if a := e.assigned("g", id); a != "t:0" {
				t.Errorf("%s: %q", id, a)
			}
		}
	})
	t.Run("4 partitions 2 members", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, DefaultConfig(), "")
		e.topic("t", 1, 4)
		seen := map[string]int{}
		for _, id := range join(e, 2) {
			a := e.assigned("g", id)
			ps := strings.Split(strings.TrimPrefix(a, "t:"), ",")
			if len(ps) != 2 {
				t.Errorf("%s: %q", id, a)
			}
			for _, p := range ps {
				seen[p]++
			}
		}
		if len(seen) != 4 {
			t.Errorf("partitions assigned: %v", seen)
		}
		for p, n := range seen {
			if n != 1 {
				t.Errorf("partition %s to %d members", p, n)
			}
		}
	})
	t.Run("4 partitions 5 members", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, DefaultConfig(), "")
		e.topic("t", 1, 4)
		seen := map[string]int{}
		for _, id := range join(e, 5) {
			a := e.assigned("g", id)
			if !strings.HasPrefix(a, "t:") || strings.Contains(a, ",") {
				t.Errorf("%s: %q, want one partition", id, a)
			}
			seen[strings.TrimPrefix(a, "t:")]++
		}
		if len(seen) != 4 {
			t.Errorf("partitions assigned: %v", seen)
		}
	})
	t.Run("a topic created later is assigned", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, DefaultConfig(), "")
		r := e.hb("g", "m", 0, "late")
		if r.ErrorCode != 0 || e.assigned("g", "m") != "" {
			t.Fatalf("join before the topic exists: %+v %q", r, e.assigned("g", "m"))
		}
		e.topic("late", 2, 2)
		r = e.hb("g", "m", r.MemberEpoch)
		if r.ErrorCode != 0 || r.Assignment == nil || e.assigned("g", "m") != "late:0,1" {
			t.Fatalf("after the topic exists: %+v %q", r, e.assigned("g", "m"))
		}
	})
}

// initPart makes the share partition of tp start at off, as a first
// ShareFetch does.
func (e *env) initPart(t *testing.T, group string, tp TP, off int64) {
	t.Helper()
	from, err := e.co.FetchFrom(context.Background(), group, tp, [16]byte{1}, func(context.Context) (int64, error) { return off, nil })
	if err != nil || from != off {
		t.Fatalf("FetchFrom: %d %v", from, err)
	}
}

func (e *env) session(r SessionRequest) SessionResult {
	return e.co.Session(context.Background(), r)
}

func (e *env) partState(group string, tp TP) string {
	e.co.mu.Lock()
	defer e.co.mu.Unlock()
	p := e.co.groups[group].parts[tp]
	if p == nil {
		return "none"
	}
	return dump(p)
}

var tp0 = TP{"t", 0}

func TestSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, DefaultConfig(), "")
	part := SessionPart{TP: tp0, TopicID: [16]byte{1}}
	open := SessionRequest{Group: "g", Member: "m", Epoch: 0, Fetch: true, Add: []SessionPart{part}}
	res := e.session(open)
	if res.Code != 0 || len(res.Parts) != 1 || res.Parts[0] != part {
		t.Fatalf("open: %+v", res)
	}
	e.initPart(t, "g", tp0, 0)
	lim := e.co.Settings(context.Background(), "g").limits()
	lim.MaxRecords = 10
	if got := e.co.Acquire("g", "m", tp0, []Batch{b(0, 3)}, lim); !slices.Equal(got, []Acquired{acq(0, 3, 1)}) {
		t.Fatalf("acquired %v", got)
	}

	for _, c := range []struct {
		name string
		r    SessionRequest
		code int16
		msg  string
	}{
		{"acks in epoch 0", SessionRequest{Group: "g", Member: "m", Epoch: 0, Fetch: true,
			Acks: []Ack{{TP: tp0, First: 0, Last: 0, Types: []int8{AckAccept}}}}, kerr.InvalidRequest.Code, ""},
		{"ShareAcknowledge in epoch 0", SessionRequest{Group: "g", Member: "m", Epoch: 0}, kerr.InvalidShareSessionEpoch.Code, ""},
		{"wrong epoch", SessionRequest{Group: "g", Member: "m", Epoch: 2, Fetch: true}, kerr.InvalidShareSessionEpoch.Code, ""},
		{"negative epoch", SessionRequest{Group: "g", Member: "m", Epoch: -2, Fetch: true}, kerr.InvalidShareSessionEpoch.Code, ""},
		{"no session", SessionRequest{Group: "g", Member: "other", Epoch: 1, Fetch: true}, kerr.ShareSessionNotFound.Code, ""},
		{"no session in another group", SessionRequest{Group: "h", Member: "m", Epoch: 1}, kerr.ShareSessionNotFound.Code, ""},
		{"empty member", SessionRequest{Group: "g", Epoch: 1}, kerr.InvalidRequest.Code, ""},
		{"long member", SessionRequest{Group: "g", Member: strings.Repeat("x", 37), Epoch: 1}, kerr.InvalidRequest.Code, ""},
	} {
		res := e.session(c.r)
		if res.Code != c.code || res.Msg != c.msg {
			t.Errorf("%s: %d %q, want %d %q", c.name, res.Code, res.Msg, c.code, c.msg)
		}
	}
	if d := e.partState("g", tp0); d != "0-4 q1m q1m q1m q1m" {
		t.Fatalf("refused requests changed the partition: %s", d)
	}

	// Epoch 1 acknowledges; the next epoch is 2.
	res = e.session(SessionRequest{Group: "g", Member: "m", Epoch: 1, Fetch: true,
		Acks: []Ack{{TP: tp0, First: 0, Last: 1, Types: []int8{AckAccept}}, {TP: TP{"t", 9}, First: 0, Last: 0, Types: []int8{AckAccept}}}})
	if res.Code != 0 || res.Acks[tp0] != 0 || res.Acks[TP{"t", 9}] != kerr.InvalidRecordState.Code || len(res.Parts) != 1 {
		t.Fatalf("epoch 1: %+v", res)
	}
	if res := e.session(SessionRequest{Group: "g", Member: "m", Epoch: 1, Fetch: true}); res.Code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 1 again: %+v", res)
	}
	// An acknowledgement batch failing leaves the partition's later ones
	// unapplied and the code the first failure's.
	res = e.session(SessionRequest{Group: "g", Member: "m", Epoch: 2,
		Acks: []Ack{{TP: tp0, First: 0, Last: 0, Types: []int8{AckAccept}}, {TP: tp0, First: 2, Last: 2, Types: []int8{AckAccept}}}})
	if res.Code != 0 || res.Acks[tp0] != kerr.InvalidRecordState.Code {
		t.Fatalf("epoch 2: %+v", res)
	}
	if d := e.partState("g", tp0); d != "2-4 q1m q1m" {
		t.Fatalf("after epoch 2: %s", d)
	}
	// Forget drops the partition from the session.
	res = e.session(SessionRequest{Group: "g", Member: "m", Epoch: 3, Fetch: true, Forget: []TP{tp0}})
	if res.Code != 0 || len(res.Parts) != 0 {
		t.Fatalf("forget: %+v", res)
	}
	// -1 closes and releases what the member holds.
	res = e.session(SessionRequest{Group: "g", Member: "m", Epoch: -1})
	if res.Code != 0 || e.co.Sessions() != 0 {
		t.Fatalf("close: %+v, %d sessions", res, e.co.Sessions())
	}
	if d := e.partState("g", tp0); d != "2-4 a1 a1" {
		t.Fatalf("after close: %s", d)
	}
	if !slices.Contains(e.woken, tp0) {
		t.Error("closing released records without waking fetches")
	}
	if res := e.session(SessionRequest{Group: "g", Member: "m", Epoch: 4, Fetch: true}); res.Code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("after close: %+v", res)
	}
}

func TestSessionLimit(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.MaxSessions = 3
	e := newEnv(t, cfg, "")
	for i := range 3 {
		if res := e.session(SessionRequest{Group: "g", Member: fmt.Sprint("m", i), Fetch: true}); res.Code != 0 {
			t.Fatalf("session %d: %+v", i, res)
		}
	}
	if res := e.session(SessionRequest{Group: "g", Member: "m3", Fetch: true}); res.Code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("fourth session: %+v", res)
	}
	// A member's own session reopens at the limit.
	if res := e.session(SessionRequest{Group: "g", Member: "m0", Fetch: true}); res.Code != 0 {
		t.Fatalf("reopen: %+v", res)
	}
	if res := e.session(SessionRequest{Group: "g", Member: "m0", Epoch: -1}); res.Code != 0 {
		t.Fatalf("close: %+v", res)
	}
	if res := e.session(SessionRequest{Group: "g", Member: "m3", Fetch: true}); res.Code != 0 {
		t.Fatalf("after a close: %+v", res)
	}
	if e.co.Sessions() != 3 {
		t.Fatalf("%d sessions", e.co.Sessions())
	}
}

func TestSweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, DefaultConfig(), "")
	e.topic("t", 1, 1)
	e.cfgs["g"] = bridge.GroupConfigs{CfgSessionTimeout: "50000", CfgLockDuration: "20000"}
	ctx := context.Background()
	for _, m := range []string{"a", "b"} {
		if r := e.hb("g", m, 0, "t"); r.ErrorCode != 0 {
			t.Fatal(r.ErrorCode)
		}
		e.session(SessionRequest{Group: "g", Member: m, Fetch: true, Add: []SessionPart{{TP: tp0, TopicID: [16]byte{1}}}})
	}
	e.initPart(t, "g", tp0, 0)
	lim := e.co.Settings(ctx, "g").limits()
	lim.MaxRecords = 2
	e.co.Acquire("g", "a", tp0, []Batch{b(0, 1)}, lim)
	e.clk.Advance(10 * time.Second)
	e.co.Acquire("g", "b", tp0, []Batch{b(2, 3)}, lim)

	// a's lock ends at 20 s; b's at 30 s.
	e.clk.Advance(10*time.Second - time.Millisecond)
	e.co.sweep(ctx)
	if d := e.partState("g", tp0); d != "0-4 q1a q1a q1b q1b" {
		t.Fatalf("before the lock ends: %s", d)
	}
	e.clk.Advance(time.Millisecond)
	e.co.sweep(ctx)
	if d := e.partState("g", tp0); d != "0-4 a1 a1 q1b q1b" {
		t.Fatalf("at a's lock end: %s", d)
	}
	if !slices.Contains(e.woken, tp0) {
		t.Error("expiry woke no fetch")
	}
	// The release is durable.
	if p := e.stored(t, "g", tp0); dump(p) != "0-4 a1 a1 a1 a1" {
		t.Fatalf("stored after expiry: %s", dump(p))
	}

	// b heartbeats; a does not: a's session ends at 50 s.
	e.clk.Advance(25 * time.Second) // 45 s
	if r := e.hb("g", "b", e.memberEpoch("g", "b")); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	e.co.Acquire("g", "a", tp0, []Batch{b(0, 1)}, lim) // a holds 0-1 again (until 65 s)
	e.clk.Advance(5 * time.Second)                     // 50 s
	e.co.sweep(ctx)
	if e.memberEpoch("g", "a") != -1 || e.memberEpoch("g", "b") <= 0 {
		t.Fatal("the session timeout did not remove a alone")
	}
	if d := e.partState("g", tp0); d != "0-4 a2 a2 a1 a1" {
		t.Fatalf("after a's session ended: %s", d)
	}
	if res := e.session(SessionRequest{Group: "g", Member: "a", Epoch: 1}); res.Code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("a's share session outlived it: %+v", res)
	}
	// b now has the whole topic and epoch moved.
	if r := e.hb("g", "b", e.memberEpoch("g", "b")); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
}

func (e *env) memberEpoch(group, member string) int32 {
	e.co.mu.Lock()
	defer e.co.mu.Unlock()
	if m := e.co.groups[group].members[member]; m != nil {
		return m.epoch
	}
	return -1
}

// stored reads the durable state of a share partition.
func (e *env) stored(t *testing.T, group string, tp TP) *Partition {
	t.Helper()
	v := e.storedValue(t, stateKey(group, tp.Topic, tp.Partition))
	if v == nil {
		t.Fatal("no stored state")
	}
	p, err := parseState(v, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAcknowledgementsDurable: a coordinator built over the store another
// one wrote never hands out an accepted record and hands out every other
// one, with its delivery count kept.
func TestAcknowledgementsDurable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnv(t, DefaultConfig(), dir)
	e.session(SessionRequest{Group: "g", Member: "m", Fetch: true})
	e.initPart(t, "g", tp0, 100)
	lim := e.co.Settings(context.Background(), "g").limits()
	lim.MaxRecords = 100
	e.co.Acquire("g", "m", tp0, []Batch{b(100, 109)}, lim)
	res := e.session(SessionRequest{Group: "g", Member: "m", Epoch: 1, Acks: []Ack{
		{TP: tp0, First: 100, Last: 104, Types: []int8{AckAccept, AckAccept, AckRelease, AckAccept, AckReject}},
		{TP: tp0, First: 107, Last: 107, Types: []int8{AckAccept}},
	}})
	if res.Code != 0 || res.Acks[tp0] != 0 {
		t.Fatalf("acks: %+v", res)
	}
	// The gateway dies holding 105, 106, 108, 109: a new one loads.
	e.close()
	e2 := newEnv(t, DefaultConfig(), dir)
	if !e2.co.Exists("g") {
		t.Fatal("the group was not loaded")
	}
	from, err := e2.co.FetchFrom(context.Background(), "g", tp0, [16]byte{1}, func(context.Context) (int64, error) {
		t.Fatal("a loaded share partition started over")
		return 0, nil
	})
	if err != nil || from != 102 {
		t.Fatalf("fetch from %d %v", from, err)
	}
	e2.session(SessionRequest{Group: "g", Member: "n", Fetch: true})
	got := e2.co.Acquire("g", "n", tp0, []Batch{b(100, 109), b(110, 110)}, lim)
	want := []Acquired{acq(102, 102, 2), acq(105, 106, 2), acq(108, 109, 2), acq(110, 110, 1)}
	if !slices.Equal(got, want) {
		t.Fatalf("after the restart acquired %v, want %v", got, want)
	}
	// What a coordinator loads is the last write: a later acknowledgement
	// on e2 wins over e's.
	e2.session(SessionRequest{Group: "g", Member: "n", Epoch: 1, Acks: []Ack{{TP: tp0, First: 102, Last: 102, Types: []int8{AckAccept}}}})
	e2.close()
	e3 := newEnv(t, DefaultConfig(), dir)
	if from, _ := e3.co.FetchFrom(context.Background(), "g", tp0, [16]byte{1}, nil); from != 105 {
		t.Fatalf("third load fetches from %d", from)
	}
	// A damaged value is skipped, not fatal; others' keys are left alone.
	if err := e3.store.PutTxnStates(context.Background(), []bridge.TxnStateEntry{
		{Key: stateKey("bad", "t", 0), Value: []byte{9, 9}}, {Key: "txn/x", Value: []byte{1}}}); err != nil {
		t.Fatal(err)
	}
	e3.close()
	e4 := newEnv(t, DefaultConfig(), dir)
	if e4.co.Exists("bad") || !e4.co.Exists("g") {
		t.Fatal("a damaged state made a group, or a good one was lost")
	}
}

func TestAdminNeedsEmptyGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t, DefaultConfig(), "")
	e.topic("t", 1, 1)
	ctx := context.Background()
	if code := e.co.Delete(ctx, "g"); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete of a missing group: %d", code)
	}
	if code, had := e.co.DeleteOffsets(ctx, "g", []string{"t"}); code != 0 || len(had) != 0 {
		t.Fatalf("delete offsets of a missing group: %d %v", code, had)
	}
	e.hb("g", "m", 0, "t")
	e.initPart(t, "g", tp0, 5)
	to := map[TP]int64{tp0: 50}
	ids := map[string][16]byte{"t": {1}}
	if code := e.co.AlterOffsets(ctx, "g", to, ids); code != kerr.NonEmptyGroup.Code {
		t.Errorf("alter: %d", code)
	}
	if code, _ := e.co.DeleteOffsets(ctx, "g", []string{"t"}); code != kerr.NonEmptyGroup.Code {
		t.Errorf("delete offsets: %d", code)
	}
	if code := e.co.Delete(ctx, "g"); code != kerr.NonEmptyGroup.Code {
		t.Errorf("delete: %d", code)
	}
	if d := e.partState("g", tp0); d != "5-5" {
		t.Fatalf("refused admin calls changed the partition: %s", d)
	}
	e.hb("g", "m", -1)
	if code := e.co.AlterOffsets(ctx, "g", to, ids); code != 0 {
		t.Fatalf("alter: %d", code)
	}
	if p := e.stored(t, "g", tp0); p.start != 50 {
		t.Fatalf("stored start %d after alter", p.start)
	}
	if offs, _ := e.co.Offsets(context.Background(), "g"); offs[tp0].Start != 50 {
		o := offs[tp0]
		t.Fatalf("offsets %+v", o)
	}
	if code, had := e.co.DeleteOffsets(ctx, "g", []string{"t", "u"}); code != 0 || !had["t"] || had["u"] {
		t.Fatalf("delete offsets: %d %v", code, had)
	}
	key := stateKey("g", "t", 0)
	if e.storedValue(t, key) != nil || e.partState("g", tp0) != "none" {
		t.Fatal("deleted offsets stayed")
	}
	e.initPart(t, "g", tp0, 7)
	if code := e.co.Delete(ctx, "g"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if e.co.Exists("g") || e.storedValue(t, key) != nil {
		t.Fatal("a deleted group stayed")
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.MaxInFlight = 1000
	e := newEnv(t, cfg, "")
	ctx := context.Background()
	def := Settings{AutoOffsetReset: "latest", LockMs: 30000, DeliveryLimit: 5, SessionMs: 45000, HeartbeatMs: 5000, MaxInFlight: 1000}
	if s := e.co.Settings(ctx, "g"); s != def {
		t.Fatalf("defaults %+v", s)
	}
	e.mu.Lock()
	e.cfgs["g"] = bridge.GroupConfigs{
		CfgAutoOffsetReset: "earliest", CfgIsolationLevel: "read_committed", CfgLockDuration: "15000",
		CfgDeliveryLimit: "2", CfgSessionTimeout: "60000", CfgHeartbeatInterval: "7000", CfgMaxRecordLocks: "200",
	}
	e.mu.Unlock()
	if s := e.co.Settings(ctx, "g"); s != def {
		t.Fatalf("read again within a second: %+v", s)
	}
	e.clk.Advance(time.Second)
	want := Settings{AutoOffsetReset: "earliest", ReadCommitted: true, LockMs: 15000, DeliveryLimit: 2, SessionMs: 60000, HeartbeatMs: 7000, MaxInFlight: 200}
	if s := e.co.Settings(ctx, "g"); s != want {
		t.Fatalf("set: %+v", s)
	}
	// Values that do not parse keep the defaults.
	e.mu.Lock()
	e.cfgs["h"] = bridge.GroupConfigs{CfgLockDuration: "x", CfgDeliveryLimit: "-1", CfgMaxRecordLocks: "many", CfgIsolationLevel: "read_uncommitted", CfgSessionTimeout: "99999999999"}
	e.mu.Unlock()
	if s := e.co.Settings(ctx, "h"); s != def {
		t.Fatalf("bad values: %+v", s)
	}
	// The group's heartbeat interval is what the heartbeat answers.
	e.topic("t", 1, 1)
	if r := e.hb("g", "m", 0, "t"); r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("heartbeat interval %d", r.HeartbeatIntervalMillis)
	}
}

// Members acquiring, accepting and releasing the same partition at once,
// with locks expiring under them: every record is accepted exactly once.
func TestConcurrentMembersAcceptOnce(t *testing.T) {
	t.Parallel()
	const total, members = 5000, 4
	e := newEnv(t, DefaultConfig(), "")
	e.cfgs["g"] = bridge.GroupConfigs{CfgDeliveryLimit: "1000", CfgLockDuration: "30000"} // every sweep ends every lock
	ctx := context.Background()
	e.session(SessionRequest{Group: "g", Member: "init", Fetch: true})
	e.initPart(t, "g", tp0, 0)
	var mu sync.Mutex
	var refused atomic.Int64
	accepted := make([]int, total)
	done := func() bool {
		e.co.mu.Lock()
		defer e.co.mu.Unlock()
		return e.co.groups["g"].parts[tp0].start >= total
	}
	// Locks end under the members, at any point of
	// their work: every second pass of a member lets the sweeper run once.
	tick, stop, swept := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(swept)
		for {
			select {
			case <-stop:
				return
			case <-tick:
				e.clk.Advance(31 * time.Second)
				e.co.sweep(ctx)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member := fmt.Sprint("m", i)
			epoch := int32(0)
			var pending []Ack
			lim := e.co.Settings(ctx, "g").limits()
			lim.MaxRecords = 7
			for n := 0; !done(); n++ {
				if n > 100000 {
					t.Error("no progress")
					return
				}
				if n%4 == 0 {
					select {
					case tick <- struct{}{}:
					default:
					}
				}
				if epoch == 0 {
					if res := e.session(SessionRequest{Group: "g", Member: member, Fetch: true}); res.Code != 0 {
						t.Error(res)
						return
					}
					epoch = 1
				}
				from, err := e.co.FetchFrom(ctx, "g", tp0, [16]byte{1}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				var batches []Batch
				for off := from - from%5; off < min(from+40, total); off += 5 {
					batches = append(batches, Batch{Base: off, Last: off + 4})
				}
				// Acknowledged a pass late, as a slow consumer does.
				acks := pending
				pending = nil
				for _, a := range e.co.Acquire("g", member, tp0, batches, lim) {
					typ := AckAccept
					if (a.First+int64(n))%5 == 0 {
						typ = AckRelease
					}
					pending = append(pending, Ack{TP: tp0, First: a.First, Last: a.Last, Types: []int8{typ}})
				}
				for _, a := range acks { // one batch a request: its code is its own
					res := e.session(SessionRequest{Group: "g", Member: member, Epoch: epoch, Fetch: true, Acks: []Ack{a}})
					if res.Code == kerr.ShareSessionNotFound.Code {
						epoch = 0
						break
					}
					if res.Code != 0 {
						t.Error(res)
						return
					}
					epoch++
					if res.Acks[tp0] != 0 {
						refused.Add(1)
					}
					if res.Acks[tp0] != 0 || a.Types[0] != AckAccept {
						continue // a lock ended first, or released
					}
					mu.Lock()
					for off := a.First; off <= a.Last; off++ {
						accepted[off]++
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-swept
	t.Logf("refused %d", refused.Load())
	for off, n := range accepted {
		if n != 1 {
			t.Fatalf("offset %d accepted %d times", off, n)
		}
	}
}

// TestForgetTopic: a deleted topic's share partitions leave every group
// and the store; another topic's stay.
func TestForgetTopic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, DefaultConfig(), "")
	if r := e.session(SessionRequest{Group: "g", Member: "m", Fetch: true}); r.Code != 0 {
		t.Fatalf("open: %+v", r)
	}
	other := TP{"u", 0}
	e.initPart(t, "g", tp0, 0)
	e.initPart(t, "g", other, 0)
	e.co.ForgetTopic(context.Background(), tp0.Topic)
	if got := e.partState("g", tp0); got != "none" {
		t.Fatalf("deleted topic's share partition kept: %s", got)
	}
	if e.storedValue(t, stateKey("g", tp0.Topic, tp0.Partition)) != nil {
		t.Fatal("deleted topic's state still stored")
	}
	if e.partState("g", other) == "none" || e.storedValue(t, stateKey("g", other.Topic, other.Partition)) == nil {
		t.Fatal("the other topic's share partition was dropped")
	}
}
