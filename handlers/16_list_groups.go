// ListGroups: v0-5
//
// Behavior:
//   - Lists the groups in the coordinator's memory (live ones, and Empty ones
//     whose members left or that committed through this gateway) and every
//     group the store lists as holding committed offsets (OffsetGroups),
//     Empty with protocol type "consumer". The Iggy store lists the groups
//     of its group log; a group known only from native Iggy offsets is not
//     listed (it is still described and its offsets fetched by name).
//   - v4 state filter (case-insensitive, as Kafka); v5 type filter: every
//     group is "classic", so a filter without "classic" lists nothing.
//   - A store failure is COORDINATOR_NOT_AVAILABLE with no groups.
//
// Version notes:
//   - v3 flexible; v4 states (KIP-518); v5 types (KIP-848).

package handlers

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 16, MinVersion: 0, MaxVersion: 5, Handle: listGroups})
}

func listGroups(c *Call, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, "classic") }) {
		return resp, nil
	}
	want := func(state string) bool {
		return len(req.StatesFilter) == 0 || slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, state) })
	}
	seen := map[string]bool{}
	add := func(name, state, ptype string) {
		seen[name] = true
		if !want(state) {
			return
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = name, ptype, state, "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	for _, g := range c.G.coordinator().Names() {
		add(g.name, g.state.String(), g.protocolType)
	}
	if st := c.G.groupOffsets(); st != nil {
		names, ok, err := st.OffsetGroups(c.Ctx, c.G.Cfg.Stream)
		if err != nil {
			resp.Groups = nil
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		if ok {
			for _, n := range names {
				if !seen[n] {
					add(n, stateEmpty.String(), "consumer")
				}
			}
		}
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp, nil
}
