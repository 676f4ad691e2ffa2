// CreateAcls: v1-3
//
// Behavior:
//   - Each creation is checked as Kafka's authorizer checks it (resource
//     type TOPIC, GROUP, CLUSTER (named kafka-cluster) or
//     TRANSACTIONAL_ID; pattern LITERAL or PREFIXED, PREFIXED not "*"; a
//     principal Type:name; a host, "*" for any; a concrete operation or
//     ALL; ALLOW or DENY); a bad one is INVALID_REQUEST with a message,
//     the others are still made.
//   - Each valid binding is one record appended to the store's security
//     log (embedded: synced to disk; Iggy: the state stream, topic
//     "security"), then the log is read back, so the answer comes after
//     the binding is in force on this gateway (and within about a second
//     on every gateway sharing the Iggy server). Creating a binding that
//     exists already succeeds and changes nothing.
//   - Needs ALTER on the CLUSTER; else every result is
//     CLUSTER_AUTHORIZATION_FAILED.
//   - With authorization off: SECURITY_DISABLED for each.
//   - A store failure is REQUEST_TIMED_OUT (store unavailable) or
//     UNKNOWN_SERVER_ERROR with the cause; a store that keeps no security
//     log answers SECURITY_DISABLED.
//
// Version notes:
//   - v0 is not served (Kafka 4, KIP-896); v1 adds pattern types; v2 is
//     flexible; v3 adds the USER resource type (not kept here).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 30, MinVersion: 1, MaxVersion: 3, Handle: typed(createACLs)})
}

func createACLs(c *Call, req *kmsg.CreateACLsRequest, resp *kmsg.CreateACLsResponse) (kmsg.Response, error) {
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	code, msg := c.mayAlterACLs()
	var recs [][]byte
	var made []int
	for i := range req.Creations {
		r := &resp.Results[i]
		r.Default()
		if code != 0 {
			r.ErrorCode, r.ErrorMessage = code, msg
			continue
		}
		cr := &req.Creations[i]
		b := bridge.ACLBinding{
			ResourceType: int8(cr.ResourceType), PatternType: int8(cr.ResourcePatternType),
			ResourceName: cr.ResourceName, Principal: cr.Principal, Host: cr.Host,
			Operation: int8(cr.Operation), Permission: int8(cr.PermissionType),
		}
		if err := validBinding(&b); err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, strp(err.Error())
			continue
		}
		rec, err := bridge.AppendACLRecord(nil, false, b)
		if err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, strp(err.Error())
			continue
		}
		recs = append(recs, rec)
		made = append(made, i)
	}
	if len(recs) > 0 {
		if err := c.G.Sec.write(c.Ctx, recs); err != nil {
			ec, em := securityErr(err)
			for _, i := range made {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = ec, em
			}
		}
	}
	return resp, nil
}
