package handlers

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A consumer of 100 topics x 16 partitions, all caught up (the steady
// state of issue 11's scaling row): a sessionless fetch names and is
// answered every partition; an incremental one names none and is answered
// none. req-B/op and resp-B/op are the encoded bodies.
func BenchmarkFetchIdle100x16(b *testing.B) {
	g := newGateway(b)
	full := kmsg.NewPtrFetchRequest()
	full.Version, full.MaxBytes, full.SessionEpoch = 12, 1<<20, -1
	for i := range 100 {
		name := fmt.Sprintf("b-%03d", i)
		createTopic(b, g, name, 16)
		t := kmsg.NewFetchRequestTopic()
		t.Topic = name
		for p := range int32(16) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			t.Partitions = append(t.Partitions, rp)
		}
		full.Topics = append(full.Topics, t)
	}
	bench := func(b *testing.B, next func() *kmsg.FetchRequest) {
		b.ReportAllocs()
		var reqB, respB int
		for b.Loop() {
			req := next()
			reqB += len(req.AppendTo(nil))
			c := newCall(g, 1, 12)
			resp, err := Lookup(1).Handle(c, req)
			if err != nil || resp == nil {
				b.Fatal(err)
			}
			respB += len(resp.AppendTo(nil))
			c.RunDeferred()
		}
		b.ReportMetric(float64(reqB)/float64(b.N), "req-B/op")
		b.ReportMetric(float64(respB)/float64(b.N), "resp-B/op")
	}
	b.Run("sessionless", func(b *testing.B) { bench(b, func() *kmsg.FetchRequest { return full }) })
	b.Run("incremental", func(b *testing.B) {
		open := *full
		open.SessionEpoch = 0
		resp, err := Lookup(1).Handle(newCall(g, 1, 12), &open)
		if err != nil || resp.(*kmsg.FetchResponse).SessionID == 0 {
			b.Fatal("no session", err)
		}
		inc := kmsg.NewPtrFetchRequest()
		inc.Version, inc.MaxBytes = 12, 1<<20
		inc.SessionID, inc.SessionEpoch = resp.(*kmsg.FetchResponse).SessionID, 0
		bench(b, func() *kmsg.FetchRequest {
			inc.SessionEpoch = nextFetchEpoch(inc.SessionEpoch)
			return inc
		})
	})
}
