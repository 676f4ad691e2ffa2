// DescribeGroups: v0-6
//
// Behavior:
//   - A group in the coordinator's memory is described live: state,
//     protocol type and name, members with client id, instance id,
//     metadata (not during a join barrier) and assignment (Stable only).
//     ClientHost is the member's peer address as the loop saw it at join.
//   - A group with no live members but committed offsets in the store is
//     Empty with protocol type "consumer" (as after a Kafka broker restart).
//   - A consumer-protocol (KIP-848) group is Dead, with GROUP_ID_NOT_FOUND
//     "Group G is not a classic group." at v6, as on Kafka 4
//     (ConsumerGroupDescribe describes it).
//   - A share group likewise (ShareGroupDescribe describes it).
//   - Any other group is Dead; v6 adds GROUP_ID_NOT_FOUND (KIP-1043), v0-5
//     answer it without an error as Kafka does.
//   - Authorized operations are never computed (INT32_MIN, "not
//     requested"). An invalid group id is INVALID_GROUP_ID; a store failure
//     while looking for offsets COORDINATOR_NOT_AVAILABLE.
//
// Version notes:
//   - v3 authorized operations; v4 group.instance.id; v5 flexible; v6 error
//     message and GROUP_ID_NOT_FOUND.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 15, MinVersion: 0, MaxVersion: 6, Handle: typedReq(describeGroups)})
}

func describeGroups(c *Call, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp := c.G.coordinator().Describe(c.Ctx, req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if sh := c.G.Share; sh != nil && sh.Exists(g.Group) {
			// ShareGroupDescribe describes it, as on Kafka 4.
			name := g.Group
			*g = kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.State = name, "Dead"
			g.Members = []kmsg.DescribeGroupsResponseGroupMember{}
			if req.Version >= 6 {
				g.ErrorCode = kerr.GroupIDNotFound.Code
				g.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a classic group.")
			}
			continue
		}
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
			name := g.Group
			*g = kmsg.NewDescribeGroupsResponseGroup()
			g.Group = name
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			g.Members = []kmsg.DescribeGroupsResponseGroupMember{}
			continue
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeGroup, g.Group, groupOps)
		}
	}
	return resp, nil
}
