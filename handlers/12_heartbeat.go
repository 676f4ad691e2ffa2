// Heartbeat: v0-4
//
// Behavior:
//   - Restarts the member's session timer. A heartbeat during a join
//     barrier gets REBALANCE_IN_PROGRESS (the member must rejoin); a
//     stale generation ILLEGAL_GENERATION; an unknown member or group
//     UNKNOWN_MEMBER_ID (also after a gateway restart: membership is soft
//     state, the member rejoins); a static member whose instance id now
//     belongs to another member id FENCED_INSTANCE_ID.
//   - Runs on a worker, not inline, so it is processed in request order
//     after a parked JoinGroup/SyncGroup of the same connection, as on a
//     broker.
//
// Version notes:
//   - v3 group.instance.id; v4 flexible.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 12, MinVersion: 0, MaxVersion: 4, Handle: typedReq(heartbeat)})
}

func heartbeat(c *Call, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return c.G.coordinator().Heartbeat(req), nil
}
