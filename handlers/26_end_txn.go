// EndTxn: v0-5
//
// Behavior:
//   - Served only with --transactions enabled (Spec.Gated).
//   - Commit or abort: the state goes to PrepareCommit or PrepareAbort
//     (stored), a marker is written to every partition of the
//     transaction (each durable before the next step), on abort the
//     transaction joins each partition's aborted list (stored), on commit
//     the TxnOffsetCommit offsets go to their groups, and the state
//     CompleteCommit or CompleteAbort is stored; only then the answer. A
//     failure on the way leaves the Prepare state, which the client's retry
//     or the next start finishes; readers never see a part of it
//     (read_committed stops at the first offset of the open transaction
//     until every marker is written).
//   - A retry of an end already made answers success; the other outcome
//     on an ended transaction, or ending a transaction never begun, is
//     INVALID_TXN_STATE (v5 may abort an empty one). Producer checks and
//     codes as AddPartitionsToTxn; WRITE on the transactional id.
//   - v5 (transaction.version 2, KIP-890): the epoch is bumped once the
//     transaction ended, and the answer carries the producer id and epoch
//     the producer goes on with; a retry with the epoch before the bump is
//     answered the same.
//
// Version notes:
//   - v1 is v0; v2 may answer PRODUCER_FENCED (KIP-588); v3 is flexible;
//     v4 adds TRANSACTION_ABORTABLE; v5 answers producer id and epoch.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 26, MinVersion: 0, MaxVersion: 5, Gated: txnServed, Handle: typed(endTxn)})
}

func endTxn(c *Call, req *kmsg.EndTxnRequest, resp *kmsg.EndTxnResponse) (kmsg.Response, error) {
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	r := c.G.Txn.End(c.Ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, req.Version >= 5, fencedOld(26, req.Version))
	resp.ErrorCode = r.Code
	if req.Version >= 5 {
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.Epoch
	}
	return resp, nil
}
