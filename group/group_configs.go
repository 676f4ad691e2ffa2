package group

// Per-group configs of the consumer protocol (Kafka 4's GroupConfig:
// consumer.session.timeout.ms, consumer.heartbeat.interval.ms), set with
// IncrementalAlterConfigs on a GROUP resource and kept by the Store
// (bridge.GroupConfigStore). The coordinator reads a group's configs
// outside co.mu, at most once per MetadataMaxAge per group, and applies
// them on the group's next heartbeat: a change made through another
// gateway is seen within that time.

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// Names of the group configs the coordinator honours.
const (
	CfgConsumerSessionTimeout    = "consumer.session.timeout.ms"
	CfgConsumerHeartbeatInterval = "consumer.heartbeat.interval.ms"
	CfgStreamsSessionTimeout     = "streams.session.timeout.ms"
	CfgStreamsHeartbeatInterval  = "streams.heartbeat.interval.ms"
	CfgStreamsStandbyReplicas    = "streams.num.standby.replicas"
	CfgStreamsInitialDelay       = "streams.initial.rebalance.delay.ms"
)

// groupSettings are what a consumer or streams group runs with.
type groupSettings struct {
	session, interval time.Duration
	// Streams groups (streams.go); zero: the defaults.
	streamsSession, streamsInterval time.Duration
	standbys                        int
	streamsDelay                    *time.Duration // nil: the coordinator's default
}

type cachedSettings struct {
	s  groupSettings
	at time.Time // when they were read (co.clock)
}

// settingsCache holds the settings read per group; its own lock, never
// held across a store call.
type settingsCache struct {
	mu sync.Mutex
	m  map[string]cachedSettings
}

// settings parses cfg over the coordinator's defaults: a value that does
// not parse (checked when it was set, so only a damaged store) keeps the
// default.
func (c Config) settings(cfg bridge.GroupConfigs) groupSettings {
	s := groupSettings{session: c.ConsumerSessionTimeout, interval: c.ConsumerHeartbeatInterval}
	ms := func(name string, into *time.Duration) {
		if v, ok := cfg[name]; ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
				*into = time.Duration(n) * time.Millisecond
			}
		}
	}
	ms(CfgConsumerSessionTimeout, &s.session)
	ms(CfgConsumerHeartbeatInterval, &s.interval)
	ms(CfgStreamsSessionTimeout, &s.streamsSession)
	ms(CfgStreamsHeartbeatInterval, &s.streamsInterval)
	if n, err := strconv.Atoi(cfg[CfgStreamsStandbyReplicas]); err == nil && n > 0 {
		s.standbys = n
	}
	if n, err := strconv.ParseInt(cfg[CfgStreamsInitialDelay], 10, 32); err == nil && n >= 0 {
		d := time.Duration(n) * time.Millisecond
		s.streamsDelay = &d
	}
	return s
}

// groupSettings returns group's settings, read from the store when the
// cached ones are older than MetadataMaxAge. A failed read keeps serving
// the last settings read; with none it is an error (the heartbeat then
// answers COORDINATOR_NOT_AVAILABLE, as for a failed topic listing). A
// worker, without co.mu.
func (co *Coordinator) groupSettings(ctx context.Context, group string) (groupSettings, error) {
	now := co.clock.Now()
	c := &co.settings
	c.mu.Lock()
	cached, ok := c.m[group]
	c.mu.Unlock()
	if ok && now.Sub(cached.at) < co.cfg.MetadataMaxAge {
		return cached.s, nil
	}
	cfg, err := co.groupCfgs.GroupConfigs(ctx, co.stream, group)
	if err != nil {
		if ok {
			return cached.s, nil
		}
		return groupSettings{}, err
	}
	s := co.cfg.settings(cfg)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= 2*co.cfg.MaxGroups {
		// Entries of groups long gone are dropped wholesale; the live
		// ones are read again on their next heartbeat.
		c.m = make(map[string]cachedSettings)
	}
	c.m[group] = cachedSettings{s: s, at: now}
	c.mu.Unlock()
	return s, nil
}

// GroupConfigsChanged drops what the coordinator read of group's configs,
// so its next heartbeat reads them again. Called after a change made
// through this gateway. Any goroutine.
func (co *Coordinator) GroupConfigsChanged(group string) {
	co.settings.mu.Lock()
	delete(co.settings.m, group)
	co.settings.mu.Unlock()
}
