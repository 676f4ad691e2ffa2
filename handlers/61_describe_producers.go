// DescribeProducers: v0-0
//
// Behavior:
//   - The idempotent producers of each partition, from the gateway's
//     idempotence state (docs/IDEMPOTENCE.md): producer id, epoch, the
//     sequence of its last stored record (-1 for a producer a transaction
//     marker moved to a new epoch before any batch of it). A partition this gateway has not
//     seen an idempotent batch for since it started is first rebuilt from
//     the store's tail, so producers that wrote before a restart (within
//     the rebuild window) are listed too; producers expire after a day
//     idle, as with Kafka's producer.id.expiration.ms.
//   - LastTimestamp is when this gateway last stored a batch of the
//     producer (not the batch's max timestamp), -1 for a producer known
//     only from the rebuild. CurrentTxnStartOffset is the first offset of
//     the producer's open transaction on the partition, -1 when it has
//     none (always, without --transactions enabled). CoordinatorEpoch is
//     the coordinator epoch of the producer's last marker written to the
//     partition since the gateway started, as Kafka keeps it; -1 before
//     one (an open transaction does not change it, as on Kafka).
//   - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION; a transient
//     store failure during a rebuild: REQUEST_TIMED_OUT.
//
// Version notes:
//   - v0 only (KIP-664), as in Kafka 4.1.

package handlers

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 61, MinVersion: 0, MaxVersion: 0, Handle: typed(describeProducers)})
}

func describeProducers(c *Call, req *kmsg.DescribeProducersRequest, resp *kmsg.DescribeProducersResponse) (kmsg.Response, error) {
	g := c.G
	resp.Topics = make([]kmsg.DescribeProducersResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.DescribeProducersResponseTopicPartition, len(rt.Partitions))
		ti, code := c.authorizedTopic(rt.Topic, kmsg.ACLOperationRead, opAdmin)
		for j, p := range rt.Partitions {
			sp := &st.Partitions[j]
			sp.Default()
			sp.Partition = p
			switch {
			case code != 0:
				sp.ErrorCode = code
			case p < 0 || p >= ti.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				ps, err := g.Idem.active(c, seqPartKey{topic: ti.Name, id: ti.ID, partition: p})
				if err != nil {
					sp.ErrorCode = errCode(err, opAdmin)
					continue
				}
				sp.ActiveProducers = ps
			}
		}
	}
	return resp, nil
}

// active lists the producers of a partition whose state is known, sorted
// by id. It takes each producer's lock, so it waits for an append of that
// producer in flight (bounded by the store's deadline). Worker goroutines.
func (id *Idempotence) active(c *Call, k seqPartKey) ([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, error) {
	sp := id.partition(k)
	sp.mu.Lock()
	if err := id.load(c, k, sp); err != nil {
		sp.mu.Unlock()
		return nil, err
	}
	pids := make([]int64, 0, len(sp.producers))
	ps := make(map[int64]*seqProducer, len(sp.producers))
	for pid, p := range sp.producers {
		pids = append(pids, pid)
		ps[pid] = p
	}
	sp.mu.Unlock()
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(pids))
	for _, pid := range pids {
		p := ps[pid]
		p.mu.Lock()
		if p.epoch >= 0 && (p.n > 0 || p.marked) && !p.dirty {
			a := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
			a.ProducerID, a.ProducerEpoch = pid, int32(p.epoch)
			a.LastSequence = -1 // a marker at a new epoch, no batch of it yet (as Kafka lists it)
			if p.n > 0 {
				a.LastSequence = p.batches[p.n-1].last
			}
			a.LastTimestamp = -1
			if p.appendedMs > 0 {
				a.LastTimestamp = p.appendedMs
			}
			a.CoordinatorEpoch, a.CurrentTxnStartOffset = -1, -1
			if p.marked {
				a.CoordinatorEpoch = p.markEpoch // the epoch of its last marker, as Kafka keeps it
			}
			if tx := c.G.Txn; tx != nil {
				if first, ok := tx.Index.FirstOffset(txn.Partition{Topic: k.topic, Partition: k.partition}, pid); ok {
					a.CurrentTxnStartOffset = int64(first)
				}
			}
			out = append(out, a)
		}
		p.mu.Unlock()
	}
	return out, nil
}
