package group

import (
	"slices"
	"time"
)

// Config bounds the coordinator. Zero fields take the defaults below.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (Kafka's group.min/max.session.timeout.ms); outside is
	// INVALID_SESSION_TIMEOUT. Defaults 6s and 30m.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxRebalanceTimeout clamps a member's rebalance timeout. Default 30m.
	MaxRebalanceTimeout time.Duration
	// InitialRebalanceDelay holds the first rebalance of an empty group
	// open for more members (group.initial.rebalance.delay.ms). Default
	// 3s; negative means none.
	InitialRebalanceDelay time.Duration
	// NewMemberJoinTimeout removes a new member whose first join has not
	// completed in that time. Default 5m.
	NewMemberJoinTimeout time.Duration
	// MaxGroups caps groups held in memory; an idle Empty group gives
	// its slot up to a new one, and when none is idle a new group gets
	// COORDINATOR_NOT_AVAILABLE. Default 10000.
	MaxGroups int
	// MaxGroupSize caps the members of one group (GROUP_MAX_SIZE_REACHED).
	// Default 1000.
	MaxGroupSize int
	// MaxMembers caps members and pending member ids over all groups
	// (COORDINATOR_NOT_AVAILABLE beyond). Default 20000.
	MaxMembers int
	// MaxProtocols caps the protocols one member offers. Default 32.
	MaxProtocols int
	// MaxMetadataBytes caps one member's protocol metadata, all protocols
	// together, and MaxAssignmentBytes one member's assignment. Both
	// INVALID_REQUEST beyond. Default 1 MiB each.
	MaxMetadataBytes, MaxAssignmentBytes int

	// The consumer protocol (KIP-848, ConsumerGroupHeartbeat).
	//
	// ConsumerSessionTimeout removes a member that has not heartbeat for
	// this long and frees its partitions (Kafka's
	// group.consumer.session.timeout.ms). Default 45s.
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is the interval members are told to
	// heartbeat at (group.consumer.heartbeat.interval.ms). Default 5s.
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMinSessionTimeout and ConsumerMaxSessionTimeout bound a
	// group's consumer.session.timeout.ms config, and the Min/Max
	// HeartbeatInterval pair its consumer.heartbeat.interval.ms (Kafka's
	// group.consumer.min/max.*). Defaults 45s/60s and 5s/15s, widened to
	// include the two defaults above.
	ConsumerMinSessionTimeout, ConsumerMaxSessionTimeout       time.Duration
	ConsumerMinHeartbeatInterval, ConsumerMaxHeartbeatInterval time.Duration
	// ConsumerAssignors are the server-side assignors members may name,
	// the first being the default (group.consumer.assignors). Default
	// uniform, range; unknown names are dropped.
	ConsumerAssignors []string
	// MetadataMaxAge bounds how stale the topic list a heartbeat computes
	// the assignment against may be: the coordinator lists the stream's
	// topics at most this often. Default 1s; negative means every
	// heartbeat.
	MetadataMaxAge time.Duration
	// StreamsInitialRebalanceDelay holds a new streams group's first
	// assignment so the app's other instances can join first (Kafka's
	// group.streams.initial.rebalance.delay.ms); < 0 is none.
	StreamsInitialRebalanceDelay time.Duration
	// MaxSubscribedTopics caps one member's subscribed topic names, and
	// MaxRegexLen its regular expression; INVALID_REQUEST beyond. Defaults
	// 10000 and 4096 bytes.
	MaxSubscribedTopics, MaxRegexLen int
}

