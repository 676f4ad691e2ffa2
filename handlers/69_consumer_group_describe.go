// ConsumerGroupDescribe: v0-1
//
// Behavior:
//   - Describes groups of the consumer protocol (KIP-848) from the
//     coordinator's memory: state (Empty, Assigning, Reconciling, Stable),
//     group epoch, assignment epoch, the assignor in use, and per member its
//     epoch, client id and host, instance and rack ids, subscribed topic
//     names and regex, current assignment and target assignment (topic ids
//     and names).
//   - A classic group (also one known only by its committed offsets) is
//     GROUP_ID_NOT_FOUND "Group G is not a consumer group.", an unknown one
//     GROUP_ID_NOT_FOUND "Group G not found.", as on Kafka; the admin
//     client (kafka-consumer-groups --describe) then asks DescribeGroups.
//   - ACLs (docs/SECURITY.md): DESCRIBE on each group, else that group is
//     GROUP_AUTHORIZATION_FAILED; authorized operations (READ, DESCRIBE,
//     DELETE) are filled when asked, INT32_MIN otherwise.
//
// Version notes:
//   - v1 member type (KIP-1099): 1 consumer, 0 a classic member of a mixed
//     group.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 69, MinVersion: 0, MaxVersion: 1, Handle: typedReq(consumerGroupDescribe)})
}

func consumerGroupDescribe(c *Call, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	resp := c.G.coordinator().ConsumerDescribe(req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
			refused := kmsg.NewConsumerGroupDescribeResponseGroup()
			refused.Group = g.Group
			refused.ErrorCode = kerr.GroupAuthorizationFailed.Code
			*g = refused
			continue
		}
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeGroup, g.Group, groupOps)
		}
	}
	return resp, nil
}
