package group

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wordCountTopology is the topology a Kafka Streams word count sends:
// subtopology 0 reads lines and writes the repartition topic, 1 reads it
// and keeps counts in a store with a changelog.
func wordCountTopology(app, input string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = 0
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics = "0", []string{input}
	s0.RepartitionSinkTopics = []string{app + "-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1" // its source is the repartition topic, named only there (as Streams sends it)
	rp := kmsg.NewTopicInfo()
	rp.Topic = app + "-words-repartition"
	rp.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{rp}
	cl := kmsg.NewTopicInfo()
	cl.Topic = app + "-counts-changelog"
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{cl}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

func TestStreamsTopologyConfigure(t *testing.T) {
	t.Parallel()
	topo, _, msg := topologyFrom(wordCountTopology("app", "lines"))
	if msg != "" {
		t.Fatal(msg)
	}
	for _, tc := range []struct {
		name   string
		meta   map[string]int32
		ready  bool
		status int8 // -1: none
		create []string
		tasks  int32
	}{
		{"source missing", map[string]int32{}, false, statusMissingSourceTopics, nil, 0},
		{"internal topics missing", map[string]int32{"lines": 4}, false, statusMissingInternalTopics,
			[]string{"app-words-repartition", "app-counts-changelog"}, 4},
		{"changelog missing", map[string]int32{"lines": 4, "app-words-repartition": 4}, false, statusMissingInternalTopics,
			[]string{"app-counts-changelog"}, 4},
		{"ready", map[string]int32{"lines": 4, "app-words-repartition": 4, "app-counts-changelog": 4}, true, -1, nil, 4},
		{"repartition topic mis-sized", map[string]int32{"lines": 4, "app-words-repartition": 2, "app-counts-changelog": 4}, false,
			statusIncorrectlyPartitioned, nil, 4},
	} {
		c := topo.configure(tc.meta)
		if c.ready != tc.ready {
			t.Errorf("%s: ready %v", tc.name, c.ready)
		}
		switch {
		case tc.status < 0 && len(c.status) > 0:
			t.Errorf("%s: status %+v", tc.name, c.status)
		case tc.status >= 0 && (len(c.status) != 1 || c.status[0].code != tc.status):
			t.Errorf("%s: status %+v, want code %d", tc.name, c.status, tc.status)
		}
		var names []string
		for _, ct := range c.create {
			names = append(names, ct.name)
			if ct.partitions != 4 {
				t.Errorf("%s: %s to create with %d partitions, want 4", tc.name, ct.name, ct.partitions)
			}
		}
		if fmt.Sprint(names) != fmt.Sprint(tc.create) {
			t.Errorf("%s: creates %v, want %v", tc.name, names, tc.create)
		}
		if tc.tasks > 0 && (c.tasks["0"] != tc.tasks || c.tasks["1"] != tc.tasks) {
			t.Errorf("%s: tasks %v", tc.name, c.tasks)
		}
	}
}

// A copartition group (a join) whose source topics differ in partitions
// is INCORRECTLY_PARTITIONED_TOPICS; a repartition topic in it takes the
// group's count.
func TestStreamsTopologyCopartition(t *testing.T) {
	t.Parallel()
	tr := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s.SubtopologyID, s.SourceTopics = "0", []string{"left", "right"}
	rp := kmsg.NewTopicInfo()
	rp.Topic = "rekeyed"
	s.RepartitionSourceTopics = []kmsg.TopicInfo{rp}
	s.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0, 1}, RepartitionSourceTopics: []int16{0}}}
	tr.Subtopologies = append(tr.Subtopologies, s)
	topo, _, msg := topologyFrom(&tr)
	if msg != "" {
		t.Fatal(msg)
	}
	if c := topo.configure(map[string]int32{"left": 3, "right": 5}); c.ready || len(c.status) != 1 || c.status[0].code != statusIncorrectlyPartitioned {
		t.Fatalf("left 3, right 5: %+v", c.status)
	}
	c := topo.configure(map[string]int32{"left": 3, "right": 3})
	if len(c.create) != 1 || c.create[0].name != "rekeyed" || c.create[0].partitions != 3 {
		t.Fatalf("left 3, right 3: creates %+v", c.create)
	}
	// Out-of-range indexes are refused at the heartbeat.
	tr.Subtopologies[0].CopartitionGroups[0].SourceTopics = []int16{7}
	if _, _, msg := topologyFrom(&tr); msg == "" {
		t.Fatal("an out-of-range copartition index was accepted")
	}
}

