package handlers

// What DescribeAcls (29), CreateAcls (30) and DeleteAcls (31) share: a
// binding's validation and Kafka's AclBindingFilter matching.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
)

// aclFilter is Kafka's AclBindingFilter: nil strings and the ANY enums
// match everything.
type aclFilter struct {
	resourceType kmsg.ACLResourceType
	name         *string
	pattern      kmsg.ACLResourcePatternType
	principal    *string
	host         *string
	op           kmsg.ACLOperation
	perm         kmsg.ACLPermissionType
}

// mayAlterACLs is the refusal every entry of CreateAcls and DeleteAcls
// gets, or 0: SECURITY_DISABLED without an authorizer, else ALTER on the
// cluster. Any goroutine.
func (c *Call) mayAlterACLs() (int16, *string) {
	switch {
	case !c.authzOn():
		return kerr.SecurityDisabled.Code, strp("no authorizer is configured on this gateway (--authorizer)")
	case !c.Authorized(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResource):
		return kerr.ClusterAuthorizationFailed.Code, nil
	}
	return 0, nil
}

// valid reports whether f can match anything Kafka would keep; Kafka
// answers INVALID_REQUEST for UNKNOWN in any field.
func (f *aclFilter) valid() bool {
	return f.resourceType != kmsg.ACLResourceTypeUnknown &&
		f.pattern != kmsg.ACLResourcePatternTypeUnknown &&
		f.op != kmsg.ACLOperationUnknown &&
		f.perm != kmsg.ACLPermissionTypeUnknown
}

// matches is Kafka's AclBindingFilter.matches: ResourcePatternFilter
// (ANY: any pattern type with this exact name; MATCH: every binding that
// applies to the name, LITERAL "*" and PREFIXED prefixes included;
// LITERAL/PREFIXED: that type and name) and AccessControlEntryFilter.
func (f *aclFilter) matches(b *bridge.ACLBinding) bool {
	if f.resourceType != kmsg.ACLResourceTypeAny && int8(f.resourceType) != b.ResourceType {
		return false
	}
	if f.pattern != kmsg.ACLResourcePatternTypeAny && f.pattern != kmsg.ACLResourcePatternTypeMatch &&
		int8(f.pattern) != b.PatternType {
		return false
	}
	if f.name != nil {
		if f.pattern == kmsg.ACLResourcePatternTypeMatch {
			if !patternMatches(b, *f.name) {
				return false
			}
		} else if *f.name != b.ResourceName {
			return false
		}
	}
	if f.principal != nil && *f.principal != b.Principal {
		return false
	}
	if f.host != nil && *f.host != b.Host {
		return false
	}
	if f.op != kmsg.ACLOperationAny && int8(f.op) != b.Operation {
		return false
	}
	return f.perm == kmsg.ACLPermissionTypeAny || int8(f.perm) == b.Permission
}

// maxACLOperation is TWO_PHASE_COMMIT (KIP-939), the highest operation
// Kafka 4.1 knows.
const maxACLOperation = 15

// validBinding checks a binding to be created as Kafka's authorizer does;
// the error is the INVALID_REQUEST message.
func validBinding(b *bridge.ACLBinding) error {
	switch kmsg.ACLResourceType(b.ResourceType) {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId,
		kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	case kmsg.ACLResourceTypeCluster:
		if b.ResourceName != ClusterResource {
			return fmt.Errorf("the only valid name for the CLUSTER resource is %s", ClusterResource)
		}
	default:
		return errors.New("resource type must be TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN or USER")
	}
	switch kmsg.ACLResourcePatternType(b.PatternType) {
	case kmsg.ACLResourcePatternTypeLiteral:
	case kmsg.ACLResourcePatternTypePrefixed:
		if b.ResourceName == "*" {
			return errors.New("a PREFIXED pattern cannot be '*' (use LITERAL '*')")
		}
	default:
		return errors.New("pattern type must be LITERAL or PREFIXED")
	}
	if b.ResourceName == "" {
		return errors.New("resource name must not be empty")
	}
	kind, name, ok := strings.Cut(b.Principal, ":")
	if !ok || kind == "" || name == "" {
		return fmt.Errorf("principal %q is not of the form Type:name (e.g. User:alice)", b.Principal)
	}
	if b.Host == "" {
		return errors.New("host must not be empty (\"*\" is every host)")
	}
	for _, s := range []string{b.ResourceName, b.Principal, b.Host} {
		if len(s) > bridge.MaxSecurityString {
			return fmt.Errorf("a name, principal or host is over %d bytes", bridge.MaxSecurityString)
		}
	}
	switch kmsg.ACLOperation(b.Operation) {
	case kmsg.ACLOperationUnknown, kmsg.ACLOperationAny:
		return errors.New("operation must be a concrete operation or ALL")
	}
	if b.Operation < 0 || b.Operation > maxACLOperation {
		return errors.New("unknown operation")
	}
	switch kmsg.ACLPermissionType(b.Permission) {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return errors.New("permission must be ALLOW or DENY")
	}
	return nil
}

// securityErr maps a failure to keep or read the security log to a Kafka
// code and message.
func securityErr(err error) (int16, *string) {
	switch {
	case errors.Is(err, errNoSecurityLog):
		return kerr.SecurityDisabled.Code, strp("this gateway's store keeps no ACLs or credentials")
	case errors.Is(err, bridge.ErrUnavailable), errors.Is(err, bridge.ErrClosed):
		return kerr.RequestTimedOut.Code, strp(err.Error())
	}
	return kerr.UnknownServerError.Code, strp(err.Error())
}
