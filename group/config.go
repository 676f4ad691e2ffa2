package group

import "time"

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
}

// Defaults of Config.
const (
	defaultMinSession       = 6 * time.Second
	defaultMaxSession       = 30 * time.Minute
	defaultMaxRebalance     = 30 * time.Minute
	defaultInitialDelay     = 3 * time.Second
	defaultNewMemberTimeout = 5 * time.Minute
	defaultMaxGroups        = 10000
	defaultMaxGroupSize     = 1000
	defaultMaxMembers       = 20000
	defaultMaxProtocols     = 32
	defaultMaxBlob          = 1 << 20
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
	return c
}

// MaxGroupIDLen keeps "kafka.cg." + group within Iggy's 255-byte names
// (bridge/iggy offsets.go); longer ids get INVALID_GROUP_ID (FindCoordinator
// refuses them too).
const MaxGroupIDLen = 246