func TestStreamsAssignorSpreadsAndSticks(t *testing.T) {
	t.Parallel()
	tasks := map[string]int32{"0": 4, "1": 4}
	ms := []taskMember{{id: "a", process: "p1"}, {id: "b", process: "p2"}}
	stateful := map[string]bool{"0": true, "1": true}
	first := assignTasks(ms, tasks, stateful, 1)
	for _, id := range []string{"a", "b"} {
		if n := len(first[id].active); n != 4 {
			t.Fatalf("%s: %d active tasks, want 4: %v", id, n, first)
		}
		if n := len(first[id].standby); n != 4 {
			t.Fatalf("%s: %d standby tasks, want 4: %v", id, n, first)
		}
		for tk := range first[id].active {
			if first[id].standby.has(tk) {
				t.Fatalf("%s: task %v both active and standby", id, tk)
			}
		}
	}
	// A third member: the first two keep what they can (3 each at most).
	ms[0].prev, ms[1].prev = first["a"], first["b"]
	ms = append(ms, taskMember{id: "c", process: "p3"})
	second := assignTasks(ms, tasks, stateful, 1)
	for _, id := range []string{"a", "b"} {
		kept := 0
		for tk := range second[id].active {
			if first[id].active.has(tk) {
				kept++
			}
		}
		if kept != len(second[id].active) || kept < 2 {
			t.Fatalf("%s kept %d of %v (now %v)", id, kept, first[id].active, second[id].active)
		}
	}
	total := 0
	for _, a := range second {
		total += len(a.active)
	}
	if total != 8 || len(second["c"].active) < 2 {
		t.Fatalf("second assignment %v", second)
	}
	// One process with two threads: no standby can go anywhere.
	one := assignTasks([]taskMember{{id: "a", process: "p"}, {id: "b", process: "p"}}, tasks, stateful, 1)
	if len(one["a"].standby)+len(one["b"].standby) != 0 || len(one["a"].active) != 4 {
		t.Fatalf("one process: %v", one)
	}
}

// smem is a test streams member: it heartbeats like a Streams client that
// gives up revoked tasks at once and remembers what it owns.
type smem struct {
	t                 testing.TB
	c                 *coord848
	group, id, proc   string
	epoch             int32
	active, standby   taskSet
	given             taskSet // the latest active tasks the coordinator sent
	status            []kmsg.StreamsGroupHeartbeatResponseStatus
	keepRevoked       bool
	topo              *kmsg.StreamsGroupHeartbeatRequestTopology
	lastCreate        []StreamsTopic
	lastEndpointEpoch int32
}

func (c *coord848) smember(tb testing.TB, group, id, proc string, topo *kmsg.StreamsGroupHeartbeatRequestTopology) *smem {
	return &smem{t: tb, c: c, group: group, id: id, proc: proc, topo: topo, active: taskSet{}, standby: taskSet{}}
}

