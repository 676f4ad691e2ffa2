// ApiVersions: v0-5
//
// Behavior:
//   - The key list is built only from the registry (Specs), sorted by key:
//     what is advertised is exactly what the version firewall accepts and
//     what the dispatch serves. Transaction keys 24/25/26/28 are never there.
//   - v3+: the feature flags the gateway serves (features.go), and only
//     those: group.version supported 0-1 and finalized at 1 (KIP-848
//     groups). No transaction.version (transactions are refused), no
//     share.version or streams.version, no metadata.version or
//     kraft.version (no KRaft; docs/SCOPE.md says why). As Kafka 4.x
//     answers: a v3 request gets no supported feature whose minimum is 0
//     (KIP-1022), so group.version only as finalized; FinalizedFeaturesEpoch
//     is >= 0 (the gateway's start in Unix ms) with the finalized list.
//   - v3+: ClientSoftwareName and ClientSoftwareVersion must match Kafka's
//     pattern [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else
//     INVALID_REQUEST with an empty key list (as Kafka answers). Checked by
//     hand, no regexp.
//   - A version above our max is not decoded at all: the loop answers it with
//     ApiVersionsUnsupported (a v0 body with UNSUPPORTED_VERSION and the key
//     list) and keeps the connection (KIP-511).
//   - Inline: no store call, no allocation beyond the response struct; the
//     key list and the features are built once and shared read-only by
//     every response.
//
// Version notes:
//   - v1 adds ThrottleMillis; v2 changes nothing on the wire.
//   - v3 (KIP-511) is flexible and adds the client software name/version and
//     tagged fields (supported/finalized features, KIP-584).
//   - v4 (KIP-1022) adds nothing to the body; it lets a broker list a
//     supported feature whose range starts at 0.
//   - v5 (KIP-1242) lets a client say which cluster and node it means to
//     reach, so one routed elsewhere (DNS, a load balancer) finds out: a
//     cluster id and node id that are not this gateway's (Cfg.ClusterID,
//     Cfg.NodeID: in cluster mode each gateway's own) answer
//     REBOOTSTRAP_REQUIRED, a node id without a cluster id
//     INVALID_REQUEST, both with no key list, as Kafka 4.4 answers.
//   - The response header is always v0, even for flexible versions (the loop
//     and codec handle that).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 18, MinVersion: 0, MaxVersion: 5, Inline: true, Handle: typed(apiVersions), TooNew: ApiVersionsUnsupported, BeforeLogin: true})
}

// advertisedKeys returns the registry as ApiVersions entries for a gateway
// with cfg: every key but those its configuration does not serve
// (Spec.Gated). NewGateway builds it once (Gateway.apiKeys); callers must
// not modify the slice.
func advertisedKeys(cfg *Config) []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for _, s := range Specs() {
		if s.Gated != nil && !s.Gated(cfg) {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = s.Key, s.MinVersion, s.MaxVersion
		keys = append(keys, k)
	}
	return keys
}

func apiVersions(c *Call, req *kmsg.ApiVersionsRequest, resp *kmsg.ApiVersionsResponse) (kmsg.Response, error) {
	if req.Version >= 3 && (!validSoftwareField(req.ClientSoftwareName) || !validSoftwareField(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.Version >= 5 {
		switch {
		case req.ClusterID == nil && req.NodeID != -1:
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		case req.ClusterID != nil && (*req.ClusterID != c.G.Cfg.ClusterID || req.NodeID != c.G.Cfg.NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	resp.ApiKeys = c.G.apiKeys
	c.G.features.fill(resp, req.Version)
	return resp, nil
}

// ApiVersionsUnsupported is the KIP-511 answer to an ApiVersions request whose
// version is above what we serve: a version 0 response with
// UNSUPPORTED_VERSION and the full key list, from which the client picks a
// version it shares with us and asks again. The loop encodes it as v0 (v0
// response header, v0 body) whatever version was asked, and keeps the
// connection open. It does not need the request body. Any goroutine.
func ApiVersionsUnsupported(c *Call) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = c.G.apiKeys
	return resp
}

// validSoftwareField matches Kafka's client software name/version pattern
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? without a regexp. No allocation.
func validSoftwareField(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum {
			continue
		}
		if (c == '-' || c == '.') && i != 0 && i != len(s)-1 {
			continue
		}
		return false
	}
	return true
}
