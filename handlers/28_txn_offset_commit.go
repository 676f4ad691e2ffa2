// TxnOffsetCommit: v0-6
//
// Behavior:
//   - Served only with --transactions enabled (Spec.Gated).
//   - The offsets are held by the transaction, durably, and applied to the
//     group only when it commits (dropped when it aborts); until then an
//     OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for
//     those partitions, and without it the committed offsets before them.
//   - Checks, in Kafka's order: WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
//     (GROUP_AUTHORIZATION_FAILED), then per topic READ
//     (TOPIC_AUTHORIZATION_FAILED), the group's membership as for
//     OffsetCommit (v3+, KIP-447: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
//     FENCED_INSTANCE_ID), offset metadata over 4096 bytes
//     (OFFSET_METADATA_TOO_LARGE), then the producer checks of
//     AddPartitionsToTxn; a group not added to the transaction by
//     AddOffsetsToTxn is INVALID_TXN_STATE before v5, and joins it
//     implicitly from v5 (transaction.version 2). Codes go on every
//     partition.
//
// Version notes:
//   - v2 adds the leader epoch; v3 the member fields (KIP-447) and
//     flexible encoding; v4 TRANSACTION_ABORTABLE; v5 is KIP-890's
//     implicit add; v6 names topics by id (an unknown id is
//     UNKNOWN_TOPIC_ID).

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 28, MinVersion: 0, MaxVersion: 6, Gated: txnServed, Handle: typed(txnOffsetCommit)})
}

// maxTxnOffsetMetadata is Kafka's offset.metadata.max.bytes default.
const maxTxnOffsetMetadata = 4096

func txnOffsetCommit(c *Call, req *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse) (kmsg.Response, error) {
	if req.Version >= 6 {
		for i := range req.Topics {
			req.Topics[i].Topic = c.nameByID(req.Topics[i].TopicID)
		}
	}
	whole := int16(0)
	switch {
	case !c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		whole = kerr.TransactionalIDAuthorizationFailed.Code
	case !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		whole = kerr.GroupAuthorizationFailed.Code
	}
	codes := make([][]int16, len(req.Topics))
	var offs []txn.Offset
	for i := range req.Topics {
		rt := &req.Topics[i]
		codes[i] = make([]int16, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			switch {
			case req.Version >= 6 && !validTopicName(rt.Topic):
				codes[i][j] = kerr.UnknownTopicID.Code
			case !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, rt.Topic):
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
			case !validTopicName(rt.Topic) || rp.Partition < 0:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > maxTxnOffsetMetadata:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				o := txn.Offset{Partition: txn.Partition{Topic: rt.Topic, Partition: rp.Partition}, Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch}
				if req.Version < 2 {
					o.LeaderEpoch = -1
				}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				offs = append(offs, o)
			}
		}
	}
	if whole == 0 && len(offs) > 0 {
		whole = c.G.coordinator().TxnCommitCheck(req.Group, req.MemberID, req.InstanceID, req.Generation, req.Version)
		if whole == 0 {
			whole = c.txnCommitOffsets(req.TransactionalID, offsRelay{pid: req.ProducerID, epoch: req.ProducerEpoch,
				group: req.Group, offs: offs, implicit: req.Version >= 5, fencedOld: fencedOld(28, req.Version)})
		}
	}
	resp.Topics = make([]kmsg.TxnOffsetCommitResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Default()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for j, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = codes[i][j]
			if sp.ErrorCode == 0 && whole != 0 {
				sp.ErrorCode = whole
			}
			st.Partitions = append(st.Partitions, sp)
		}
	}
	return resp, nil
}
