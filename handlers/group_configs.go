package handlers

// Group configs (Kafka's ConfigResource type GROUP, 32): what
// DescribeConfigs reports for a group and what AlterConfigs and
// IncrementalAlterConfigs accept, as Kafka 4.1's GroupConfig lists them.
// The consumer protocol's two (session timeout, heartbeat interval), the
// streams ones but the assignment interval, assignor name and rack tags,
// are honoured by the coordinator (group/group_configs.go); the share ones
// by the share coordinator (docs/SHARE_GROUPS.md). Kept by the backend
// (bridge.GroupConfigStore), independent of the group's state: they may
// be set before the group exists and outlive DeleteGroups, as on Kafka.

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/group"
	"github.com/iggy-kafka/gateway/share"
)

// configResourceTypeGroup is ConfigResource type GROUP (KIP-848); kmsg
// has no name for it.
const configResourceTypeGroup kmsg.ConfigResourceType = 32

// groupConfigDef is one group config: its type, default and, for
// integers, the bounds with the broker configs that set them.
type groupConfigDef struct {
	typ            kmsg.ConfigType
	def            string
	lo, hi         int64
	loName, hiName string
	values         []string // a STRING config's allowed values (nil: any)
	honoured       bool
	doc            string
	// msgs: how a bad value is worded (Kafka 4.4 words each config its
	// own way); the zero value is the consumer configs' wording.
	msgs groupConfigMsgs
}

type groupConfigMsgs uint8

const (
	msgBoundNames groupConfigMsgs = iota // "X must be greater than or equal to <loName>"
	msgRange                             // "X must be in the range LO to HI inclusive."
	msgAtLeast                           // below lo: "Invalid value V for configuration X: Value must be at least LO"
)

const groupInertDoc = " Kept and reported; no effect on this gateway."

