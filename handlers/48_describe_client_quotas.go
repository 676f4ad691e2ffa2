// DescribeClientQuotas: v0-1
//
// Behavior:
//   - The gateway enforces no client quotas, so every filter matches
//     nothing: an empty entry list, no error. (Kafka answers the same for a
//     cluster with no quotas configured.) AlterClientQuotas (49) is not
//     served.
//
// Version notes:
//   - v1 is flexible. Kafka 4.1 serves v0-1.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 48, MinVersion: 0, MaxVersion: 1, Inline: true, Handle: typed(describeClientQuotas)})
}

// describeClientQuotas touches no store: safe on the event loop.
func describeClientQuotas(c *Call, req *kmsg.DescribeClientQuotasRequest, resp *kmsg.DescribeClientQuotasResponse) (kmsg.Response, error) {
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	if !c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	}
	return resp, nil
}
