// AddOffsetsToTxn: v0-4
//
// Behavior:
//   - Served only with --transactions enabled (Spec.Gated).
//   - The group joins the producer's transaction (Ongoing from then on),
//     stored before the answer, so its TxnOffsetCommit offsets are applied
//     when the transaction commits. WRITE on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
//     (GROUP_AUTHORIZATION_FAILED), then the producer checks of
//     AddPartitionsToTxn (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED or
//     INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS).
//
// Version notes:
//   - v1 is v0; v2 may answer PRODUCER_FENCED (KIP-588); v3 is flexible;
//     v4 adds TRANSACTION_ABORTABLE to what may be answered.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 25, MinVersion: 0, MaxVersion: 4, Gated: txnServed, Handle: typed(addOffsetsToTxn)})
}

func addOffsetsToTxn(c *Call, req *kmsg.AddOffsetsToTxnRequest, resp *kmsg.AddOffsetsToTxnResponse) (kmsg.Response, error) {
	switch {
	case !c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case !c.Authorized(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		resp.ErrorCode = c.G.Txn.AddGroup(c.Ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, fencedOld(25, req.Version))
	}
	return resp, nil
}