// groupConfigDefs are the group configs with this gateway's defaults and
// bounds (the consumer ones from group.Config, the rest Kafka 4.4's).
func (g *Gateway) groupConfigDefs() map[string]groupConfigDef {
	gc := group.Config{}
	if g.Groups != nil {
		gc = g.Groups.Config()
	}
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return map[string]groupConfigDef{
		group.CfgConsumerHeartbeatInterval: {kmsg.ConfigTypeInt, strconv.FormatInt(ms(gc.ConsumerHeartbeatInterval), 10),
			ms(gc.ConsumerMinHeartbeatInterval), ms(gc.ConsumerMaxHeartbeatInterval),
			"group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", nil, true,
			"The heartbeat interval the coordinator tells this consumer group's members (KIP-848).", msgBoundNames},
		group.CfgConsumerSessionTimeout: {kmsg.ConfigTypeInt, strconv.FormatInt(ms(gc.ConsumerSessionTimeout), 10),
			ms(gc.ConsumerMinSessionTimeout), ms(gc.ConsumerMaxSessionTimeout),
			"group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", nil, true,
			"How long a member of this consumer group (KIP-848) may go without a heartbeat before it is removed and its partitions freed.", msgBoundNames},
		"share.auto.offset.reset": {typ: kmsg.ConfigTypeString, def: "latest", doc: "Where a share group starts reading a partition new to it: latest, earliest or by_duration:<ISO 8601 duration>."},
		"share.heartbeat.interval.ms": {kmsg.ConfigTypeInt, "5000", 5000, 15000,
			"group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", nil, false, "The heartbeat interval the coordinator tells this share group's members.", msgBoundNames},
		"share.isolation.level": {typ: kmsg.ConfigTypeString, def: "read_uncommitted", values: []string{"read_uncommitted", "read_committed"},
			doc: "Whether a share group delivers transactional records before they commit (read_committed: only committed ones)."},
		"share.record.lock.duration.ms": {kmsg.ConfigTypeInt, "30000", 15000, 60000,
			"group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms", nil, false, "How long a share group member holds the records it acquired before they are available again.", msgBoundNames},
		"share.session.timeout.ms": {kmsg.ConfigTypeInt, "45000", 45000, 60000,
			"group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms", nil, false, "How long a share group member may go without a heartbeat before it is removed and its records released.", msgBoundNames},
		"share.delivery.count.limit": {kmsg.ConfigTypeInt, "5", 2, 10,
			"group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit", nil, false, "How many times a record is delivered to a share group before it is archived.", msgBoundNames},
		"share.partition.max.record.locks": {kmsg.ConfigTypeInt, strconv.Itoa(g.shareMaxRecordLocks()), 100, 4000,
			"group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks", nil, false, "How many records of a partition a share group may have in flight.", msgBoundNames},
		group.CfgStreamsHeartbeatInterval: {typ: kmsg.ConfigTypeInt, def: "5000", lo: 5000, hi: 15000, honoured: true, msgs: msgRange,
			doc: "The heartbeat interval the coordinator tells this streams group's members (KIP-1071)."},
		group.CfgStreamsStandbyReplicas: {typ: kmsg.ConfigTypeInt, def: "0", lo: 0, hi: 2, hiName: "2", honoured: true, msgs: msgAtLeast,
			doc: "Standby replicas per stateful task of a streams group, each on another process than the task's."},
		group.CfgStreamsSessionTimeout: {typ: kmsg.ConfigTypeInt, def: "45000", lo: 45000, hi: 60000, honoured: true, msgs: msgRange,
			doc: "How long a streams group member may go without a heartbeat before it is removed and its tasks move."},
		group.CfgStreamsInitialDelay: {typ: kmsg.ConfigTypeInt, def: "3000", lo: 0, hi: 1<<31 - 1, honoured: true, msgs: msgAtLeast,
			doc: "How long a new streams group waits before its first assignment, so the app's other instances join first."},
		"streams.assignment.interval.ms": {typ: kmsg.ConfigTypeInt, def: "1000", lo: 0, hi: 15000, msgs: msgRange,
			doc: "The least time between two assignments of a streams group." + groupInertDoc},
		"streams.assignor.name": {typ: kmsg.ConfigTypeString, def: "sticky", values: []string{"sticky"},
			doc: "The task assignor of a streams group."},
		"streams.rack.aware.assignment.tags": {typ: kmsg.ConfigTypeList, def: "",
			doc: "Client tags the task assignor spreads standby tasks over." + groupInertDoc},
	}
}

