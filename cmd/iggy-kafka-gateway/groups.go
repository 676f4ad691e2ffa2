package main

import (
	"fmt"
	"strings"
	"time"
)

// groupOptions are the group coordinator's settings, named after Kafka's
// broker configs (group.*), docs/CONSUMER_GROUPS.md. Each group may
// override the consumer ones with kafka-configs --entity-type groups.
func groupOptions(c *config) []option {
	g := &c.Handlers.Groups
	return []option{
		{flag: "group-initial-rebalance-delay-ms", def: "3000",
			usage: "classic groups: the first rebalance of an empty group waits this long for more members (Kafka's group.initial.rebalance.delay.ms; 0: none)",
			set: millisIn(0, func(d time.Duration) {
				if d == 0 {
					d = -1 // group.Config's "none"; its zero is the default
				}
				g.InitialRebalanceDelay = d
			})},
		{flag: "group-min-session-timeout-ms", def: "6000",
			usage: "classic groups: the shortest session timeout a member may ask for (group.min.session.timeout.ms)",
			set:   millisIn(0, to(&g.MinSessionTimeout))},
		{flag: "group-max-session-timeout-ms", def: "1800000",
			usage: "classic groups: the longest session timeout a member may ask for (group.max.session.timeout.ms)",
			set:   millisIn(0, to(&g.MaxSessionTimeout))},
		{flag: "group-max-size", def: "1000",
			usage: "members one group may have, either protocol (group.max.size; GROUP_MAX_SIZE_REACHED beyond)",
			set:   intIn(1, 1_000_000, to(&g.MaxGroupSize))},
		{flag: "group-consumer-session-timeout-ms", def: "45000",
			usage: "consumer groups (KIP-848): a member silent this long is removed; the default of each group's consumer.session.timeout.ms",
			set:   millisIn(0, to(&g.ConsumerSessionTimeout))},
		{flag: "group-consumer-min-session-timeout-ms", def: "45000",
			usage: "consumer groups: the lowest consumer.session.timeout.ms a group may set",
			set:   millisIn(0, to(&g.ConsumerMinSessionTimeout))},
		{flag: "group-consumer-max-session-timeout-ms", def: "60000",
			usage: "consumer groups: the highest consumer.session.timeout.ms a group may set",
			set:   millisIn(0, to(&g.ConsumerMaxSessionTimeout))},
		{flag: "group-consumer-heartbeat-interval-ms", def: "5000",
			usage: "consumer groups: the heartbeat interval members are told; the default of each group's consumer.heartbeat.interval.ms",
			set:   millisIn(0, to(&g.ConsumerHeartbeatInterval))},
		{flag: "group-consumer-min-heartbeat-interval-ms", def: "5000",
			usage: "consumer groups: the lowest consumer.heartbeat.interval.ms a group may set",
			set:   millisIn(0, to(&g.ConsumerMinHeartbeatInterval))},
		{flag: "group-consumer-max-heartbeat-interval-ms", def: "15000",
			usage: "consumer groups: the highest consumer.heartbeat.interval.ms a group may set",
			set:   millisIn(0, to(&g.ConsumerMaxHeartbeatInterval))},
		{flag: "group-consumer-assignors", def: "uniform,range",
			usage: "consumer groups: the server-side assignors members may name, comma-separated; the first is the default (uniform, range)",
			set: func(v string) error {
				g.ConsumerAssignors = nil
				for _, a := range strings.Split(v, ",") {
					a = strings.TrimSpace(a)
					if a != "uniform" && a != "range" {
						return fmt.Errorf("unknown assignor %q: want uniform and/or range", a)
					}
					g.ConsumerAssignors = append(g.ConsumerAssignors, a)
				}
				return nil
			}},
	}
}

// resolveGroups checks the group settings against each other, as Kafka
// refuses to start with a default outside its own bounds.
func (c *config) resolveGroups() error {
	g := &c.Handlers.Groups
	type bounded struct {
		name           string
		lo, def, hi    time.Duration
		loF, defF, hiF string
	}
	for _, b := range []bounded{
		{"classic session", g.MinSessionTimeout, g.MaxSessionTimeout, g.MaxSessionTimeout,
			"--group-min-session-timeout-ms", "--group-max-session-timeout-ms", "--group-max-session-timeout-ms"},
		{"consumer session", g.ConsumerMinSessionTimeout, g.ConsumerSessionTimeout, g.ConsumerMaxSessionTimeout,
			"--group-consumer-min-session-timeout-ms", "--group-consumer-session-timeout-ms", "--group-consumer-max-session-timeout-ms"},
		{"consumer heartbeat", g.ConsumerMinHeartbeatInterval, g.ConsumerHeartbeatInterval, g.ConsumerMaxHeartbeatInterval,
			"--group-consumer-min-heartbeat-interval-ms", "--group-consumer-heartbeat-interval-ms", "--group-consumer-max-heartbeat-interval-ms"},
	} {
		if b.lo <= 0 || b.hi <= 0 {
			return fmt.Errorf("%s and %s must be above 0", b.loF, b.hiF)
		}
		if b.def < b.lo || b.def > b.hi {
			return fmt.Errorf("%s %d is outside %s %d .. %s %d", b.defF, b.def.Milliseconds(), b.loF, b.lo.Milliseconds(), b.hiF, b.hi.Milliseconds())
		}
	}
	if g.ConsumerHeartbeatInterval >= g.ConsumerSessionTimeout {
		return fmt.Errorf("--group-consumer-heartbeat-interval-ms must be below --group-consumer-session-timeout-ms")
	}
	return nil
}
