// DescribeCluster: v0-2
//
// Behavior:
//   - The brokers Metadata lists (Call.brokers): this gateway at the
//     address of the caller's listener, or in cluster mode (docs/CLUSTER.md)
//     every live gateway with that listener; no rack. None is ever fenced:
//     a gateway whose session lapsed is no longer in the view, so
//     IncludeFencedBrokers (v2) changes nothing and IsFenced is false.
//   - Controller: Metadata's (the node id, or the lowest live id in cluster
//     mode), -1 when that broker is not among the ones listed (a gateway
//     without the caller's listener), as Kafka answers. Cluster id
//     Cfg.ClusterID.
//   - EndpointType (v1+) 1 (brokers) is answered; 2 (controllers) is
//     MISMATCHED_ENDPOINT_TYPE and any other value UNSUPPORTED_ENDPOINT_TYPE,
//     both INVALID_REQUEST at v0, with Kafka's messages and no brokers,
//     cluster id "" and controller -1: what a Kafka broker answers, since
//     only its controllers serve type 2.
//   - Cluster authorized operations (KIP-430) when asked: the operations
//     the principal may do on the cluster (all of them with authorization
//     off, as Kafka without an authorizer), 0 without DESCRIBE on it;
//     otherwise INT32_MIN.
//   - Never looks at the store; runs on a worker all the same, because
//     the CREATE check of an Iggy user's permissions may wait for Iggy.
//
// Version notes:
//   - v0 KIP-700 (the Java admin client's describeCluster, falling back to
//     Metadata before it); v1 EndpointType (KIP-919); v2
//     IncludeFencedBrokers and IsFenced (KIP-1073).

package handlers

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 60, MinVersion: 0, MaxVersion: 2, Handle: typed(describeCluster)})
}

// Endpoint types of DescribeCluster (Kafka's EndpointType ids).
const (
	endpointBrokers     = 1
	endpointControllers = 2
)

// describeCluster answers on a fresh response (kmsg's defaults: endpoint
// type 1, controller -1, authorized operations INT32_MIN).
func describeCluster(c *Call, req *kmsg.DescribeClusterRequest, resp *kmsg.DescribeClusterResponse) (kmsg.Response, error) {
	if req.EndpointType != endpointBrokers {
		code := kerr.UnsupportedEndpointType.Code
		msg := "Unsupported endpoint type " + strconv.Itoa(int(req.EndpointType))
		if req.EndpointType == endpointControllers {
			code = kerr.MismatchedEndpointType.Code
			msg = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		}
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp, nil
	}

	controller := c.brokers(c.G.Cfg.Cluster.View(), func(id int32, host string, port int32) {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = id, host, port
		resp.Brokers = append(resp.Brokers, b)
	})
	for i := range resp.Brokers {
		if resp.Brokers[i].NodeID == controller {
			resp.ControllerID = controller
		}
	}
	resp.ClusterID = c.G.Cfg.ClusterID
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResource) {
			resp.ClusterAuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeCluster, ClusterResource, clusterOps)
		}
	}
	return resp, nil
}
