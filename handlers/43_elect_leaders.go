// ElectLeaders: v0-2
//
// Behavior:
//   - Nothing is ever elected: a partition's leader is computed, not held
//     (this gateway; in cluster mode the rendezvous leader over the live
//     gateways, docs/CLUSTER.md), and it is the partition's one replica,
//     so it is always the preferred replica and always leads. Every named
//     partition answers ELECTION_NOT_NEEDED, as Kafka's controller does
//     for a partition whose preferred replica leads (preferred election)
//     or that has a leader (unclean election), with Kafka's message.
//   - A null partition list (all partitions) answers every topic of the
//     stream, sorted by name, with no partition results: Kafka's
//     controller leaves out the partitions that need no election and
//     still lists each topic. kafka-leader-election
//     --all-topic-partitions then prints nothing and exits 0.
//   - An unknown topic is UNKNOWN_TOPIC_OR_PARTITION "No such topic as
//     T", an unknown partition "No such partition as T-P", as Kafka.
//   - In cluster mode with no live gateway (an empty view) no partition
//     has a leader: PREFERRED_LEADER_NOT_AVAILABLE (preferred) or
//     ELIGIBLE_LEADERS_NOT_AVAILABLE (unclean), as Kafka when an election
//     changes nothing. Any gateway answers for every partition, as any
//     Kafka broker forwards the request to the controller.
//   - Needs ALTER on the cluster; without it, or with an election type
//     other than 0 or 1 (INVALID_REQUEST "Unknown election type N"), the
//     error goes to the top level (v1+) and to every named partition, and
//     a null list gets no results, as Kafka's error response.
//   - A store failure listing or reading topics is the store's error code
//     (at the top level for a null list; a null list at v0, which has no
//     top-level code, closes the connection).
//
// Version notes:
//   - v1 adds the election type (KIP-460) and the top-level error code;
//     v2 is flexible. Kafka 4.1 serves v0-2.

package handlers

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/cluster"
)

func init() {
	register(Spec{Key: 43, MinVersion: 0, MaxVersion: 2, Handle: typed(electLeaders)})
}

// Kafka's messages (Errors.message(), the controller's texts).
const (
	msgClusterAuthorizationFailed = "Cluster authorization failed."
	msgElectionNotNeeded          = "Leader election not needed for topic partition."
)

// Election types (ElectionType): a preferred election makes the preferred
// replica lead; an unclean one elects any live replica of a leaderless
// partition.
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

func electLeaders(c *Call, req *kmsg.ElectLeadersRequest, resp *kmsg.ElectLeadersResponse) (kmsg.Response, error) {
	g := c.G
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode = code // not on the wire at v0
		resp.Topics = make([]kmsg.ElectLeadersResponseTopic, len(req.Topics))
		for i := range req.Topics {
			st := &resp.Topics[i]
			st.Default()
			st.Topic = req.Topics[i].Topic
			for _, p := range req.Topics[i].Partitions {
				st.Partitions = append(st.Partitions, electResult(p, code, msg))
			}
		}
		return resp, nil
	}
	if !c.Authorized(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterResource) {
		return fail(kerr.ClusterAuthorizationFailed.Code, msgClusterAuthorizationFailed)
	}
	if req.ElectionType != electPreferred && req.ElectionType != electUnclean {
		return fail(kerr.InvalidRequest.Code, fmt.Sprintf("Unknown election type %d", req.ElectionType))
	}
	v := g.Cfg.Cluster.View()

	if req.Topics == nil {
		ts, err := g.Store.Topics(c.Ctx, g.Cfg.Stream)
		if err != nil {
			if req.Version < 1 {
				return nil, fmt.Errorf("elect leaders: list topics: %w", err)
			}
			resp.ErrorCode = errCode(err, opAdmin)
			return resp, nil
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
		resp.Topics = make([]kmsg.ElectLeadersResponseTopic, len(ts))
		for i, ti := range ts {
			st := &resp.Topics[i]
			st.Default()
			st.Topic = ti.Name
			st.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			for p := range ti.Partitions {
				if code, msg := c.election(v, req.ElectionType, ti.Name, p); code != kerr.ElectionNotNeeded.Code {
					st.Partitions = append(st.Partitions, electResult(p, code, msg))
				}
			}
		}
		return resp, nil
	}

	seen := make(map[string]topicFound, len(req.Topics))
	resp.Topics = make([]kmsg.ElectLeadersResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ElectLeadersResponseTopicPartition, 0, len(rt.Partitions))
		if len(rt.Partitions) == 0 {
			continue
		}
		f := c.topicOnce(seen, rt.Topic)
		for _, p := range rt.Partitions {
			var code int16
			var msg string
			switch {
			case f.code == kerr.UnknownTopicOrPartition.Code:
				code, msg = f.code, "No such topic as "+rt.Topic
			case f.code != 0:
				code = f.code
			case p < 0 || p >= f.partitions:
				code, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("No such partition as %s-%d", rt.Topic, p)
			default:
				code, msg = c.election(v, req.ElectionType, rt.Topic, p)
			}
			st.Partitions = append(st.Partitions, electResult(p, code, msg))
		}
	}
	return resp, nil
}

// election is the outcome of electing a leader of one existing partition:
// none is needed while it has its computed leader, its only replica.
func (c *Call) election(v *cluster.View, typ int8, topic string, partition int32) (int16, string) {
	switch {
	case c.partitionLeader(v, topic, partition) >= 0:
		return kerr.ElectionNotNeeded.Code, msgElectionNotNeeded
	case typ == electPreferred:
		return kerr.PreferredLeaderNotAvailable.Code, "The preferred leader was not available."
	default:
		return kerr.EligibleLeadersNotAvailable.Code, "Eligible topic partition leaders are not available."
	}
}

// electResult is one partition's result; msg "" is a null message.
func electResult(partition int32, code int16, msg string) kmsg.ElectLeadersResponseTopicPartition {
	r := kmsg.NewElectLeadersResponseTopicPartition()
	r.Partition, r.ErrorCode = partition, code
	if msg != "" {
		r.ErrorMessage = strp(msg)
	}
	return r
}