func (m *smem) request() *kmsg.StreamsGroupHeartbeatRequest {
	if !m.keepRevoked && m.given != nil {
		m.active = m.given // gives up what it was holding on to
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.EndpointInformationEpoch = m.lastEndpointEpoch
	req.ActiveTasks = tasksByTopology(m.active)
	req.StandbyTasks, req.WarmupTasks = tasksByTopology(m.standby), []kmsg.TaskIDs{}
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = m.topo
		req.ProcessID = kmsg.StringPtr(m.proc)
		req.ActiveTasks, req.StandbyTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	return req
}

func (m *smem) send(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	resp, create := m.c.StreamsHeartbeat(context.Background(), req, "client", "/127.0.0.1")
	m.lastCreate = create
	return resp
}

// beat sends one heartbeat and applies the answer.
func (m *smem) beat() *kmsg.StreamsGroupHeartbeatResponse {
	m.t.Helper()
	resp := m.send(m.request())
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch, m.status, m.lastEndpointEpoch = resp.MemberEpoch, resp.Status, resp.EndpointInformationEpoch
	if resp.ActiveTasks != nil {
		next := taskSet{}
		for _, ts := range resp.ActiveTasks {
			for _, p := range ts.Partitions {
				next[taskID{ts.SubtopologyID, p}] = struct{}{}
			}
		}
		m.given = next
		if m.keepRevoked {
			held := taskSet{}
			for tk := range next {
				held[tk] = struct{}{}
			}
			for tk := range m.active {
				held[tk] = struct{}{}
			}
			next = held
		}
		m.active = next
		m.standby = taskSet{}
		for _, ts := range resp.StandbyTasks {
			for _, p := range ts.Partitions {
				m.standby[taskID{ts.SubtopologyID, p}] = struct{}{}
			}
		}
	}
	return resp
}

func (m *smem) mustBeat() *kmsg.StreamsGroupHeartbeatResponse {
	m.t.Helper()
	resp := m.beat()
	if resp.ErrorCode != 0 {
		m.t.Fatalf("%s: heartbeat: %v %v", m.id, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	return resp
}

// createInternal creates what the last heartbeat asked for, as the
// handler does.
func (m *smem) createInternal() {
	m.t.Helper()
	for _, ct := range m.lastCreate {
		if _, err := m.c.store.CreateTopic(context.Background(), testStream, ct.Name, ct.Partitions); err != nil {
			m.t.Fatal(err)
		}
	}
	m.c.TopicsChanged()
}

// noDoubleActive fails if a task is active on two members at once.
func noDoubleActive(tb testing.TB, ms ...*smem) {
	tb.Helper()
	seen := map[taskID]string{}
	for _, m := range ms {
		for tk := range m.active {
			if o, ok := seen[tk]; ok {
				tb.Fatalf("task %v active on %s and %s", tk, o, m.id)
			}
			seen[tk] = m.id
		}
	}
}

func TestStreamsJoinCreatesInternalTopicsThenAssigns(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 4)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	resp := a.mustBeat()
	if len(resp.Status) != 1 || resp.Status[0].StatusCode != statusMissingInternalTopics || len(a.active) != 0 {
		t.Fatalf("first heartbeat: status %+v, tasks %v", resp.Status, a.active)
	}
	if len(a.lastCreate) != 2 {
		t.Fatalf("to create: %+v", a.lastCreate)
	}
	a.createInternal()
	resp = a.mustBeat()
	if len(resp.Status) != 0 || len(a.active) != 8 {
		t.Fatalf("after creation: status %+v, %d tasks", resp.Status, len(a.active))
	}
	if a.epoch != 2 {
		t.Fatalf("member epoch %d, want 2 (join, then topics ready)", a.epoch)
	}
	d := c.StreamsDescribe(context.Background(), &kmsg.StreamsGroupDescribeRequest{Groups: []string{"app", "nope"}}, func(string) bool { return true })
	g := d.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 1 || len(g.Topology.Subtopologies) != 2 || len(g.Members[0].Assignment.ActiveTasks) != 2 {
		t.Fatalf("describe: %+v", g)
	}
	if d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe of an unknown group: %v", kerr.ErrorForCode(d.Groups[1].ErrorCode))
	}
}

// A second member gets tasks only after the first revoked them: no task
// is ever active on both.
func TestStreamsRevocationBeforeAssignment(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 4)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	a.mustBeat()
	a.createInternal()
	a.mustBeat()
	b := c.smember(t, "app", "b", "p2", wordCountTopology("app", "lines"))
	a.keepRevoked = true // a has not given up its tasks yet
	b.mustBeat()
	a.mustBeat()
	b.mustBeat()
	noDoubleActive(t, a, b)
	if len(b.active) != 0 {
		t.Fatalf("b got %v while a still holds them", b.active)
	}
	a.keepRevoked = false
	for range 3 {
		a.mustBeat()
		b.mustBeat()
		noDoubleActive(t, a, b)
	}
	if len(a.active) != 4 || len(b.active) != 4 {
		t.Fatalf("after revocation: a %v, b %v", a.active, b.active)
	}
}

