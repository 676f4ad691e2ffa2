// StreamsGroupTopologyDescriptionUpdate: v0-0
//
// Behavior:
//   - Answered as a Kafka 4.4 broker without a topology description plugin
//     (group.streams.topology.description.plugin.class unset, the
//     default) answers it: UNSUPPORTED_VERSION "The broker has no streams
//     group topology description plugin configured.", whatever the group.
//     StreamsGroupHeartbeat never asks for a description
//     (TopologyDescriptionRequired false), so Kafka Streams never sends it.
//   - ACLs: READ on the group, else GROUP_AUTHORIZATION_FAILED.
//   - Served unless --streams-groups disabled (Kafka 4.4 advertises it).

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
	// No plugin stores descriptions here (nor on a default Kafka 4.4).
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ErrorMessage = kmsg.StringPtr("The broker has no streams group topology description plugin configured.")
	return resp, nil
}
