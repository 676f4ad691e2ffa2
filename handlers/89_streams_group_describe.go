// StreamsGroupDescribe: v0-1
//
// Behavior:
//   - Describes streams groups (KIP-1071) from the coordinator's memory:
//     state (Empty, NotReady, Assigning, Reconciling, Stable), group and
//     assignment epochs, the topology with its subtopologies once it is
//     configured (null while source topics are missing), every member with
//     its process id, endpoint, client tags, task offsets, current and
//     target assignment (active and standby tasks).
//   - A group not in memory, or of another type, is GROUP_ID_NOT_FOUND
//     (after a gateway restart a streams group is known again once a
//     member rejoined).
//   - ACLs: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED;
//     IncludeAuthorizedOperations fills the group's operations.
//   - Served unless --streams-groups disabled.
//
// Version notes:
//   - v1 (Kafka 4.4): IncludeTopologyDescription returns the description
//     the members sent with key 93 (status AVAILABLE) or NOT_STORED;
//     AssignorName is "sticky".

package handlers

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 89, MinVersion: 0, MaxVersion: 1, Gated: streamsServed, Handle: typedReq(streamsGroupDescribe)})
}

func streamsGroupDescribe(c *Call, req *kmsg.StreamsGroupDescribeRequest) (kmsg.Response, error) {
	may := func(g string) bool { return c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g) }
	resp := c.G.coordinator().StreamsDescribe(c.Ctx, req, may)
	if req.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeGroup, g.Group, groupOps)
			}
		}
	}
	return resp, nil
}
