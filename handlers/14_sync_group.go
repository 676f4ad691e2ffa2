// SyncGroup: v0-5
//
// Behavior:
//   - The leader's SyncGroup carries the assignment of every member; the
//     coordinator stores the blobs as they are (opaque) and answers each
//     member with its own. A follower that syncs before the leader parks
//     (no worker held) until the leader's assignment arrives, a new
//     rebalance starts (REBALANCE_IN_PROGRESS) or it is removed
//     (UNKNOWN_MEMBER_ID). Members the leader left out get an empty
//     assignment.
//   - In a Stable group a member gets its current assignment at once (a
//     static member rejoining without a rebalance does this).
//   - Members that do not sync within the rebalance timeout after the
//     barrier closed are removed, and the group rebalances, as on Kafka.
//   - Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
//     REBALANCE_IN_PROGRESS (during a join barrier),
//     INCONSISTENT_GROUP_PROTOCOL (v5 protocol type or name differ),
//     INVALID_REQUEST (an assignment over MaxAssignmentBytes).
//
// Version notes:
//   - v3 group.instance.id; v4 flexible; v5 protocol type and name (KIP-559).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 14, MinVersion: 0, MaxVersion: 5, Handle: typedReq(syncGroup)})
}

// syncGroup parks a follower's sync that has to wait for the leader
// (groups.go) and collects its answer on the re-run. A worker.
func syncGroup(c *Call, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	gs := c.G.coordinator()
	if c.gwait != nil {
		return c.resumeGroupWait(gs), nil
	}
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return c.answerOrPark(gs.Sync(req)), nil
}
