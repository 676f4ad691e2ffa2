// DeleteGroups: v0-3
//
// Behavior:
//   - Deletes a group with no live members: its committed offsets are
//     removed from the store and it leaves the coordinator's memory.
//   - A group with members (or member ids handed out and not yet joined) is
//     NON_EMPTY_GROUP; a group neither in memory nor holding offsets
//     GROUP_ID_NOT_FOUND; an invalid id INVALID_GROUP_ID; a store failure
//     COORDINATOR_NOT_AVAILABLE (or REQUEST_TIMED_OUT).
//   - A share group (package share) is deleted with its share-partition
//     state, NON_EMPTY_GROUP while it has members.
//
// Version notes:
//   - v2 flexible. v3 adds an error message per group: the error's own
//     text, as Kafka sends it.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 42, MinVersion: 0, MaxVersion: 3, Handle: typedReq(deleteGroups)})
}

func deleteGroups(c *Call, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	resp := deleteAuthorizedGroups(c, req)
	if sh := c.G.Share; sh != nil {
		// A share group is unknown to the group coordinator.
		for i := range resp.Groups {
			// In cluster mode its coordinator may hold only its state
			// (in etcd), not its members: Delete looks there too.
			if g := &resp.Groups[i]; g.ErrorCode == kerr.GroupIDNotFound.Code {
				g.ErrorCode = sh.Delete(c.Ctx, g.Group)
			}
		}
	}
	if req.Version >= 3 {
		for i := range resp.Groups {
			if e, ok := kerr.ErrorForCode(resp.Groups[i].ErrorCode).(*kerr.Error); ok {
				resp.Groups[i].ErrorMessage = &e.Description
			}
		}
	}
	return resp, nil
}

// deleteAuthorizedGroups deletes the groups of req the client may delete
// and answers the others GROUP_AUTHORIZATION_FAILED.
func deleteAuthorizedGroups(c *Call, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	if !c.authzOn() {
		return c.G.coordinator().Delete(c.Ctx, req)
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
		return resp
	}
	resp := c.G.coordinator().Delete(c.Ctx, &sub)
	resp.Groups = append(resp.Groups, refused...)
	return resp
}
