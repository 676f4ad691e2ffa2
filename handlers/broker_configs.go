package handlers

// Broker configs (ConfigResource type BROKER): what DescribeConfigs
// reports for this broker and for the cluster-wide defaults (the empty
// resource name), and what AlterConfigs and IncrementalAlterConfigs
// change, as a Kafka 4 broker does it (KIP-226 dynamic broker configs).
//
// Most broker configs come from the gateway's flags and are read-only
// (STATIC_BROKER_CONFIG). A few may be set while the gateway runs
// (brokerDynamic): per broker (the resource named by this gateway's node
// id, DYNAMIC_BROKER_CONFIG) or for every broker (the empty name,
// DYNAMIC_DEFAULT_BROKER_CONFIG); a per-broker value wins over the
// default, which wins over the flags, as on Kafka. Any other name is
// refused as Kafka refuses a config it cannot change at runtime.
//
// They are kept by the backend with the group configs
// (bridge.GroupConfigStore), under a name no group can have (longer than
// group.MaxGroupIDLen), one set per scope: durable on both backends,
// shared by every gateway of a cluster over one Iggy (the state stream),
// and scoped by the Kafka stream as topics are. Each call reads them from
// the store; Produce uses a copy at most policyMaxAge old (brokerCache).

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// brokerDynDef is a broker config that may be set at runtime.
type brokerDynDef struct {
	typ kmsg.ConfigType
	def string // Kafka's default, where no static value is reported
	// check says why a value is refused (Kafka's ConfigDef wording), or "".
	check func(v string) string
	// readOnly is what DescribeConfigs reports: Kafka marks the
	// replication throttles read-only although they may only be set
	// dynamically (they are quota configs, outside KafkaConfig).
	readOnly bool
	doc      string
}

const throttleDoc = " Kept and reported, so kafka-reassign-partitions can set and clear it; no effect here: the gateway has no replicas to move (Iggy keeps the data)."

// brokerDynamic are the broker configs the gateway accepts at runtime, by
// name, with Kafka 4's types, defaults and bounds.
var brokerDynamic = map[string]*brokerDynDef{
	"leader.replication.throttled.rate": {kmsg.ConfigTypeLong, longMax, longAtLeast(0), true,
		"The upper bound (bytes/s) on replication traffic for leaders of the replicas a topic lists in leader.replication.throttled.replicas." + throttleDoc},
	"follower.replication.throttled.rate": {kmsg.ConfigTypeLong, longMax, longAtLeast(0), true,
		"The upper bound (bytes/s) on replication traffic for followers of the replicas a topic lists in follower.replication.throttled.replicas." + throttleDoc},
	"replica.alter.log.dirs.io.max.bytes.per.second": {kmsg.ConfigTypeLong, longMax, longAtLeast(0), true,
		"The upper bound (bytes/s) on disk IO moving replicas between log directories." + throttleDoc},
	"log.message.timestamp.type": {kmsg.ConfigTypeString, timestampCreate, oneOf(timestampCreate, timestampLogAppend), false,
		"The message.timestamp.type of every topic that does not set its own: CreateTime keeps the producer's timestamps, " +
			"LogAppendTime stamps each batch with the time the gateway appended it. A change applies to the batches produced after it " +
			"(through another gateway of a cluster within two seconds)."},
}

// longAtLeast checks a LONG config with a lower bound, as ConfigDef does.
func longAtLeast(lo int64) func(string) string {
	return func(v string) string {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return "Not a number of type LONG"
		}
		if n < lo {
			return "Value must be at least " + strconv.FormatInt(lo, 10)
		}
		return ""
	}
}

// oneOf checks a STRING config with a fixed set of values (ValidString).
func oneOf(values ...string) func(string) string {
	return func(v string) string {
		if !slices.Contains(values, strings.TrimSpace(v)) {
			return "String must be one of: " + strings.Join(values, ", ")
		}
		return ""
	}
}

// brokerConfigsKey is the group-config name a scope's broker configs are
// kept under: scope "" is the cluster-wide defaults, else a node id. It
// is 255 bytes (the stores' limit), longer than any group id the gateway
// accepts, so no group can read or change it, and ListConfigResources
// leaves it out.
func brokerConfigsKey(scope string) string {
	tag := "kafka broker configs: cluster default"
	if scope != "" {
		tag = "kafka broker configs: node " + scope
	}
	return tag + strings.Repeat(".", 255-len(tag))
}

// brokerView is the dynamic broker configs in force on this gateway: the
// ones set for it (node) and the cluster-wide defaults (def).
type brokerView struct{ node, def bridge.TopicConfigs }

// readBrokerView reads this gateway's dynamic broker configs from the
// store.
func (c *Call) readBrokerView() (brokerView, error) {
	var v brokerView
	var err error
	if v.node, err = c.G.Store.GroupConfigs(c.Ctx, c.G.Cfg.Stream, brokerConfigsKey(c.G.nodeScope())); err != nil {
		return v, err
	}
	v.def, err = c.G.Store.GroupConfigs(c.Ctx, c.G.Cfg.Stream, brokerConfigsKey(""))
	return v, err
}

