// UpdateFeatures: v0-2
//
// Behavior:
//   - The features a gateway serves follow from what it serves
//     (features.go), set when it starts; there is no controller whose
//     finalized levels could move. So an update to the level a feature is
//     at already succeeds and changes nothing, as on Kafka, and any other
//     level is INVALID_UPDATE_VERSION with Kafka's text ("Invalid update
//     version V for feature F. ...") and the reason: a level the gateway
//     cannot serve, or one it could but does not change at runtime.
//     Kafka's own checks come first: an unknown upgrade type, a level below
//     0, a downgrade asked as an upgrade, an upgrade asked as a downgrade.
//   - As Kafka's controller, the first refused update refuses the whole
//     request (nothing is applied anyway); validate_only answers the same.
//   - Needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
//   - v0-1 repeat the request's error in a result per feature; v2 has only
//     the top-level error.
//
// Version notes:
//   - v1 (KIP-778) replaces allow_downgrade with the upgrade type (1
//     upgrade, 2 safe downgrade, 3 unsafe downgrade) and adds
//     validate_only; v2 (KIP-1022 era) drops the per-feature results.

package handlers

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 57, MinVersion: 0, MaxVersion: 2, Inline: true, Handle: typed(updateFeatures)})
}

// The upgrade types of UpdateFeatures v1+.
const (
	upgradeUpgrade         int8 = 1
	upgradeSafeDowngrade   int8 = 2
	upgradeUnsafeDowngrade int8 = 3
)

// updateFeatures touches no store: safe on the event loop.
func updateFeatures(c *Call, req *kmsg.UpdateFeaturesRequest, resp *kmsg.UpdateFeaturesResponse) (kmsg.Response, error) {
	code, msg := int16(0), (*string)(nil)
	if !c.Authorized(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResource) {
		code, msg = kerr.ClusterAuthorizationFailed.Code, strp(msgClusterAuthorizationFailed)
	} else {
		served := servedFeatures(&c.G.Cfg)
		for i := range req.FeatureUpdates {
			if reason := featureUpdateRefusal(served, &req.FeatureUpdates[i], req.Version); reason != "" {
				u := &req.FeatureUpdates[i]
				code = kerr.InvalidUpdateVersion.Code
				msg = strp(fmt.Sprintf("Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, reason))
				break
			}
		}
	}
	resp.ErrorCode, resp.ErrorMessage = code, msg
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature, r.ErrorCode, r.ErrorMessage = u.Feature, code, msg
			resp.Results = append(resp.Results, r)
		}
	}
	return resp, nil
}

// featureUpdateRefusal is why u cannot be applied ("" when it asks for the
// level its feature is at), in the order of Kafka's checks.
func featureUpdateRefusal(served []feature, u *kmsg.UpdateFeaturesRequestFeatureUpdate, version int16) string {
	kind := u.UpgradeType
	if version == 0 {
		kind = upgradeUpgrade
		if u.AllowDowngrade {
			kind = upgradeSafeDowngrade
		}
	}
	if kind < upgradeUpgrade || kind > upgradeUnsafeDowngrade {
		return "The controller does not support the given upgrade type."
	}
	if u.MaxVersionLevel < 0 {
		return "A feature version cannot be less than 0."
	}
	var f feature // a feature not served: supported at level 0 only, finalized at 0
	for _, s := range served {
		if s.name == u.Feature {
			f = s
		}
	}
	if u.MaxVersionLevel < f.minSupported || u.MaxVersionLevel > f.maxSupported {
		if f.name == "" {
			return "This gateway does not serve this feature."
		}
		return fmt.Sprintf("This gateway only supports versions [%d, %d].", f.minSupported, f.maxSupported)
	}
	switch {
	case u.MaxVersionLevel < f.finalized && kind == upgradeUpgrade:
		return "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	case u.MaxVersionLevel > f.finalized && kind != upgradeUpgrade:
		return "Can't downgrade to a newer version."
	case u.MaxVersionLevel != f.finalized:
		return "A gateway's feature levels follow from what it serves, set when it starts, and do not change at runtime."
	}
	return ""
}
