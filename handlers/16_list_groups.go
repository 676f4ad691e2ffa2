// ListGroups: v0-5
//
// Behavior:
//   - Lists the groups in the coordinator's memory (live ones, and Empty ones
//     whose members left or that committed through this gateway) and every
//     group the store lists as holding committed offsets (OffsetGroups),
//     Empty with protocol type "consumer". The Iggy store lists the groups
//     of its group log; a group known only from native Iggy offsets is not
//     listed (it is still described and its offsets fetched by name).
//   - v4 state filter (case-insensitive, as Kafka); v5 type filter and
//     GroupType: "consumer" for KIP-848 groups (with their states Empty,
//     Assigning, Reconciling, Stable), "classic" for the rest.
//   - Share groups (package share) are listed with protocol type and
//     GroupType "share", state Empty or Stable.
//   - A store failure is COORDINATOR_NOT_AVAILABLE with no groups.
//
// Version notes:
//   - v3 flexible; v4 states (KIP-518); v5 types (KIP-848).

package handlers

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 16, MinVersion: 0, MaxVersion: 5, Handle: typedReq(listGroups)})
}

func listGroups(c *Call, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	resp := c.G.coordinator().List(c.Ctx, req)
	if c.G.Share != nil && resp.ErrorCode == 0 {
		listShareGroups(c, req, resp)
	}
	// DESCRIBE on the cluster lists every group; otherwise only the
	// groups the principal may describe, as Kafka does.
	if c.authzOn() && !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, ClusterResource) {
		out := resp.Groups[:0]
		for _, g := range resp.Groups {
			if c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
				out = append(out, g)
			}
		}
		resp.Groups = out
	}
	return resp, nil
}

// listShareGroups adds the share groups that pass req's filters to resp,
// keeping it sorted by group id.
func listShareGroups(c *Call, req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse) {
	match := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	added := false
	for _, g := range c.G.Share.List(c.Ctx) {
		if !match(req.StatesFilter, g.State) || !match(req.TypesFilter, "share") {
			continue
		}
		if slices.ContainsFunc(resp.Groups, func(x kmsg.ListGroupsResponseGroup) bool { return x.Group == g.ID }) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.ID, "share", g.State, "share"
		resp.Groups = append(resp.Groups, rg)
		added = true
	}
	if added {
		slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	}
}