// checkGroupConfigs returns why cfg is refused, or "" (Kafka's messages).
func checkGroupConfigs(defs map[string]groupConfigDef, cfg bridge.GroupConfigs) string {
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		d, ok := defs[name]
		if !ok {
			return "Unknown group config name: " + name
		}
		v := cfg[name]
		switch d.typ {
		case kmsg.ConfigTypeInt:
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return "Invalid value " + v + " for configuration " + name + ": Not a number of type INT"
			}
			if d.msgs == msgRange && (n < d.lo || n > d.hi) {
				return name + " must be in the range " + strconv.FormatInt(d.lo, 10) + " to " + strconv.FormatInt(d.hi, 10) + " inclusive."
			}
			if n < d.lo {
				if d.msgs == msgAtLeast {
					return "Invalid value " + v + " for configuration " + name + ": Value must be at least " + strconv.FormatInt(d.lo, 10)
				}
				return name + " must be greater than or equal to " + d.loName
			}
			if n > d.hi {
				return name + " must be less than or equal to " + d.hiName
			}
		case kmsg.ConfigTypeString:
			if name == "streams.assignor.name" && !slices.Contains(d.values, v) {
				return name + " '" + v + "' is not a registered task assignor. Registered assignors are: [sticky]."
			}
			if d.values != nil && !slices.Contains(d.values, v) {
				return "Invalid value " + v + " for configuration " + name + ": String must be one of: " + strings.Join(d.values, ", ")
			}
			if name == "share.auto.offset.reset" && v != "latest" && v != "earliest" && !strings.HasPrefix(v, "by_duration:") {
				return "Invalid value " + v + " for configuration " + name + ": latest, earliest or by_duration:<duration>"
			}
		}
	}
	eff := func(name string) int64 {
		v, ok := cfg[name]
		if !ok {
			v = defs[name].def
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	if eff(group.CfgConsumerHeartbeatInterval) >= eff(group.CfgConsumerSessionTimeout) {
		return group.CfgConsumerHeartbeatInterval + " must be less than " + group.CfgConsumerSessionTimeout
	}
	return ""
}

// checkGroupResource checks a GROUP resource name, as Kafka does (any
// non-empty name), bounded by the gateway's group id limit.
func checkGroupResource(name string) (int16, string) {
	switch {
	case name == "":
		return kerr.InvalidRequest.Code, "Group name must not be empty"
	case len(name) > group.MaxGroupIDLen:
		return kerr.InvalidRequest.Code, "group ids are at most " + strconv.Itoa(group.MaxGroupIDLen) + " bytes on this gateway"
	}
	return 0, ""
}

// describeGroupConfigs answers a GROUP resource of DescribeConfigs: the
// set configs with source GROUP_CONFIG, the rest the gateway's defaults.
func (c *Call) describeGroupConfigs(name string, names []string, synonyms, docs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, int16, string) {
	if code, msg := checkGroupResource(name); code != 0 {
		return nil, code, msg
	}
	set, err := c.G.Store.GroupConfigs(c.Ctx, c.G.Cfg.Stream, name)
	if err != nil {
		return nil, errCode(err, opAdmin), err.Error()
	}
	defs := c.G.groupConfigDefs()
	if names == nil {
		names = slices.Sorted(maps.Keys(defs))
	}
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(names))
	for _, n := range names {
		d, ok := defs[n]
		if !ok {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.ConfigType = n, d.typ
		v, isSet := set[n]
		src := kmsg.ConfigSourceGroupConfig
		if !isSet {
			v, src, rc.IsDefault = d.def, kmsg.ConfigSourceDefaultConfig, true
		}
		rc.Value, rc.Source = strp(v), src
		if synonyms {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = n, strp(v), src
			rc.ConfigSynonyms = append(rc.ConfigSynonyms, s)
		}
		if docs {
			rc.Documentation = strp(d.doc)
		}
		out = append(out, rc)
	}
	return out, 0, ""
}

// alterGroupConfigs applies change to the group's stored configs after
// checking the result: all or nothing; validateOnly stores nothing. change
// gets a copy of the current set (nil when none).
func (c *Call) alterGroupConfigs(name string, validateOnly bool, change func(bridge.GroupConfigs) (bridge.GroupConfigs, int16, string)) (int16, string) {
	if code, msg := checkGroupResource(name); code != 0 {
		return code, msg
	}
	cs := c.G.Store
	cur, err := cs.GroupConfigs(c.Ctx, c.G.Cfg.Stream, name)
	if err != nil {
		return errCode(err, opAdmin), err.Error()
	}
	next, code, msg := change(maps.Clone(cur))
	if code != 0 {
		return code, msg
	}
	defs := c.G.groupConfigDefs()
	if msg := checkGroupConfigs(defs, next); msg != "" {
		return kerr.InvalidConfig.Code, msg
	}
	for k, v := range next {
		if defs[k].typ == kmsg.ConfigTypeInt {
			next[k] = strings.TrimSpace(v)
		}
	}
	if validateOnly || maps.Equal(cur, next) {
		return 0, ""
	}
	if err := cs.SetGroupConfigs(c.Ctx, c.G.Cfg.Stream, name, next); err != nil {
		var ce *bridge.ConfigError
		if errors.As(err, &ce) {
			return kerr.InvalidConfig.Code, ce.Error()
		}
		return errCode(err, opAdmin), err.Error()
	}
	if c.G.Groups != nil {
		c.G.Groups.GroupConfigsChanged(name)
	}
	return 0, ""
}

// shareMaxRecordLocks is the default of share.partition.max.record.locks:
// --share-max-record-locks.
func (g *Gateway) shareMaxRecordLocks() int {
	if n := g.Cfg.Shares.Limits.MaxInFlight; n > 0 {
		return n
	}
	return share.DefaultConfig().MaxInFlight
}
