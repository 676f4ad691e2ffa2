package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateFeatures: the level in force is a no-op success; every other
// update is INVALID_UPDATE_VERSION with Kafka's text, the first refusal
// answering for the whole request (in each v0-1 result too).
func TestUpdateFeatures(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	update := func(version int16, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version, req.FeatureUpdates = version, updates
		return do(t, g, req).(*kmsg.UpdateFeaturesResponse)
	}
	u := func(name string, level int16, kind int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
		x := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		x.Feature, x.MaxVersionLevel, x.UpgradeType = name, level, kind
		return x
	}
	cases := []struct {
		name string
		up   kmsg.UpdateFeaturesRequestFeatureUpdate
		want string // "" success, else the message
	}{
		{"level in force", u("group.version", 1, 1), ""},
		{"an unserved feature off", u("eligible.leader.replicas.version", 0, 1), ""},
		{"downgrade without saying", u("group.version", 0, 1), "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"downgrade", u("group.version", 0, 2), "Invalid update version 0 for feature group.version. A gateway's feature levels follow from what it serves, set when it starts, and do not change at runtime."},
		{"above the range", u("group.version", 2, 1), "Invalid update version 2 for feature group.version. This gateway only supports versions [0, 1]."},
		{"an unserved feature on", u("transaction.version", 2, 1), "Invalid update version 2 for feature transaction.version. This gateway does not serve this feature."},
		{"negative", u("group.version", -1, 3), "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{"unknown type", u("group.version", 1, 9), "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
	}
	for _, tc := range cases {
		resp := update(1, tc.up, u("group.version", 1, 1))
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		wantCode := int16(0)
		if tc.want != "" {
			wantCode = kerr.InvalidUpdateVersion.Code
		}
		if resp.ErrorCode != wantCode || msg != tc.want || len(resp.Results) != 2 || resp.Results[1].ErrorCode != wantCode {
			t.Errorf("%s: code %d %q, results %+v", tc.name, resp.ErrorCode, msg, resp.Results)
		}
	}
	if resp := update(2, u("group.version", 0, 2)); resp.ErrorCode != kerr.InvalidUpdateVersion.Code || len(resp.Results) != 0 {
		t.Errorf("v2: code %d, %d results", resp.ErrorCode, len(resp.Results))
	}
	old := u("group.version", 0, 0)
	old.AllowDowngrade = true
	if resp := update(0, old); resp.Results[0].ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Errorf("v0 downgrade: %+v", resp.Results)
	}
}
