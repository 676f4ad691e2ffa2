// JoinGroup: v0-9
//
// Behavior:
//   - The classic protocol's join barrier, run by the in-process coordinator
//     (package group, docs/CONSUMER_GROUPS.md). A join that has to wait for the
//     barrier parks the call (no worker or loop is held) and is answered when
//     the barrier closes: every member rejoined, the rebalance timeout
//     passed (members that did not rejoin are removed), or the initial
//     rebalance delay of an empty group ended.
//   - A share group's id is INCONSISTENT_GROUP_PROTOCOL, as on Kafka 4.
//   - KIP-394 from v4: a member with no member id gets MEMBER_ID_REQUIRED and
//     a fresh id, and joins with it; the id expires after its session
//     timeout if it never does. Before v4 the member is added at once.
//   - Static membership (KIP-345, group.instance.id, v5+): a returning
//     static member gets a new member id in place of its old one; in a
//     Stable group with unchanged protocols it keeps its assignment and the
//     group does not rebalance (the leader is told SkipAssignment at v9).
//     The old member id is fenced (FENCED_INSTANCE_ID).
//   - The protocol chosen is the one most members list first among those
//     every member supports. Assignment and metadata blobs stay opaque.
//   - Caps: session timeout within [MinSessionTimeout, MaxSessionTimeout]
//     (INVALID_SESSION_TIMEOUT); members per group (GROUP_MAX_SIZE_REACHED);
//     groups and members in total (COORDINATOR_NOT_AVAILABLE); protocols
//     per member and metadata bytes per member (INVALID_REQUEST); group id
//     1..246 bytes (INVALID_GROUP_ID).
//   - A group of the consumer protocol (KIP-848) with members is a mixed
//     group: this key, SyncGroup, Heartbeat and LeaveGroup are answered
//     from it (the coordinator assigns; no leader, no parking;
//     docs/CONSUMER_GROUPS.md, mixed groups). An empty one becomes classic.
//   - A parked join whose backstop deadline passes first (or that is
//     drained at shutdown) gets REBALANCE_IN_PROGRESS and rejoins.
//
// Version notes:
//   - v1 rebalance timeout (v0: the session timeout); v4 KIP-394; v5
//     group.instance.id; v6 flexible; v7 protocol type in the response; v8
//     reason (logged nowhere, ignored); v9 SkipAssignment (KIP-814).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 11, MinVersion: 0, MaxVersion: 9, Handle: typedReq(joinGroup)})
}

// joinGroup parks a join that has to wait for the barrier (groups.go) and
// collects its answer on the re-run. A worker.
func joinGroup(c *Call, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	gs := c.G.coordinator()
	if c.gwait != nil {
		return c.resumeGroupWait(gs), nil
	}
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.Generation = -1
		return resp, nil
	}
	if sh := c.G.Share; sh != nil && sh.Exists(req.Group) {
		// A share group's id: Kafka 4 answers a classic join so.
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		resp.Generation = -1
		return resp, nil
	}
	return c.answerOrPark(gs.Join(req, string(c.Header.ClientID), c.ClientHost)), nil
}
