package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzStreamsHeartbeat feeds arbitrary StreamsGroupHeartbeat bodies (v0/v1,
// as the handler would decode them) through the coordinator beside a
// well-behaved member, a few per input so state meets the next request: no
// panic, an encodable response, topologies within bounds, and the task
// owners stay consistent (no member holds an active task sg.owner gives to
// another).
func FuzzStreamsHeartbeat(f *testing.F) {
	for _, r := range streamsFuzzSeeds() {
		f.Add(int8(r.Version), r.AppendTo(nil))
	}
	c := newCoord848(f)
	c.topic(f, "lines", 4)
	c.topic(f, "app-words-repartition", 4)
	c.topic(f, "app-counts-changelog", 4)
	good := c.smember(f, "app", "good", "p0", wordCountTopology("app", "lines"))
	f.Fuzz(func(t *testing.T, ver int8, body []byte) {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = int16(ver & 1)
		if req.ReadFrom(body) != nil {
			return
		}
		good.t = t
		for range 3 {
			resp, _ := c.StreamsHeartbeat(context.Background(), req, "fuzz", "/127.0.0.1")
			_ = resp.AppendTo(nil)
			if resp.ErrorCode == 0 && resp.MemberEpoch > 0 {
				req.MemberEpoch, req.Topology = resp.MemberEpoch, nil
				if resp.ActiveTasks != nil {
					req.ActiveTasks = resp.ActiveTasks
				}
			}
			good.beat()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, g := range c.groups {
			sg := g.streams
			if sg == nil {
				continue
			}
			for id, m := range sg.members {
				for tk := range m.active {
					if sg.owner[tk] != id {
						t.Fatalf("member %s holds task %v owned by %q", id, tk, sg.owner[tk])
					}
				}
			}
		}
	})
}

func streamsFuzzSeeds() []*kmsg.StreamsGroupHeartbeatRequest {
	join := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	join.Version, join.Group, join.MemberID, join.RebalanceTimeoutMillis = 1, "app", "m1", 1000
	join.Topology = wordCountTopology("app", "lines")
	join.ProcessID = kmsg.StringPtr("p1")
	join.ActiveTasks, join.StandbyTasks, join.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	static := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	*static = *join
	static.MemberID, static.InstanceID = "m2", kmsg.StringPtr("i")
	static.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h", Port: 7}
	other := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	*other = *join
	other.Group, other.MemberID = "other", "m3"
	other.Topology = wordCountTopology("other", "missing")
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "app", "m1", -1
	v0 := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	*v0 = *join
	v0.Version, v0.MemberID = 0, "m4"
	return []*kmsg.StreamsGroupHeartbeatRequest{join, static, other, leave, v0}
}
