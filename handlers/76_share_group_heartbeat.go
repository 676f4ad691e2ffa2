// ShareGroupHeartbeat: v1-1
//
// Behavior:
//   - Share groups (KIP-932, package share, docs/SHARE_GROUPS.md): epoch 0
//     joins with the client's member id, -1 leaves (the records the
//     member holds are released); any other epoch must be the member's or
//     the one before it (FENCED_MEMBER_EPOCH), an unknown member is
//     UNKNOWN_MEMBER_ID. The answer carries the member epoch, the group's
//     share.heartbeat.interval.ms and, when it changed, the member's
//     assignment by topic id.
//   - Assignment: Kafka's simple share assignor; per topic its partitions
//     spread over the members subscribed to it, and with more members than
//     partitions every member gets one and a partition goes to several.
//     A topic that does not exist yet is assigned once it does.
//   - A member that stops heartbeating leaves at share.session.timeout.ms.
//   - A group id held by a classic or consumer group is GROUP_ID_NOT_FOUND
//     ("Group G is not a share group."); an empty group id, empty member
//     id or a join without subscribed topics INVALID_REQUEST with Kafka's
//     message; group.share.max.size members GROUP_MAX_SIZE_REACHED.
//   - ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on
//     the subscribed topics (TOPIC_AUTHORIZATION_FAILED naming them).
//   - Served while share groups are on (--share-groups). In cluster mode
//     by the gateway coordinating the group (NOT_COORDINATOR elsewhere,
//     COORDINATOR_LOAD_IN_PROGRESS while it is handed over).
//
// Version notes:
//   - v0 was Kafka 4.0's early access, removed in 4.1; v1 is KIP-932's.

package handlers

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/share"
)

func init() {
	register(Spec{Key: 76, MinVersion: 1, MaxVersion: 1, Gated: shareServed, Handle: typedReq(shareGroupHeartbeat)})
}

func shareGroupHeartbeat(c *Call, req *kmsg.ShareGroupHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if code := c.shareGroupCode(req.GroupID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	var denied []string
	for _, t := range req.SubscribedTopicNames {
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t) {
			denied = append(denied, t)
		}
	}
	if len(denied) > 0 {
		resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("The client is not authorized to access topics: [%s]", strings.Join(denied, ", ")))
		return resp, nil
	}
	return c.G.Share.Heartbeat(c.Ctx, share.HeartbeatInput{
		Req: req, ClientID: string(c.Header.ClientID), Host: c.ClientHost,
		Topics:  c.shareTopics,
		Foreign: c.G.coordinator().Holds,
	}), nil
}
