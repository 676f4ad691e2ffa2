// DeleteAcls: v1-3
//
// Behavior:
//   - Each filter (Kafka's AclBindingFilter, as DescribeAcls) deletes every
//     binding it matches and lists them in MatchingACLs; a filter matching
//     none answers an empty list and no error. A binding matched by two
//     filters is deleted once and listed under both.
//   - Deletion appends one record per binding to the store's security log
//     and reads it back before answering (see CreateAcls).
//   - Needs ALTER on the CLUSTER; else CLUSTER_AUTHORIZATION_FAILED per
//     filter. Authorization off: SECURITY_DISABLED. A filter with an
//     UNKNOWN field: INVALID_REQUEST. Store failures as CreateAcls.
//
// Version notes:
//   - v0 is not served (Kafka 4, KIP-896); v1 adds pattern types; v2 is
//     flexible; v3 adds the USER resource type.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

func init() {
	register(Spec{Key: 31, MinVersion: 1, MaxVersion: 3, Handle: typed(deleteACLs)})
}

func deleteACLs(c *Call, req *kmsg.DeleteACLsRequest, resp *kmsg.DeleteACLsResponse) (kmsg.Response, error) {
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	code, msg := c.mayAlterACLs()
	var current []bridge.ACLBinding
	if code == 0 {
		current = c.G.Sec.bindings()
	}
	var recs [][]byte
	gone := map[bridge.ACLBinding]bool{}
	for i := range req.Filters {
		r := &resp.Results[i]
		r.Default()
		r.MatchingACLs = []kmsg.DeleteACLsResponseResultMatchingACL{}
		if code != 0 {
			r.ErrorCode, r.ErrorMessage = code, msg
			continue
		}
		rf := &req.Filters[i]
		f := aclFilter{resourceType: rf.ResourceType, name: rf.ResourceName, pattern: rf.ResourcePatternType,
			principal: rf.Principal, host: rf.Host, op: rf.Operation, perm: rf.PermissionType}
		if !f.valid() {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, strp("the filter has an UNKNOWN field")
			continue
		}
		for _, b := range current {
			if !f.matches(&b) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType = kmsg.ACLResourceType(b.ResourceType)
			m.ResourceName = b.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation = kmsg.ACLOperation(b.Operation)
			m.PermissionType = kmsg.ACLPermissionType(b.Permission)
			r.MatchingACLs = append(r.MatchingACLs, m)
			if !gone[b] {
				gone[b] = true
				rec, err := bridge.AppendACLRecord(nil, true, b)
				if err != nil {
					// Every kept binding encodes: it was encoded to be kept.
					return nil, err
				}
				recs = append(recs, rec)
			}
		}
	}
	if len(recs) > 0 {
		if err := c.G.Sec.write(c.Ctx, recs); err != nil {
			ec, em := securityErr(err)
			for i := range resp.Results {
				if resp.Results[i].ErrorCode == 0 && len(resp.Results[i].MatchingACLs) > 0 {
					resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = ec, em
					resp.Results[i].MatchingACLs = []kmsg.DeleteACLsResponseResultMatchingACL{}
				}
			}
		}
	}
	return resp, nil
}
