// DescribeAcls: v1-3
//
// Behavior:
//   - Lists the ACL bindings matching the filter (Kafka's AclBindingFilter:
//     null name/principal/host and ANY type/pattern/operation/permission
//     match all; pattern MATCH finds every binding that applies to the
//     name, LITERAL "*" and PREFIXED prefixes included), grouped by
//     resource (type, name, pattern type) in the order they were created.
//   - Needs DESCRIBE on the CLUSTER; else CLUSTER_AUTHORIZATION_FAILED.
//   - With authorization off (no --authorizer) SECURITY_DISABLED, as a
//     Kafka broker without an authorizer answers.
//   - A filter with an UNKNOWN field is INVALID_REQUEST.
//   - Served from memory (the snapshot of the store's security log,
//     docs/SECURITY.md).
//
// Version notes:
//   - v0 (no pattern type) is not served: Kafka 4 removed it (KIP-896);
//     v1 adds pattern types (KIP-290); v2 is flexible; v3 adds the USER
//     resource type (KIP-554), which this gateway does not keep.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 29, MinVersion: 1, MaxVersion: 3, Handle: typed(describeACLs)})
}

func describeACLs(c *Call, req *kmsg.DescribeACLsRequest, resp *kmsg.DescribeACLsResponse) (kmsg.Response, error) {
	resp.Resources = []kmsg.DescribeACLsResponseResource{}
	switch {
	case !c.authzOn():
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = strp("no authorizer is configured on this gateway (--authorizer)")
		return resp, nil
	case !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResource):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	f := aclFilter{resourceType: req.ResourceType, name: req.ResourceName, pattern: req.ResourcePatternType,
		principal: req.Principal, host: req.Host, op: req.Operation, perm: req.PermissionType}
	if !f.valid() {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = strp("the filter has an UNKNOWN field")
		return resp, nil
	}
	type resKey struct {
		rt, pt int8
		name   string
	}
	index := map[resKey]int{}
	for _, b := range c.G.Sec.bindings() {
		if !f.matches(&b) {
			continue
		}
		k := resKey{b.ResourceType, b.PatternType, b.ResourceName}
		i, ok := index[k]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType = kmsg.ACLResourceType(b.ResourceType)
			r.ResourceName = b.ResourceName
			r.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			i = len(resp.Resources)
			index[k] = i
			resp.Resources = append(resp.Resources, r)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = b.Principal, b.Host
		a.Operation = kmsg.ACLOperation(b.Operation)
		a.PermissionType = kmsg.ACLPermissionType(b.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp, nil
}