// Defaults of Config.
const (
	defaultMinSession          = 6 * time.Second
	defaultMaxSession          = 30 * time.Minute
	defaultMaxRebalance        = 30 * time.Minute
	defaultInitialDelay        = 3 * time.Second
	defaultNewMemberTimeout    = 5 * time.Minute
	defaultMaxGroups           = 10000
	defaultMaxGroupSize        = 1000
	defaultMaxMembers          = 20000
	defaultMaxProtocols        = 32
	defaultMaxBlob             = 1 << 20
	defaultConsumerSession     = 45 * time.Second
	defaultConsumerInterval    = 5 * time.Second
	defaultConsumerMinSess     = 45 * time.Second
	defaultConsumerMaxSess     = 60 * time.Second
	defaultConsumerMinHB       = 5 * time.Second
	defaultConsumerMaxHB       = 15 * time.Second
	defaultMetadataMaxAge      = time.Second
	defaultStreamsInitialDelay = 3 * time.Second
	defaultMaxSubscribed       = 10000
	defaultMaxRegexLen         = 4096
	// parkSlack is added to a wait's deadline: the coordinator's own
	// timers settle every ticket before it, the deadline is a backstop.
	parkSlack = 5 * time.Second
)

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defi := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MinSessionTimeout, defaultMinSession)
	def(&c.MaxSessionTimeout, defaultMaxSession)
	def(&c.MaxRebalanceTimeout, defaultMaxRebalance)
	def(&c.InitialRebalanceDelay, defaultInitialDelay)
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	def(&c.NewMemberJoinTimeout, defaultNewMemberTimeout)
	defi(&c.MaxGroups, defaultMaxGroups)
	defi(&c.MaxGroupSize, defaultMaxGroupSize)
	defi(&c.MaxMembers, defaultMaxMembers)
	defi(&c.MaxProtocols, defaultMaxProtocols)
	defi(&c.MaxMetadataBytes, defaultMaxBlob)
	defi(&c.MaxAssignmentBytes, defaultMaxBlob)
	def(&c.ConsumerSessionTimeout, defaultConsumerSession)
	def(&c.ConsumerHeartbeatInterval, defaultConsumerInterval)
	def(&c.ConsumerMinSessionTimeout, defaultConsumerMinSess)
	def(&c.ConsumerMaxSessionTimeout, defaultConsumerMaxSess)
	def(&c.ConsumerMinHeartbeatInterval, defaultConsumerMinHB)
	def(&c.ConsumerMaxHeartbeatInterval, defaultConsumerMaxHB)
	c.ConsumerMinSessionTimeout = min(c.ConsumerMinSessionTimeout, c.ConsumerSessionTimeout)
	c.ConsumerMaxSessionTimeout = max(c.ConsumerMaxSessionTimeout, c.ConsumerSessionTimeout)
	c.ConsumerMinHeartbeatInterval = min(c.ConsumerMinHeartbeatInterval, c.ConsumerHeartbeatInterval)
	c.ConsumerMaxHeartbeatInterval = max(c.ConsumerMaxHeartbeatInterval, c.ConsumerHeartbeatInterval)
	def(&c.StreamsInitialRebalanceDelay, defaultStreamsInitialDelay)
	if c.StreamsInitialRebalanceDelay < 0 {
		c.StreamsInitialRebalanceDelay = 0
	}
	def(&c.MetadataMaxAge, defaultMetadataMaxAge)
	if c.MetadataMaxAge < 0 {
		c.MetadataMaxAge = 0
	}
	defi(&c.MaxSubscribedTopics, defaultMaxSubscribed)
	defi(&c.MaxRegexLen, defaultMaxRegexLen)
	var as []string
	for _, a := range c.ConsumerAssignors {
		if _, ok := assignors[a]; ok && !slices.Contains(as, a) {
			as = append(as, a)
		}
	}
	if len(as) == 0 {
		as = []string{assignorUniform, assignorRange}
	}
	c.ConsumerAssignors = as
	return c
}

// Config returns the coordinator's settings with every default filled
// in (what DescribeConfigs reports). Any goroutine.
func (co *Coordinator) Config() Config { return co.cfg }

// MaxGroupIDLen keeps "kafka.cg." + group within Iggy's 255-byte names
// (bridge/iggy offsets.go); longer ids get INVALID_GROUP_ID (FindCoordinator
// refuses them too).
const MaxGroupIDLen = 246
