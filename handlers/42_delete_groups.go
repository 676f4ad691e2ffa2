// DeleteGroups: v0-2
//
// Behavior:
//   - Deletes a group with no live members: its committed offsets are
//     removed from the store and it leaves the coordinator's memory.
//   - A group with members (or member ids handed out and not yet joined) is
//     NON_EMPTY_GROUP; a group neither in memory nor holding offsets
//     GROUP_ID_NOT_FOUND; an invalid id INVALID_GROUP_ID; a store failure
//     COORDINATOR_NOT_AVAILABLE (or REQUEST_TIMED_OUT).
//
// Version notes:
//   - v2 flexible. v3 (error messages) is not served.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 42, MinVersion: 0, MaxVersion: 2, Handle: typedReq(deleteGroups)})
}

func deleteGroups(c *Call, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	if !c.authzOn() {
		return c.G.coordinator().Delete(c.Ctx, req), nil
	}
	// DELETE on each group: refused ones are answered here, the rest
	// deleted.
	sub := *req
	sub.Groups = nil
	var refused []kmsg.DeleteGroupsResponseGroup
	for _, g := range req.Groups {
		if c.Authorized(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeGroup, g) {
			sub.Groups = append(sub.Groups, g)
			continue
		}
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group, r.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		refused = append(refused, r)
	}
	if len(sub.Groups) == 0 {
		resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
		resp.Groups = refused
		return resp, nil
	}
	resp := c.G.coordinator().Delete(c.Ctx, &sub)
	resp.Groups = append(resp.Groups, refused...)
	return resp, nil
}
