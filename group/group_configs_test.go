package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/iggy-kafka/gateway/bridge"
)

// A group's consumer.session.timeout.ms and consumer.heartbeat.interval.ms
// (kept by the store) replace the coordinator's defaults for that group
// only: members are told the group's interval and expire after the
// group's session timeout.
func TestConsumerGroupConfigs(t *testing.T) {
	t.Parallel()
	c := newCoord848(t, func(cfg *Config) {
		cfg.ConsumerSessionTimeout = 10 * time.Second
		cfg.ConsumerHeartbeatInterval = 2 * time.Second
	})
	c.topic(t, "orders", 4)
	gcs := c.store.(bridge.GroupConfigStore)
	if err := gcs.SetGroupConfigs(context.Background(), testStream, "g", bridge.GroupConfigs{
		CfgConsumerSessionTimeout: "20000", CfgConsumerHeartbeatInterval: "7000",
	}); err != nil {
		t.Fatal(err)
	}
	a, b := c.member(t, "g", "a", "orders"), c.member(t, "g", "b", "orders")
	if r := a.mustBeat(); r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("interval told to a: %d ms, want the group's 7000", r.HeartbeatIntervalMillis)
	}
	settle(t, a, b)
	other := c.member(t, "h", "x", "orders")
	if r := other.mustBeat(); r.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("interval of a group without configs: %d ms, want the default 2000", r.HeartbeatIntervalMillis)
	}
	// a goes silent for 16 s: past the default 10 s, within the group's 20 s.
	for range 4 {
		c.clock.advance(4 * time.Second)
		b.mustBeat()
	}
	if r := a.send(a.request()); r.ErrorCode != 0 {
		t.Fatalf("a expired before the group's session timeout: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for range 6 {
		c.clock.advance(4 * time.Second)
		b.mustBeat()
	}
	if r := a.send(a.request()); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("a after 24 s of silence: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(r.ErrorCode))
	}
}

// With MetadataMaxAge the configs are read at most that often; a change
// made through this gateway (GroupConfigsChanged) is applied at once, and
// a failed read keeps the settings last read.
func TestConsumerGroupConfigsCached(t *testing.T) {
	t.Parallel()
	c := newCoord848(t, func(cfg *Config) {
		cfg.MetadataMaxAge = 10 * time.Second
		cfg.ConsumerHeartbeatInterval = 2 * time.Second
	})
	c.topic(t, "orders", 2)
	fs := &flakyGroupConfigs{GroupConfigStore: c.store.(bridge.GroupConfigStore)}
	c.groupCfgs = fs
	ctx := context.Background()
	set := func(ms string) {
		t.Helper()
		if err := fs.SetGroupConfigs(ctx, testStream, "g", bridge.GroupConfigs{CfgConsumerHeartbeatInterval: ms}); err != nil {
			t.Fatal(err)
		}
	}
	set("6000")
	a := c.member(t, "g", "a", "orders")
	if r := a.mustBeat(); r.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("first: %d", r.HeartbeatIntervalMillis)
	}
	set("8000")
	if r := a.mustBeat(); r.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("within MetadataMaxAge the cached value applies: %d", r.HeartbeatIntervalMillis)
	}
	c.GroupConfigsChanged("g")
	if r := a.mustBeat(); r.HeartbeatIntervalMillis != 8000 {
		t.Fatalf("after GroupConfigsChanged: %d, want 8000", r.HeartbeatIntervalMillis)
	}
	fs.fail = true
	c.clock.advance(15 * time.Second)
	if r := a.mustBeat(); r.HeartbeatIntervalMillis != 8000 {
		t.Fatalf("store down: %d, want the last read 8000", r.HeartbeatIntervalMillis)
	}
	// A group never read while the store is down cannot heartbeat.
	b := c.member(t, "other", "b", "orders")
	if r := b.send(b.request()); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("new group, store down: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

type flakyGroupConfigs struct {
	bridge.GroupConfigStore
	fail bool
}

func (f *flakyGroupConfigs) GroupConfigs(ctx context.Context, stream, group string) (bridge.GroupConfigs, error) {
	if f.fail {
		return nil, errors.Join(bridge.ErrUnavailable, errors.New("test: store down"))
	}
	return f.GroupConfigStore.GroupConfigs(ctx, stream, group)
}
