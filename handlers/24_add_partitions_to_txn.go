// AddPartitionsToTxn: v0-5
//
// Behavior:
//   - Served only with --transactions enabled (Spec.Gated); otherwise not
//     advertised, and a request closes the connection.
//   - v0-3 (producers): the partitions join the producer's transaction,
//     which becomes Ongoing; each new partition's high watermark is kept
//     with the transaction's state, durably, before the answer (a restart
//     takes it as where the open transaction may start). Per partition, in
//     Kafka's order: WRITE on the topic (TOPIC_AUTHORIZATION_FAILED), the
//     topic and partition (UNKNOWN_TOPIC_OR_PARTITION), and when any
//     fails every other partition is OPERATION_NOT_ATTEMPTED and nothing
//     is added. Request-wide codes go on every partition: WRITE on the
//     transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), an unknown
//     id or another producer id (INVALID_PRODUCER_ID_MAPPING), an older
//     epoch (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH before v2), a newer
//     one (INVALID_PRODUCER_EPOCH), a transaction being ended
//     (CONCURRENT_TRANSACTIONS).
//   - v4-5 (brokers, KIP-890): several transactions per request, needing
//     CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED as the
//     top-level code); verify_only answers whether each partition is in its
//     ongoing transaction (INVALID_TXN_STATE when not) and adds nothing.
//
// Version notes:
//   - v1 is v0; v2 may answer PRODUCER_FENCED (KIP-588); v3 is flexible;
//     v4 batches transactions for brokers (KIP-890); v5 adds
//     TRANSACTION_ABORTABLE to what a broker may answer.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 24, MinVersion: 0, MaxVersion: 5, Gated: txnServed, Handle: typed(addPartitionsToTxn)})
}

func addPartitionsToTxn(c *Call, req *kmsg.AddPartitionsToTxnRequest, resp *kmsg.AddPartitionsToTxnResponse) (kmsg.Response, error) {
	if req.Version < 4 {
		resp.Topics = c.addTxnPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Topics, false, req.Version)
		return resp, nil
	}
	if !c.Authorized(kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, ClusterResource) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for i := range req.Transactions {
		rt := &req.Transactions[i]
		tr := kmsg.NewAddPartitionsToTxnResponseTransaction()
		tr.TransactionalID = rt.TransactionalID
		topics := make([]kmsg.AddPartitionsToTxnRequestTopic, len(rt.Topics))
		for j, t := range rt.Topics {
			topics[j] = kmsg.AddPartitionsToTxnRequestTopic{Topic: t.Topic, Partitions: t.Partitions}
		}
		for _, t := range c.addTxnPartitions(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, topics, rt.VerifyOnly, req.Version) {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			tr.Topics = append(tr.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, tr)
	}
	return resp, nil
}

// addTxnPartitions adds one transaction's partitions and answers each.
func (c *Call) addTxnPartitions(id string, pid int64, epoch int16, topics []kmsg.AddPartitionsToTxnRequestTopic, verifyOnly bool, version int16) []kmsg.AddPartitionsToTxnResponseTopic {
	codes := map[txn.Partition]int16{}
	var want []txn.Partition
	refused := false
	for _, t := range topics {
		for _, p := range t.Partitions {
			tp := txn.Partition{Topic: t.Topic, Partition: p}
			switch {
			case !c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, t.Topic):
				codes[tp], refused = kerr.TopicAuthorizationFailed.Code, true
			case !validTopicName(t.Topic) || p < 0:
				codes[tp], refused = kerr.UnknownTopicOrPartition.Code, true
			default:
				want = append(want, tp)
			}
		}
	}
	whole := int16(0)
	switch {
	case !c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id):
		whole = kerr.TransactionalIDAuthorizationFailed.Code
	case refused:
		for _, tp := range want {
			codes[tp] = kerr.OperationNotAttempted.Code
		}
	default:
		code, out := c.G.Txn.AddPartitions(c.Ctx, id, pid, epoch, want, verifyOnly, fencedOld(24, version))
		whole = code
		for tp, pc := range out {
			codes[tp] = pc
		}
	}
	resp := make([]kmsg.AddPartitionsToTxnResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode = codes[txn.Partition{Topic: t.Topic, Partition: p}]
			if whole != 0 {
				rp.ErrorCode = whole
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp = append(resp, rt)
	}
	return resp
}
