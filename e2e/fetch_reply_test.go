package e2e

import (
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/loop"
)

// With the tail cache off every Fetch maps its batches from the store, and
// a reply holding batches in one partition (here the topic's only one) is
// built around them in their buffer (handlers.EncodeReplyInPlace):
// franz-go (Fetch v16+), kcat and Sarama at Kafka 2.8 (Fetch v12) and 2.0
// (v8, before flexible versions) read exactly the records produced. On
// every backend.
func TestFetchReplyInPlaceRealClients(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw := startGateway(t, func(hc *handlers.Config, _ *loop.Config) { hc.TailCacheBytes = 0 })
	cl := clientWithTopic(t, gw.Addr, "inplace", 1)
	want := produceAll(t, cl, testRecords("inplace", 400))
	sameRecs(t, want, consumeN(t, gw.Addr, "inplace", len(want)))

	var noHeaders []rec
	for _, r := range want {
		r.Headers = ""
		noHeaders = append(noHeaders, r)
	}
	var got []rec
	for _, l := range kcatConsumeAll(t, kcat, gw.Addr, "inplace", false) {
		got = append(got, rec{Partition: l.Partition, Offset: l.Offset, Key: l.Key, Value: l.Value})
	}
	sameRecs(t, noHeaders, got)

	for _, v := range []sarama.KafkaVersion{sarama.V2_0_0_0, sarama.V2_8_0_0} {
		t.Run("sarama-"+v.String(), func(t *testing.T) {
			c, err := sarama.NewConsumer([]string{gw.Addr}, saramaConfig(v))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var got []rec
			for p := int32(0); p < 1; p++ {
				pc, err := c.ConsumePartition("inplace", p, sarama.OffsetOldest)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, r := range noHeaders {
					if r.Partition == p {
						n++
					}
				}
				deadline := time.After(30 * time.Second)
				for range n {
					select {
					case m := <-pc.Messages():
						got = append(got, rec{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)})
					case err := <-pc.Errors():
						t.Fatal(err)
					case <-deadline:
						t.Fatalf("partition %d: %d of %d records", p, len(got), n)
					}
				}
				pc.Close()
			}
			sameRecs(t, noHeaders, got)
		})
	}
}
