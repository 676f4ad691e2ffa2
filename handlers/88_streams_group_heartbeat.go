// StreamsGroupHeartbeat: v0-1
//
// Behavior:
//   - Streams groups (KIP-1071, Kafka Streams with group.protocol=streams;
//     package group, streams*.go, docs/CONSUMER_GROUPS.md): epoch 0 joins
//     with the client's member id and the app's topology, -1 leaves, -2 is
//     a static member leaving for now. Any other epoch must be the member's
//     (or the one before it with a subset of its active tasks), else
//     FENCED_MEMBER_EPOCH; an unknown member is UNKNOWN_MEMBER_ID.
//   - The first member's topology is the group's; another topology or
//     topology epoch joining a live group is INVALID_REQUEST "Topology
//     updates are not supported yet." (an empty group takes the new one),
//     a source regex INVALID_REQUEST, a changelog with a partition count
//     STREAMS_INVALID_TOPOLOGY, all with Kafka 4.4's messages. It is
//     configured against the stream's topics on every heartbeat: missing
//     source topics are MISSING_SOURCE_TOPICS, internal (repartition and
//     changelog) topics are sized from their subtopologies and created
//     here with the configs the topology gives (MISSING_INTERNAL_TOPICS
//     until they exist; CREATE on the topic or cluster is needed, else the
//     status says so), wrong partition counts INCORRECTLY_PARTITIONED_TOPICS.
//   - Tasks: a new group's first assignment waits
//     streams.initial.rebalance.delay.ms (ASSIGNMENT_DELAYED); a sticky
//     assignor balances active tasks over processes and their members;
//     streams.num.standby.replicas standby tasks per stateful task on other
//     processes; no warm-up tasks. An active task reaches its new owner
//     only after the old owner's heartbeat no longer lists it.
//   - streams.session.timeout.ms and streams.heartbeat.interval.ms act;
//     ShutdownApplication tells every member SHUTDOWN_APPLICATION until the
//     group is empty. TopologyDescriptionRequired is never set (as Kafka 4.4
//     without a topology description plugin).
//   - Groups are kept in the store after every change and loaded at start,
//     so an app goes on through a gateway restart (group/streams_state.go).
//   - Differences from Kafka: in cluster mode memberships are soft state (a
//     member of a group its new coordinator does not know is
//     UNKNOWN_MEMBER_ID, its leave too, and it rejoins); no warm-up tasks;
//     rack ids and client tags are kept, not used.
//   - ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on the
//     source topics (TOPIC_AUTHORIZATION_FAILED naming them).
//   - A classic, consumer or share group's id is GROUP_ID_NOT_FOUND
//     ("Group G is not a streams group.").
//   - Served unless --streams-groups disabled.
//
// Version notes:
//   - v1 (Kafka 4.4): TopologyDescriptionRequired, AcceptableRecoveryLag
//     as int64.

package handlers

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 88, MinVersion: 0, MaxVersion: 1, Gated: streamsServed, Handle: typedReq(streamsGroupHeartbeat)})
}

// streamsServed: streams groups are on. Any goroutine.
func streamsServed(cfg *Config) bool { return !cfg.StreamsGroupsDisabled }

func streamsGroupHeartbeat(c *Call, req *kmsg.StreamsGroupHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	if !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if req.Topology != nil {
		var denied []string
		for i := range req.Topology.Subtopologies {
			for _, t := range req.Topology.Subtopologies[i].SourceTopics {
				if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t) && !contains(denied, t) {
					denied = append(denied, t)
				}
			}
		}
		if len(denied) > 0 {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("The client is not authorized to access topics: [%s]", strings.Join(denied, ", ")))
			return resp, nil
		}
	}
	if sh := c.G.Share; sh != nil && sh.Exists(req.Group) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr("Group " + req.Group + " is not a streams group.")
		return resp, nil
	}
	out, create := c.G.coordinator().StreamsHeartbeat(c.Ctx, req, string(c.Header.ClientID), c.ClientHost)
	if len(create) > 0 && out.ErrorCode == 0 {
		c.createStreamsTopics(out, create)
	}
	return out, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