func (g *Gateway) nodeScope() string { return strconv.Itoa(int(g.Cfg.NodeID)) }

// synonyms are name's values in Kafka's order of precedence: set for this
// broker, set as the cluster default, then the static value (src
// STATIC_BROKER_CONFIG or DEFAULT_CONFIG; none when static is nil).
// perBroker false keeps the cluster default only, as Kafka describes the
// default resource.
func (v brokerView) synonyms(name string, static *string, src kmsg.ConfigSource, perBroker bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	add := func(val *string, s kmsg.ConfigSource) {
		syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		syn.Name, syn.Value, syn.Source = name, val, s
		out = append(out, syn)
	}
	if val, ok := v.node[name]; ok && perBroker {
		add(strp(val), kmsg.ConfigSourceDynamicBrokerConfig)
	}
	if val, ok := v.def[name]; ok {
		add(strp(val), kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	}
	if static != nil && perBroker {
		add(static, src)
	}
	return out
}

// brokerEntry is one config of a BROKER resource: value and source are
// the first synonym's.
func brokerEntry(name string, typ kmsg.ConfigType, readOnly bool, syns []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, synonyms bool, doc *string) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.ConfigType, c.ReadOnly, c.Documentation = name, typ, readOnly, doc
	c.Value, c.Source = syns[0].Value, syns[0].Source
	c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
	if synonyms {
		c.ConfigSynonyms = syns
	}
	return c
}

// describeBroker lists this broker's configs, filtered by names (none:
// all, as Kafka): the static ones in brokerConfigs' order (a dynamic value set
// over one shows with its source), then the dynamic ones set that have
// no static value, sorted, as Kafka lists a config set at runtime.
func (g *Gateway) describeBroker(v brokerView, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	want := func(n string) bool { return len(names) == 0 || slices.Contains(names, n) }
	static := map[string]bool{}
	for _, b := range g.brokerConfigs() {
		static[b.name] = true
		if !want(b.name) {
			continue
		}
		readOnly := true
		var doc *string
		if d := brokerDynamic[b.name]; d != nil {
			readOnly = d.readOnly
			if docs {
				doc = strp(d.doc)
			}
		} else if docs {
			doc = strp(b.doc + " Read-only on this gateway.")
		}
		syns := v.synonyms(b.name, strp(b.value), kmsg.ConfigSourceStaticBrokerConfig, true)
		out = append(out, brokerEntry(b.name, b.typ, readOnly, syns, synonyms, doc))
	}
	set := bridge.TopicConfigs{}
	maps.Copy(set, v.def)
	maps.Copy(set, v.node)
	return append(out, v.describeSet(set, func(n string) bool { return !static[n] && want(n) }, true, synonyms, docs)...)
}

// describeBrokerDefaults lists the cluster-wide defaults set (the BROKER
// resource named ""), each with source DYNAMIC_DEFAULT_BROKER_CONFIG.
func describeBrokerDefaults(v brokerView, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	want := func(n string) bool { return len(names) == 0 || slices.Contains(names, n) }
	return append([]kmsg.DescribeConfigsResponseResourceConfig{}, v.describeSet(v.def, want, false, synonyms, docs)...)
}

// describeSet lists the dynamic configs of set that want takes, sorted,
// with their synonyms (perBroker: as brokerView.synonyms).
func (v brokerView) describeSet(set bridge.TopicConfigs, want func(string) bool, perBroker, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, n := range slices.Sorted(maps.Keys(set)) {
		d := brokerDynamic[n]
		if d == nil || !want(n) {
			continue
		}
		var doc *string
		if docs {
			doc = strp(d.doc)
		}
		out = append(out, brokerEntry(n, d.typ, d.readOnly, v.synonyms(n, nil, 0, perBroker), synonyms, doc))
	}
	return out
}

// checkBrokerResource checks the name of a BROKER resource to describe:
// this broker's id, or "" (the cluster-wide defaults). code 0 when fine.
func (g *Gateway) checkBrokerResource(name string) (int16, string) {
	if name == "" {
		return 0, ""
	}
	if _, err := strconv.ParseInt(name, 10, 32); err != nil {
		return kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: " + name
	}
	if name != g.nodeScope() {
		return kerr.InvalidRequest.Code, "Unexpected broker id, expected " + g.nodeScope() + " or empty string, but received " + name
	}
	return 0, ""
}

// checkNodeResource checks the name of a BROKER resource to alter (not
// ""), or of a BROKER_LOGGER one: this broker's id, in Kafka's words.
func (g *Gateway) checkNodeResource(name string) (int16, string) {
	n, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, "Node id must be an integer, but it is: " + name
	}
	if int32(n) != g.Cfg.NodeID {
		return kerr.InvalidRequest.Code, "Unexpected broker id, expected " + g.nodeScope() + ", but received " + name
	}
	return 0, ""
}

