package e2e

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Fetch partition with nothing to return must carry an empty record set,
// not a null one: librdkafka (kcat) reads a size of -1 as "invalid
// MessageSetSize", backs off and retries forever, so `kcat -C -e` never
// sees the end of the partition. Kafka brokers always send an empty set.
// kcat itself fetches at v11; every non-flexible version is checked.
func TestFetchEmptyPartitionRecordsNotNull(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := newClient(t, gw.Addr)
	createTopic(t, cl, "quiet", 1)
	produceAll(t, cl, testRecords("quiet", 3))

	for _, v := range []int16{4, 7, 11, 12} {
		for _, offset := range []int64{3, 0} { // at the end, and with data
			w := dialWire(t, gw.Addr)
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis = 0
			req.MinBytes = 1
			req.MaxBytes = 1 << 20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "quiet"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = 0
			rp.FetchOffset = offset
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := w.roundTrip(req, v, 1).(*kmsg.FetchResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("v%d: answer %+v", v, resp.Topics)
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.HighWatermark != 3 {
				t.Fatalf("v%d offset %d: error %d, high watermark %d", v, offset, p.ErrorCode, p.HighWatermark)
			}
			if p.RecordBatches == nil {
				t.Errorf("Fetch v%d at offset %d: null record set, want an empty one", v, offset)
			}
		}
	}
}
