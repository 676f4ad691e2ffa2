package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzConsumerHeartbeat feeds arbitrary ConsumerGroupHeartbeat bodies
// (v0/v1, as the handler would decode them) through the coordinator, a few
// per input so one member's state meets the next request: no panic, an
// encodable response, and the partition owners stay consistent (nobody
// holds a partition cg.owner gives to another).
func FuzzConsumerHeartbeat(f *testing.F) {
	for _, r := range fuzzSeeds() {
		f.Add(int8(r.Version), r.AppendTo(nil))
	}
	c := newCoord848(f)
	c.topic(f, "orders", 6)
	c.topic(f, "logs-a", 2)
	f.Fuzz(func(t *testing.T, ver int8, body []byte) {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = int16(ver & 1)
		if req.ReadFrom(body) != nil {
			return
		}
		for range 3 {
			resp := c.ConsumerHeartbeat(context.Background(), req, "fuzz", "/127.0.0.1")
			_ = resp.AppendTo(nil)
			if resp.ErrorCode == 0 && resp.MemberEpoch > 0 {
				req.MemberEpoch = resp.MemberEpoch
				req.Topics = req.Topics[:0]
				if a := resp.Assignment; a != nil {
					for _, at := range a.Topics {
						req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: at.TopicID, Partitions: at.Partitions})
					}
				}
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, g := range c.groups {
			if g.consumer == nil {
				continue
			}
			for id, m := range g.consumer.members {
				for p := range m.assigned {
					if g.consumer.owner[p] != id {
						t.Fatalf("member %s holds a partition owned by %q", id, g.consumer.owner[p])
					}
				}
			}
		}
	})
}

func fuzzSeeds() []*kmsg.ConsumerGroupHeartbeatRequest {
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Version, join.Group, join.MemberID, join.RebalanceTimeoutMillis = 1, "g", "m1", 1000
	join.SubscribedTopicNames = []string{"orders"}
	join.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	static := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	*static = *join
	static.MemberID, static.InstanceID = "m2", kmsg.StringPtr("i")
	static.ServerAssignor = kmsg.StringPtr("range")
	rx := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	*rx = *join
	rx.MemberID, rx.SubscribedTopicNames, rx.SubscribedTopicRegex = "m3", nil, kmsg.StringPtr("logs-.*")
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", "m1", -1
	v0 := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	*v0 = *join
	v0.Version, v0.MemberID = 0, ""
	return []*kmsg.ConsumerGroupHeartbeatRequest{join, static, rx, leave, v0}
}

// FuzzMixedGroup runs a classic member with an arbitrary subscription and
// assignment blob through an online upgrade (a consumer-protocol join),
// its classic calls in the mixed group, and the downgrade: no panic,
// encodable answers, consistent partition owners.
func FuzzMixedGroup(f *testing.F) {
	f.Add(subscription(nil, "orders"), assignmentBlob("orders", 0, 1, 2))
	f.Add(subscription(map[string][]int32{"orders": {1, 5, -1}}, "orders", "logs-a"), assignmentBlob("orders", 7, 0, 0))
	f.Add([]byte{0, 9}, []byte{})
	f.Fuzz(func(t *testing.T, sub, asg []byte) {
		c := newCoord848(t)
		c.topic(t, "orders", 6)
		jr := classicJoin(t, c, "", sub)
		if jr.ErrorCode != 0 {
			return
		}
		_ = jr.AppendTo(nil)
		cid, gen := jr.MemberID, jr.Generation
		_ = classicSync(t, c, cid, gen, map[string][]byte{cid: asg}).AppendTo(nil)
		n := c.member(t, "g", "n", "orders")
		n.beat()
		for range 2 {
			classicBeat(c, cid, gen)
			if r := classicJoin(t, c, cid, sub); r.ErrorCode == 0 {
				gen = r.Generation
				_ = r.AppendTo(nil)
			}
			_ = classicSync(t, c, cid, gen, nil).AppendTo(nil)
			n.beat()
		}
		leave := n.request()
		leave.MemberEpoch = epochLeave
		n.send(leave)
		classicBeat(c, cid, gen)
		c.mu.Lock()
		defer c.mu.Unlock()
		if cg := c.groups["g"].consumer; cg != nil {
			for id, m := range cg.members {
				for p := range m.assigned {
					if cg.owner[p] != id {
						t.Fatalf("member %s holds a partition owned by %q", id, cg.owner[p])
					}
				}
			}
		}
	})
}
