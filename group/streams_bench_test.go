package group

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkStreamsHeartbeatSteady is one member's regular heartbeat (every
// optional field null, nothing changed) in a group of 10 members running
// a word count over 32 partitions: what every instance of an app sends
// every 5 s. The group is kept in the store, as on the gateway, so this
// also measures deciding that nothing needs writing.
func BenchmarkStreamsHeartbeatSteady(b *testing.B) {
	c := newCoord848(b)
	c.keepStreams(b)
	c.topic(b, "lines", 32)
	c.topic(b, "app-words-repartition", 32)
	c.topic(b, "app-counts-changelog", 32)
	var ms []*smem
	for i := range 10 {
		m := c.smember(b, "app", fmt.Sprint("m", i), fmt.Sprint("p", i), wordCountTopology("app", "lines"))
		ms = append(ms, m)
	}
	for range 4 {
		for _, m := range ms {
			m.mustBeat()
		}
	}
	req := ms[0].request()
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nil, nil, nil
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, _ := c.StreamsHeartbeat(context.Background(), req, "client", "/127.0.0.1")
		if resp.ErrorCode != 0 {
			b.Fatal(resp.ErrorCode)
		}
	}
}

// BenchmarkAssignTasks is one assignment of 1000 stateful tasks with a
// standby each over 100 members in 50 processes, half of them where they
// were before.
func BenchmarkAssignTasks(b *testing.B) {
	tasks, stateful := map[string]int32{"0": 500, "1": 500}, map[string]bool{"0": true, "1": true}
	var ms []taskMember
	for i := range 100 {
		ms = append(ms, taskMember{id: fmt.Sprintf("m%03d", i), process: fmt.Sprintf("p%02d", i/2)})
	}
	first := assignTasks(ms, tasks, stateful, 1)
	for i := range ms[:50] {
		ms[i].prev = first[ms[i].id]
	}
	b.ReportAllocs()
	for b.Loop() {
		assignTasks(ms, tasks, stateful, 1)
	}
}
