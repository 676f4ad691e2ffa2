// LeaveGroup: v0-5
//
// Behavior:
//   - Removes members at once (their parked JoinGroup/SyncGroup calls get
//     UNKNOWN_MEMBER_ID) and moves the group on: a Stable or
//     CompletingRebalance group starts a rebalance; an open barrier closes
//     if everyone left is in; a group left with no members becomes Empty
//     (its committed offsets stay in the store).
//   - v3+ batches members (KIP-345); a member named by group.instance.id
//     is removed whatever its member id, unless a member id is given and
//     differs (FENCED_INSTANCE_ID). Unknown members get UNKNOWN_MEMBER_ID
//     each. v0-2 name one member and carry its error at the top level.
//
// Version notes:
//   - v3 batch by member/instance id; v4 flexible; v5 reason (ignored).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 13, MinVersion: 0, MaxVersion: 5, Handle: typedReq(leaveGroup)})
}

func leaveGroup(c *Call, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return c.G.coordinator().Leave(req), nil
}
