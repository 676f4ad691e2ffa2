// DescribeClientQuotas: v0-1
//
// Behavior:
//   - Answers the quotas set through AlterClientQuotas (49), kept in the
//     store's security log (quotas.go), with Kafka 4.4's matching: each
//     filter component names an entity type (user, client-id, ip) and
//     matches an exact name (EXACT), the <default> entity (DEFAULT, a
//     null name in the answer) or any entity with a component of that
//     type (SPECIFIED); strict keeps only entities with no other
//     component; no components and not strict lists every entity.
//   - Refused as Kafka refuses them, with its messages: an empty entity
//     type, a type given twice, a match string where the match type takes
//     none (or none for EXACT), an unknown match type and ip combined
//     with user or client-id are INVALID_REQUEST; a type other than the
//     three is UNSUPPORTED_VERSION. Entries are then null.
//   - Needs DESCRIBE_CONFIGS on the CLUSTER when authorization is on;
//     else CLUSTER_AUTHORIZATION_FAILED.
//   - Entries are sorted (user, client-id, ip; Kafka's order is its hash
//     map's), each entity's keys by name.
//
// Version notes:
//   - v1 is flexible (KIP-546 added the key and its versions together).

package handlers

import (
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 48, MinVersion: 0, MaxVersion: 1, Inline: true, Handle: typed(describeClientQuotas)})
}

// describeClientQuotas reads the in-memory snapshot only: safe on the
// event loop.
func describeClientQuotas(c *Call, req *kmsg.DescribeClientQuotasRequest, resp *kmsg.DescribeClientQuotasResponse) (kmsg.Response, error) {
	if !c.Authorized(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeCluster, ClusterResource) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, strp("Cluster authorization failed.")
		return resp, nil
	}
	exact, specified, code, msg := quotaFilter(req.Components)
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, strp(msg)
		return resp, nil
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	var found []quotaEntity
	q, _ := c.G.Sec.quotas()
	for e := range q {
		if quotaMatches(e, exact, specified, req.Strict) {
			found = append(found, e)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].String() < found[j].String() })
	for _, e := range found {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.parts() {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type = p.typ
			if !p.n.def {
				ent.Name = strp(p.n.name)
			}
			entry.Entity = append(entry.Entity, ent)
		}
		keys := make([]string, 0, len(q[e]))
		for k := range q[e] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q[e][k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}

// quotaFilter reads the filter components as Kafka's ClientQuotasImage
// does: exact holds the EXACT and DEFAULT components by type, any the
// SPECIFIED ones; a refusal is its code and message.
func quotaFilter(comps []kmsg.DescribeClientQuotasRequestComponent) (exact map[string]quotaName, specified map[string]bool, code int16, msg string) {
	exact, specified = map[string]quotaName{}, map[string]bool{}
	for _, comp := range comps {
		t := comp.EntityType
		_, inExact := exact[t]
		switch {
		case t == "":
			return nil, nil, kerr.InvalidRequest.Code, "Invalid empty entity type."
		case inExact || specified[t]:
			return nil, nil, kerr.InvalidRequest.Code, "Entity type " + t + " cannot appear more than once in the filter."
		case t != quotaTypeUser && t != quotaTypeClient && t != quotaTypeIP:
			return nil, nil, kerr.UnsupportedVersion.Code, "Unsupported entity type " + t
		}
		switch comp.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if comp.Match == nil {
				return nil, nil, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
			exact[t] = quotaNamed(*comp.Match)
		case kmsg.QuotasMatchTypeDefault:
			if comp.Match != nil {
				return nil, nil, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
			exact[t] = quotaDefault
		case kmsg.QuotasMatchTypeAny:
			if comp.Match != nil {
				return nil, nil, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
			specified[t] = true
		default:
			return nil, nil, kerr.InvalidRequest.Code, "Unknown match type " + strconv.Itoa(int(comp.MatchType))
		}
	}
	_, ipExact := exact[quotaTypeIP]
	if ipExact || specified[quotaTypeIP] {
		_, u := exact[quotaTypeUser]
		_, cl := exact[quotaTypeClient]
		if u || cl || specified[quotaTypeUser] || specified[quotaTypeClient] {
			return nil, nil, kerr.InvalidRequest.Code, "Invalid entity filter component combination. " +
				"IP filter component should not be used with user or clientId filter component."
		}
	}
	return exact, specified, 0, ""
}

// quotaMatches is Kafka's match of entity e against a filter: every exact
// component equal, every SPECIFIED type present, and with strict nothing
// else. No components match everything unless strict.
func quotaMatches(e quotaEntity, exact map[string]quotaName, specified map[string]bool, strict bool) bool {
	if len(exact) == 0 && len(specified) == 0 {
		return !strict
	}
	for t, want := range exact {
		if *e.component(t) != want {
			return false
		}
	}
	for t := range specified {
		if !e.component(t).set {
			return false
		}
	}
	return !strict || e.size() == len(exact)+len(specified)
}