func TestStreamsSessionExpiryMovesTasks(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 2)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	a.mustBeat()
	a.createInternal()
	b := c.smember(t, "app", "b", "p2", wordCountTopology("app", "lines"))
	for range 3 {
		a.mustBeat()
		b.mustBeat()
	}
	if len(a.active) != 2 || len(b.active) != 2 {
		t.Fatalf("a %v, b %v", a.active, b.active)
	}
	for range 3 { // a goes silent; b heartbeats through a's session
		c.clock.advance(20 * time.Second)
		b.mustBeat()
	}
	if len(b.active) != 4 {
		t.Fatalf("b after a's session ended: %v", b.active)
	}
	if r := a.beat(); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a after its session ended: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestStreamsHeartbeatErrors(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 1)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	a.mustBeat()
	for _, tc := range []struct {
		name string
		mod  func(*kmsg.StreamsGroupHeartbeatRequest)
		code int16
	}{
		{"epoch ahead", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = 9 }, kerr.FencedMemberEpoch.Code},
		{"unknown member", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "zz" }, kerr.UnknownMemberID.Code},
		{"empty group", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest.Code},
		{"empty member id", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{"topology after joining", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = wordCountTopology("app", "lines") }, kerr.InvalidRequest.Code},
		{"join without topology", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.MemberEpoch, r.MemberID, r.Topology, r.ProcessID = 0, "new", nil, kmsg.StringPtr("p")
		}, kerr.InvalidRequest.Code},
		{"epoch below -2", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest.Code},
	} {
		req := a.request()
		tc.mod(req)
		if r := a.send(req); r.ErrorCode != tc.code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(tc.code))
		}
	}
	// A consumer group's id is not a streams group.
	cm := c.joined(t, "cg", "m1", "lines")
	_ = cm
	b := c.smember(t, "cg", "s1", "p", wordCountTopology("app", "lines"))
	if r := b.beat(); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("streams join of a consumer group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Leaving, then leaving again.
	req := a.request()
	req.MemberEpoch = epochLeave
	if r := a.send(req); r.ErrorCode != 0 || r.MemberEpoch != epochLeave {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	if r := a.send(req); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("second leave: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// Offset commits of a streams member carry its epoch.
func TestStreamsOffsetCommitChecksEpoch(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 1)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	a.mustBeat()
	for _, tc := range []struct {
		member string
		epoch  int32
		code   int16
	}{
		{"a", a.epoch, 0},
		{"a", a.epoch + 1, kerr.StaleMemberEpoch.Code}, // Kafka 4.4: 113 either way
		{"a", a.epoch - 1, kerr.StaleMemberEpoch.Code},
		{"zz", a.epoch, kerr.UnknownMemberID.Code},
		{"", -1, kerr.UnknownMemberID.Code}, // an admin tool while members are live
	} {
		if code := c.commitCheck("app", tc.member, "", tc.epoch, 9); code != tc.code {
			t.Errorf("commit by %q epoch %d: %v, want %v", tc.member, tc.epoch, kerr.ErrorForCode(code), kerr.ErrorForCode(tc.code))
		}
	}
}

// A new group's first assignment waits for the initial rebalance delay
// (ASSIGNMENT_DELAYED meanwhile), so the app's other instances join first.
func TestStreamsInitialRebalanceDelay(t *testing.T) {
	t.Parallel()
	c := newCoord848(t, func(cfg *Config) { cfg.StreamsInitialRebalanceDelay = 3 * time.Second })
	c.topic(t, "lines", 2)
	c.topic(t, "app-words-repartition", 2)
	c.topic(t, "app-counts-changelog", 2)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	resp := a.mustBeat()
	if len(resp.Status) != 1 || resp.Status[0].StatusCode != statusAssignmentDelayed || len(a.active) != 0 || a.epoch != 1 {
		t.Fatalf("join: epoch %d, status %+v, tasks %v", a.epoch, resp.Status, a.active)
	}
	b := c.smember(t, "app", "b", "p2", wordCountTopology("app", "lines"))
	b.mustBeat()
	c.clock.advance(3 * time.Second)
	a.mustBeat()
	b.mustBeat()
	if len(a.active) != 2 || len(b.active) != 2 || len(a.status) != 0 {
		t.Fatalf("after the delay: a %v (status %+v), b %v", a.active, a.status, b.active)
	}
}

// When a task's active owner leaves, the member holding it as a standby
// takes it (its state is already there).
func TestStreamsAssignorPrefersStandbyOnFailover(t *testing.T) {
	t.Parallel()
	tasks, stateful := map[string]int32{"1": 4}, map[string]bool{"1": true}
	ts := func(ps ...int32) taskSet {
		s := taskSet{}
		for _, p := range ps {
			s[taskID{"1", p}] = struct{}{}
		}
		return s
	}
	// a (which held 1_2 and 1_3) is gone; c has 1_2 as a standby and b
	// 1_3, the other way round from where least-loaded order puts them.
	ms := []taskMember{
		{id: "b", process: "pb", prev: tasksAssigned{active: ts(0), standby: ts(3)}},
		{id: "c", process: "pc", prev: tasksAssigned{active: ts(1), standby: ts(2)}},
	}
	got := assignTasks(ms, tasks, stateful, 0)
	if !got["b"].active.equal(ts(0, 3)) || !got["c"].active.equal(ts(1, 2)) {
		t.Fatalf("b %v, c %v; want b 1_0 1_3, c 1_1 1_2", got["b"].active, got["c"].active)
	}
	// Stateless subtopologies get no standbys.
	three := []taskMember{{id: "a", process: "pa"}, {id: "b", process: "pb"}, {id: "c", process: "pc"}}
	if s := assignTasks(three, map[string]int32{"0": 4}, map[string]bool{}, 1); len(s["a"].standby)+len(s["b"].standby)+len(s["c"].standby) != 0 {
		t.Fatalf("standbys of a stateless subtopology: %v", s)
	}
}

func TestStreamsTopologyRefusals(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 2)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	a.mustBeat()
	a.createInternal()
	a.mustBeat()
	for _, tc := range []struct {
		name string
		topo func() *kmsg.StreamsGroupHeartbeatRequestTopology
		code int16
		msg  string
	}{
		{"another topology", func() *kmsg.StreamsGroupHeartbeatRequestTopology { return wordCountTopology("app", "other") },
			kerr.InvalidRequest.Code, "Topology updates are not supported yet."},
		{"a later topology epoch", func() *kmsg.StreamsGroupHeartbeatRequestTopology {
			t := wordCountTopology("app", "lines")
			t.Epoch = 1
			return t
		}, kerr.InvalidRequest.Code, "Topology updates are not supported yet."},
		{"a source regex", func() *kmsg.StreamsGroupHeartbeatRequestTopology {
			t := wordCountTopology("app", "lines")
			t.Subtopologies[0].SourceTopicRegex = []string{"l.*"}
			return t
		}, kerr.InvalidRequest.Code, "Regular expressions for source topics are not supported yet."},
		{"a sized changelog", func() *kmsg.StreamsGroupHeartbeatRequestTopology {
			t := wordCountTopology("app", "lines")
			t.Subtopologies[1].StateChangelogTopics[0].NumPartitions = 7
			return t
		}, kerr.StreamsInvalidTopology.Code, "Changelog topic app-counts-changelog must have an undefined partition count, but it is set to 7."},
	} {
		b := c.smember(t, "app", "b", "p2", tc.topo())
		r := b.beat()
		if r.ErrorCode != tc.code || r.ErrorMessage == nil || *r.ErrorMessage != tc.msg {
			t.Errorf("%s: %v %v", tc.name, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
	// An active task the topology does not have.
	req := a.request()
	req.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{7}}}
	if r := a.send(req); r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != "Task 7 for subtopology 0 is invalid. Number of tasks for this subtopology: 2" {
		t.Fatalf("bad task: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}

// ShutdownApplication reaches every member until the group is empty.
func TestStreamsShutdownApplication(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 2)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	b := c.smember(t, "app", "b", "p2", wordCountTopology("app", "lines"))
	a.mustBeat()
	b.mustBeat()
	req := a.request()
	req.ShutdownApplication = true
	a.send(req)
	want := "Streams group member a encountered a fatal error and requested a shutdown for the entire application."
	r := b.mustBeat()
	found := false
	for _, s := range r.Status {
		found = found || (s.StatusCode == statusShutdownApplication && s.StatusDetail == want)
	}
	if !found {
		t.Fatalf("b's status: %+v", r.Status)
	}
}

// The other protocols refuse a streams group's id.
func TestStreamsGroupRefusesOtherProtocols(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 2)
	a := c.smember(t, "g", "a", "p1", wordCountTopology("app", "lines"))
	a.mustBeat()
	cm := c.member(t, "g", "m1", "lines")
	if r := cm.beat(); r.ErrorCode != kerr.GroupIDNotFound.Code || *r.ErrorMessage != "Group g is not a consumer group." {
		t.Fatalf("consumer heartbeat: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if r := classicJoin(t, c, "", subscription(nil, "lines")); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// Topologies past the gateway's bounds are INVALID_REQUEST, before anything
// is kept.
func TestStreamsTopologyBounds(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	huge := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	for i := range maxSubtopologies + 1 {
		s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s.SubtopologyID, s.SourceTopics = fmt.Sprint(i), []string{"lines"}
		huge.Subtopologies = append(huge.Subtopologies, s)
	}
	wide := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s.SubtopologyID = "0"
	for i := range maxTopologyTopics + 1 {
		s.SourceTopics = append(s.SourceTopics, fmt.Sprintf("t%d", i))
	}
	wide.Subtopologies = append(wide.Subtopologies, s)
	for name, topo := range map[string]*kmsg.StreamsGroupHeartbeatRequestTopology{"subtopologies": &huge, "topics": &wide} {
		m := c.smember(t, "big-"+name, "a", "p", topo)
		if r := m.beat(); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("%d %s: %v", maxSubtopologies+1, name, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, g := range c.groups {
		if g.streams != nil && g.streams.topo != nil {
			t.Errorf("group %s kept a refused topology", name)
		}
	}
}

// Once a streams group is empty, an app back on the classic protocol may
// take its id (and its committed offsets).
func TestStreamsGroupEmptyBecomesClassic(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 2)
	a := c.smember(t, "g", "a", "p1", wordCountTopology("app", "lines"))
	a.mustBeat()
	leave := a.request()
	leave.MemberEpoch = epochLeave
	if r := a.send(leave); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if r := classicJoin(t, c, "", subscription(nil, "lines")); r.ErrorCode != 0 {
		t.Fatalf("classic join of an empty streams group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// Interactive queries: members with an endpoint are listed with the source
// partitions of their tasks whenever the endpoint epoch a member sends is
// not the group's, and not when it is.
func TestStreamsEndpointInformation(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.topic(t, "lines", 2)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	b := c.smember(t, "app", "b", "p2", wordCountTopology("app", "lines"))
	withEndpoint := func(m *smem, host string) *kmsg.StreamsGroupHeartbeatResponse {
		req := m.request()
		req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: host, Port: 7000}
		resp := m.send(req)
		m.epoch, m.lastEndpointEpoch = resp.MemberEpoch, resp.EndpointInformationEpoch
		return resp
	}
	withEndpoint(a, "ha")
	a.createInternal()
	withEndpoint(b, "hb")
	for range 3 {
		a.mustBeat()
		b.mustBeat()
	}
	stale := a.request()
	stale.EndpointInformationEpoch = -1
	resp := a.send(stale)
	if len(resp.PartitionsByUserEndpoint) != 2 {
		t.Fatalf("endpoints: %+v", resp.PartitionsByUserEndpoint)
	}
	lines := map[string][]int32{}
	for _, e := range resp.PartitionsByUserEndpoint {
		for _, tp := range e.ActivePartitions {
			if tp.Topic == "lines" {
				lines[e.UserEndpoint.Host] = tp.Partitions
			}
		}
	}
	if len(lines["ha"]) != 1 || len(lines["hb"]) != 1 || lines["ha"][0] == lines["hb"][0] {
		t.Fatalf("source partitions by endpoint: %v", lines)
	}
	current := a.request()
	current.EndpointInformationEpoch = resp.EndpointInformationEpoch
	if r := a.send(current); r.PartitionsByUserEndpoint != nil {
		t.Fatalf("endpoints sent at the current epoch: %+v", r.PartitionsByUserEndpoint)
	}
}

// A streams group kept in the store survives a restart of the coordinator:
// its members heartbeat and commit at their epochs as if nothing happened,
// with their tasks; a deleted group's state goes with it.
func TestStreamsGroupSurvivesRestart(t *testing.T) {
	t.Parallel()
	c := newCoord848(t)
	c.keepStreams(t)
	c.topic(t, "lines", 2)
	a := c.smember(t, "app", "a", "p1", wordCountTopology("app", "lines"))
	b := c.smember(t, "app", "b", "p2", wordCountTopology("app", "lines"))
	a.mustBeat()
	a.createInternal()
	for range 3 {
		a.mustBeat()
		b.mustBeat()
	}
	epochA, tasksA := a.epoch, a.active
	if len(tasksA) != 2 || len(b.active) != 2 {
		t.Fatalf("before: a %v, b %v", tasksA, b.active)
	}

	c.keepStreams(t)
	if err := c.LoadStreams(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := c.commitCheck("app", "a", "", epochA, 9); code != 0 {
		t.Fatalf("a's commit after the restart: %v", kerr.ErrorForCode(code))
	}
	r := a.mustBeat()
	if a.epoch != epochA || r.ActiveTasks != nil || !a.active.equal(tasksA) {
		t.Fatalf("a after the restart: epoch %d (was %d), tasks sent %v", a.epoch, epochA, r.ActiveTasks)
	}
	b.mustBeat()

	// Both leave; DeleteGroups deletes the kept state too.
	for _, m := range []*smem{a, b} {
		req := m.request()
		req.MemberEpoch = epochLeave
		m.send(req)
	}
	d := c.Delete(context.Background(), &kmsg.DeleteGroupsRequest{Groups: []string{"app"}})
	if d.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(d.Groups[0].ErrorCode))
	}
	c.keepStreams(t)
	if err := c.LoadStreams(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := a.send(a.request()); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a member of a deleted group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// keepStreams replaces c's coordinator by one that keeps streams groups in
// c's store (as the gateway's does), over the same store and clock: a
// restart of the coordinator.
func (c *coord848) keepStreams(tb testing.TB) {
	c.Coordinator.Close()
	c.Coordinator = New(Options{Config: Config{MetadataMaxAge: -1, StreamsInitialRebalanceDelay: -1}, Store: c.store, Stream: testStream,
		Clock: c.clock, StreamsState: c.store, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tb.Cleanup(c.Coordinator.Close)
}
