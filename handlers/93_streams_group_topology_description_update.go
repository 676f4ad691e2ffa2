// StreamsGroupTopologyDescriptionUpdate: v0-0
//
// Behavior:
//   - A member of a streams group sends its app's full topology
//     description (processors, stores, global stores) for the group's
//     current topology epoch when a v1 heartbeat asked for it
//     (TopologyDescriptionRequired); StreamsGroupDescribe v1 returns it.
//   - An unknown group is GROUP_ID_NOT_FOUND, an unknown member
//     UNKNOWN_MEMBER_ID, another topology epoch or a description over
//     1 MiB INVALID_REQUEST.
//   - ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED.
//   - Served unless --streams-groups disabled.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 93, MinVersion: 0, MaxVersion: 0, Gated: streamsServed, Handle: typedReq(streamsGroupTopologyDescriptionUpdate)})
}

func streamsGroupTopologyDescriptionUpdate(c *Call, req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) (kmsg.Response, error) {
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return c.G.coordinator().StreamsTopologyDescription(req), nil
}
