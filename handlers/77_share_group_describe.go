// ShareGroupDescribe: v1-1
//
// Behavior:
//   - Describes share groups (package share): state Empty or Stable, the
//     group and assignment epochs, the assignor "simple", and every member
//     with its client id and host, rack, member epoch, subscribed topics
//     and assignment (topic id and name). An id that is not a share group
//     here is GROUP_ID_NOT_FOUND "Group G not found."; one the principal
//     may not DESCRIBE GROUP_AUTHORIZATION_FAILED. Authorized operations
//     are computed when asked for.
//
// Version notes:
//   - v0 was Kafka 4.0's early access, removed in 4.1.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 77, MinVersion: 1, MaxVersion: 1, Gated: shareServed, Handle: typedReq(shareGroupDescribe)})
}

func shareGroupDescribe(c *Call, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, id) {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID = id
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if code := c.shareGroupCode(id); code != 0 {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = id, code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g := c.G.Share.Describe(id)
		if req.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeGroup, id, groupOps)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
