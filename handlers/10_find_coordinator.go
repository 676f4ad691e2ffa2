// FindCoordinator: v0-6
//
// Behavior:
//   - Every group has this gateway as its coordinator: the answer is the node
//     id and advertised host/port Metadata reports. Answered inline (no store
//     call). In cluster mode (docs/CLUSTER.md) the coordinator is the
//     group's rendezvous gateway in the current view, at its address on the
//     caller's listener (COORDINATOR_NOT_AVAILABLE if it has none).
//   - Key type 1 (transaction), with --transactions enabled: this gateway
//     coordinates every transactional id (transactions are served by one
//     gateway; see docs/TRANSACTIONS.md), after DESCRIBE on the id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an empty id or one over
//     txn.MaxIDLen bytes is INVALID_REQUEST. Without it key type 1 is
//     refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which the Java
//     client and librdkafka treat as fatal, so no transactional producer
//     gets past initialisation. Key type 2 (share, "group:topicId:partition")
//     is this gateway while share groups are served, INVALID_REQUEST for a
//     malformed key; without share groups, and for unknown types,
//     INVALID_REQUEST.
//   - A group id over 246 bytes is INVALID_GROUP_ID (it must fit an Iggy
//     consumer name, docs/CONSUMER_GROUPS.md).
//
// Version notes:
//   - v1 adds the key type and error message; v3 is flexible; v4 batches
//     keys (KIP-699), each answered on its own; v5 adds
//     TRANSACTION_ABORTABLE (never sent); v6 the share key type (KIP-932,
//     refused).

package handlers

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/group"
	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 10, MinVersion: 0, MaxVersion: 6, Inline: true, Handle: typed(findCoordinator)})
}

// Coordinator key types.
const (
	coordinatorGroup = 0
	coordinatorTxn   = 1
	coordinatorShare = 2
)

// validShareKey reports whether key is a share coordinator key,
// "group:topicId:partition" (Kafka's SharePartitionKey).
func validShareKey(key string) bool {
	i := strings.LastIndexByte(key, ':')
	if i <= 0 {
		return false
	}
	if _, err := strconv.ParseInt(key[i+1:], 10, 32); err != nil {
		return false
	}
	j := strings.LastIndexByte(key[:i], ':')
	return j > 0 && j < i-1
}

func findCoordinator(c *Call, req *kmsg.FindCoordinatorRequest, resp *kmsg.FindCoordinatorResponse) (kmsg.Response, error) {
	cfg := &c.G.Cfg
	answer := func(key string) (code int16, node int32, host string, port int32) {
		switch {
		case req.CoordinatorType == coordinatorTxn && c.G.Txn == nil:
			code = kerr.TransactionalIDAuthorizationFailed.Code
		case req.CoordinatorType == coordinatorTxn:
			switch {
			case key == "" || len(key) > txn.MaxIDLen:
				code = kerr.InvalidRequest.Code
			case !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key):
				code = kerr.TransactionalIDAuthorizationFailed.Code
			default:
				// Placed as a group of the same name is.
				return c.placedCoordinator(key)
			}
		case req.CoordinatorType == coordinatorShare && c.G.Share != nil:
			// "group:topicId:partition" names a share partition's
			// state; every gateway reads every one (in cluster mode
			// from the shared store).
			if !validShareKey(key) {
				code = kerr.InvalidRequest.Code
				break
			}
			host, port := c.advertised()
			return 0, cfg.NodeID, host, port
		case req.CoordinatorType != coordinatorGroup:
			code = kerr.InvalidRequest.Code
		case len(key) > group.MaxGroupIDLen:
			code = kerr.InvalidGroupID.Code
		case !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, key):
			code = kerr.GroupAuthorizationFailed.Code
		default:
			return c.placedCoordinator(key)
		}
		return code, -1, "", -1
	}
	if req.Version < 4 {
		code, node, host, port := answer(req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, node, host, port
		if code != 0 && req.Version >= 1 {
			resp.ErrorMessage = strp(kerr.ErrorForCode(code).Error())
		}
		return resp, nil
	}
	resp.Coordinators = make([]kmsg.FindCoordinatorResponseCoordinator, len(req.CoordinatorKeys))
	for i, key := range req.CoordinatorKeys {
		rc := &resp.Coordinators[i]
		rc.Default()
		rc.Key = key
		rc.ErrorCode, rc.NodeID, rc.Host, rc.Port = answer(key)
		if rc.ErrorCode != 0 {
			rc.ErrorMessage = strp(kerr.ErrorForCode(rc.ErrorCode).Error())
		}
	}
	return resp, nil
}

// placedCoordinator is the coordinator of a group or transactional id
// named key: this gateway, or in cluster mode the live gateway the
// rendezvous placement names (COORDINATOR_NOT_AVAILABLE when it has no
// address on the call's listener).
func (c *Call) placedCoordinator(key string) (code int16, node int32, host string, port int32) {
	n := c.G.Cfg.Cluster
	if n == nil {
		host, port := c.advertised()
		return 0, c.G.Cfg.NodeID, host, port
	}
	v := n.View()
	id := v.Coordinator(key)
	if host, port, ok := c.endpointOf(v, id); ok {
		return 0, id, host, port
	}
	return kerr.CoordinatorNotAvailable.Code, -1, "", -1
}
