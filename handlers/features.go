package handlers

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Kafka feature flags (KIP-584) this gateway serves: the one list
// ApiVersions advertises, as SupportedFeatures (the levels it can run) and
// FinalizedFeatures (the level it runs). A feature is listed only while the
// gateway serves what it gates, so a flag that turns a protocol on (share
// groups, streams groups, transactions) adds its feature in servedFeatures
// and nowhere else. What Kafka 4.x brokers list and this gateway does not:
//
//   - metadata.version, kraft.version: the KRaft metadata log's format and
//     its quorum's; a gateway has neither, and no client acts on them
//     (docs/SCOPE.md, "Feature flags");
//   - eligible.leader.replicas.version: ELR replication is not served;
//   - streams.version when streams groups are off (--streams-groups
//     disabled);
//   - share.version when share groups are off (--share-groups disabled,
//     or cluster mode).
//   - transaction.version unless transactions are on (--transactions
//     enabled): a Java client takes the transaction protocol of KIP-890
//     from it, so it appears exactly when transactions are served, at the
//     level --transaction-version finalizes.

// feature is one served feature flag. A finalized level of 0 is never
// listed, as Kafka lists none (level 0 is the feature off).
type feature struct {
	name                       string
	minSupported, maxSupported int16
	finalized                  int16
}

// servedFeatures lists the features the gateway serves, sorted by name.
// Called once per gateway (NewGateway), after the registry is complete.
func servedFeatures(cfg *Config) []feature {
	var fs []feature
	if Lookup(68) != nil {
		// ConsumerGroupHeartbeat serves the consumer group protocol of
		// KIP-848 (level 1); classic groups (level 0) are always served.
		fs = append(fs, feature{name: "group.version", minSupported: 0, maxSupported: 1, finalized: 1})
	}
	if shareServed(cfg) {
		// share.version 1 is KIP-932's share groups; 2 (Kafka 4.2) adds
		// ShareFetch v2's acquire modes and renew acknowledgements.
		fs = append(fs, feature{name: "share.version", minSupported: 0, maxSupported: 2, finalized: 2})
	}
	if streamsServed(cfg) {
		// streams.version 1 is KIP-1071's streams groups.
		fs = append(fs, feature{name: "streams.version", minSupported: 0, maxSupported: 1, finalized: 1})
	}
	if t := &cfg.Transactions; t.Enabled {
		// transaction.version 2 is KIP-890's protocol (Produce v12 adds
		// partitions, EndTxn v5 bumps the epoch); 1 and 0 the one before.
		fs = append(fs, feature{name: "transaction.version", minSupported: 0, maxSupported: 2, finalized: t.Version})
	}
	slices.SortFunc(fs, func(a, b feature) int { return strings.Compare(a.name, b.name) })
	return fs
}

// featureSet is the served features in ApiVersions form, built once per
// gateway (NewGateway); every response shares its slices read-only.
type featureSet struct {
	supported []kmsg.ApiVersionsResponseSupportedFeature // v4+
	// supportedV3 leaves out the features whose supported minimum is 0:
	// clients before KIP-1022 refuse a range starting at 0, so a Kafka
	// broker lists them only to a v4+ request (KAFKA-17011).
	supportedV3 []kmsg.ApiVersionsResponseSupportedFeature
	finalized   []kmsg.ApiVersionsResponseFinalizedFeature
	// epoch is FinalizedFeaturesEpoch: -1 (unknown, the tag left out)
	// with no finalized feature, else the gateway's start in Unix ms. A
	// Java client keeps the finalized features of the highest epoch it
	// has seen, so a gateway restarted with other features must answer a
	// higher epoch than before; Kafka's, a metadata log offset, grows too.
	epoch int64
}

// newFeatureSet builds the ApiVersions form of fs with epoch startMs.
func newFeatureSet(fs []feature, startMs int64) featureSet {
	s := featureSet{epoch: -1}
	for _, f := range fs {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.minSupported, f.maxSupported
		s.supported = append(s.supported, sf)
		if f.minSupported != 0 {
			s.supportedV3 = append(s.supportedV3, sf)
		}
		if f.finalized != 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.finalized, f.finalized
			s.finalized = append(s.finalized, ff)
			s.epoch = startMs
		}
	}
	return s
}

// fill sets the feature fields of an ApiVersions response at version v
// (they exist from v3). Any goroutine.
func (s *featureSet) fill(resp *kmsg.ApiVersionsResponse, v int16) {
	if v < 3 {
		return
	}
	resp.SupportedFeatures = s.supported
	if v < 4 {
		resp.SupportedFeatures = s.supportedV3
	}
	resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch = s.finalized, s.epoch
}