// checkBrokerConfigs returns why a scope's resulting config set is
// refused, as Kafka's broker refuses it (INVALID_REQUEST: Kafka wraps its
// ConfigException so, KAFKA-13609): names it cannot change at runtime
// first, then bad values.
func checkBrokerConfigs(next bridge.TopicConfigs) (int16, string) {
	names := slices.Sorted(maps.Keys(next))
	var fixed []string
	for _, n := range names {
		if brokerDynamic[n] == nil {
			fixed = append(fixed, n)
		}
	}
	if len(fixed) > 0 {
		// Kafka 4.4 prints a Java set, "[a, b]" (4.1 a Scala one, "Set(a, b)").
		return kerr.InvalidRequest.Code, "Cannot update these configs dynamically: [" + strings.Join(fixed, ", ") + "]"
	}
	for _, n := range names {
		if why := brokerDynamic[n].check(next[n]); why != "" {
			return kerr.InvalidRequest.Code, "Invalid value " + next[n] + " for configuration " + n + ": " + why
		}
	}
	return 0, ""
}

// checkBrokerRequest is what Kafka's broker checks of a BROKER resource
// before anything else: a config named twice, then configs given without
// a value (nulls: their names; DELETE is not one). code 0 when fine.
func checkBrokerRequest(names, nulls []string) (int16, string) {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return kerr.InvalidRequest.Code, "Error due to duplicate config keys"
		}
		seen[n] = true
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest.Code, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	return 0, ""
}

// alterBrokerConfigs applies change to the scope's dynamic broker
// configs (name "" the cluster-wide defaults, else this broker's id)
// after checking the result: all or nothing; validateOnly stores
// nothing. change gets a copy of the current set (nil when none).
func (c *Call) alterBrokerConfigs(name string, validateOnly bool, change func(bridge.TopicConfigs) (bridge.TopicConfigs, int16, string)) (int16, string) {
	if name != "" {
		if code, msg := c.G.checkNodeResource(name); code != 0 {
			return code, msg
		}
	}
	key := brokerConfigsKey(name)
	cur, err := c.G.Store.GroupConfigs(c.Ctx, c.G.Cfg.Stream, key)
	if err != nil {
		return errCode(err, opAdmin), err.Error()
	}
	next, code, msg := change(maps.Clone(cur))
	if code != 0 {
		return code, msg
	}
	if code, msg := checkBrokerConfigs(next); code != 0 {
		return code, msg
	}
	for k, v := range next {
		next[k] = strings.TrimSpace(v)
	}
	if validateOnly || maps.Equal(cur, next) {
		return 0, ""
	}
	// Dropped whatever the outcome: a failed write may still have landed.
	defer c.G.forgetBrokerConfigs()
	if err := c.G.Store.SetGroupConfigs(c.Ctx, c.G.Cfg.Stream, key, next); err != nil {
		return errCode(err, opAdmin), err.Error()
	}
	return 0, ""
}

// brokerCache holds the dynamic broker configs Produce needs (the
// default message.timestamp.type), read at most once per policyMaxAge.
// The zero value is ready; any goroutine.
type brokerCache struct {
	// gen counts forgetBrokerConfigs calls, so a read that raced one is
	// not kept.
	gen     atomic.Uint64
	snap    atomic.Pointer[brokerSnap]
	reading atomic.Bool // a call is reading them again; others use snap meanwhile
}

type brokerSnap struct {
	v    brokerView
	read time.Time
}

// cachedBrokerView is this gateway's dynamic broker configs, read again
// when older than policyMaxAge. A failed read keeps the last one read
// (none: the static configs alone). A worker.
func (c *Call) cachedBrokerView() brokerView {
	bc := &c.G.brokerCfg
	s := bc.snap.Load()
	if s != nil && time.Since(s.read) < policyMaxAge || !bc.reading.CompareAndSwap(false, true) {
		if s == nil {
			return brokerView{}
		}
		return s.v
	}
	defer bc.reading.Store(false)
	gen := bc.gen.Load()
	v, err := c.readBrokerView()
	if err != nil {
		if s != nil {
			return s.v
		}
		return brokerView{}
	}
	if bc.snap.CompareAndSwap(s, &brokerSnap{v: v, read: time.Now()}) && bc.gen.Load() != gen {
		bc.snap.Store(nil) // a change raced the read, which may predate it
	}
	return v
}

// forgetBrokerConfigs drops what Produce keeps of the broker configs and
// of every topic's policy (which takes its defaults from them). Any
// goroutine.
func (g *Gateway) forgetBrokerConfigs() {
	g.brokerCfg.gen.Add(1)
	g.brokerCfg.snap.Store(nil)
	g.policies.gen.Add(1)
	g.policies.m.Clear()
}

// brokerDefault is the value a topic that does not set a config takes
// from the broker config synonym: set for this broker, else the cluster
// default, else def.
func (v brokerView) brokerDefault(synonym, def string) string {
	if val, ok := v.node[synonym]; ok {
		return val
	}
	if val, ok := v.def[synonym]; ok {
		return val
	}
	return def
}
