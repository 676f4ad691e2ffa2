package iggy

import (
	"context"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
)

// primed returns a cache whose entries are fresh, so Allow reads no
// server (pc.c is nil: a read would panic).
func primed(p *Permissions, topics map[string]uint32) *PermissionCache {
	pc := NewPermissionCache(nil, time.Hour, nil)
	pc.Learn(User{Username: "u", Active: true, Permissions: p})
	e := pc.ids("kafka")
	e.sid, e.found, e.topics, e.fetched = 3, true, topics, time.Now()
	return pc
}

// Allow maps acts to Iggy's rules on the ids it resolved; a topic entry of
// a topic Iggy does not have (yet) never applies, and an unknown user may
// do nothing.
func TestPermissionCacheAllow(t *testing.T) {
	t.Parallel()
	p := &Permissions{Streams: map[uint32]StreamPermissions{3: {Topics: map[uint32]TopicPermissions{
		4: {SendMessages: true}, 5: {ReadTopic: true}}}}}
	pc := primed(p, map[string]uint32{"a": 4, "b": 5})
	ctx := context.Background()
	for _, c := range []struct {
		act   bridge.Act
		topic string
		want  bool
	}{
		{bridge.ActSend, "a", true},
		{bridge.ActDescribe, "a", true}, // implied by send, as Kafka implies DESCRIBE
		{bridge.ActPoll, "a", false},
		{bridge.ActSend, "b", false},
		{bridge.ActPoll, "b", true},
		{bridge.ActDescribe, "b", true},
		{bridge.ActManage, "a", false},
		{bridge.ActCreate, "", false},
		{bridge.ActSend, "c", false}, // not in Iggy: topic entries do not apply
	} {
		if got := pc.Allow(ctx, "u", c.act, "kafka", c.topic); got != c.want {
			t.Errorf("act %d on %q: %v, want %v", c.act, c.topic, got, c.want)
		}
	}
	// A user Iggy does not have: nothing.
	pc.users["gone"] = &permEntry{known: false, fetched: time.Now()}
	if pc.Allow(ctx, "gone", bridge.ActDescribe, "kafka", "a") {
		t.Error("an unknown user was allowed")
	}
	// Global flags apply to a topic Iggy does not have yet.
	g := primed(&Permissions{Global: GlobalPermissions{ManageTopics: true}}, map[string]uint32{})
	if !g.Allow(ctx, "u", bridge.ActCreate, "kafka", "new") || !g.Allow(ctx, "u", bridge.ActSend, "kafka", "new") {
		t.Error("global manage_topics does not cover a new topic")
	}
}

// The cost a PLAIN client on the Iggy backend pays per checked topic once
// the cache is warm.
func BenchmarkPermissionCacheAllow(b *testing.B) {
	pc := primed(&Permissions{Streams: map[uint32]StreamPermissions{3: {Topics: map[uint32]TopicPermissions{4: {SendMessages: true}}}}},
		map[string]uint32{"a": 4})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if !pc.Allow(ctx, "u", bridge.ActSend, "kafka", "a") {
			b.Fatal("refused")
		}
	}
}

// While Iggy cannot be asked, permissions read within permissionGrace keep
// applying (a short outage must not become TOPIC_AUTHORIZATION_FAILED,
// fatal to Kafka clients); older ones do not.
func TestPermissionCacheGraceWhileIggyIsDown(t *testing.T) {
	// Serial: the port its closed server freed must stay dead, and a parallel test's server could take it.
	srv, err := iggytest.Start(newEmbedded(t), iggytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(context.Background(), testOptions(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc := NewPermissionCache(c, time.Millisecond, quiet())
	pc.Learn(User{Username: "u", Active: true, Permissions: &Permissions{Global: GlobalPermissions{SendMessages: true}}})
	srv.Close() // every read from here on fails
	time.Sleep(5 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !pc.Allow(ctx, "u", bridge.ActSend, "kafka", "a") {
		t.Fatal("refused while Iggy is down, with permissions read a moment ago")
	}
	e := pc.user("u")
	e.mu.Lock()
	e.readAt = time.Now().Add(-2 * permissionGrace)
	e.fetched = time.Time{}
	e.mu.Unlock()
	if pc.Allow(ctx, "u", bridge.ActSend, "kafka", "a") {
		t.Fatal("allowed on permissions read longer ago than the grace")
	}
}
