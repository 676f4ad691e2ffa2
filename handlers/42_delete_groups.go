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
	register(Spec{Key: 42, MinVersion: 0, MaxVersion: 2, Handle: deleteGroups})
}

func deleteGroups(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, len(req.Groups))
	st := c.G.groupOffsets()
	for i, name := range req.Groups {
		rg := &resp.Groups[i]
		rg.Default()
		rg.Group = name
		if !validGroupID(name) {
			rg.ErrorCode = kerr.InvalidGroupID.Code
			continue
		}
		if v, live := c.G.coordinator().View(name); live && len(v.members) > 0 {
			rg.ErrorCode = kerr.NonEmptyGroup.Code
			continue
		}
		has, err := c.G.groupHasOffsets(c.Ctx, name)
		if err != nil {
			rg.ErrorCode = offsetErrCode(err)
			continue
		}
		code, known := c.G.coordinator().Delete(name)
		if code != 0 {
			rg.ErrorCode = code
			continue
		}
		if !known && !has {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			continue
		}
		if st != nil {
			rg.ErrorCode = offsetErrCode(st.DeleteGroupOffsets(c.Ctx, c.G.Cfg.Stream, name))
		}
	}
	return resp, nil
}
