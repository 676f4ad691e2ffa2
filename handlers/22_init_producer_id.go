// InitProducerId: v0-5
//
// Behavior:
//   - Idempotent producers get a fresh producer id from Gateway.Producers
//     (instance id in bits 47..62, a 47-bit counter, bit 63 clear;
//     docs/IDEMPOTENCE.md) and epoch 0. When the store keeps a high-water
//     mark (bridge.ProducerIDMarks; the embedded store does) ids are issued
//     only below a durably stored mark, so a restart never reissues one.
//     Until the first mark is stored (the first call waits up to a second)
//     or when a burst used up the reserved block, the answer is
//     COORDINATOR_LOAD_IN_PROGRESS, which every client retries.
//   - A non-empty transactional_id, without --transactions enabled, is
//     refused with UNSUPPORTED_VERSION and producer id/epoch -1; the
//     connection stays open (keys 24-28 are not served). With it, the
//     request goes to a worker (Spec.Queued: its answer is stored first)
//     and the transaction coordinator answers (txn.Coordinator.
//     InitProducerID): WRITE on the id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
//     the id's length (INVALID_REQUEST over txn.MaxIDLen), a timeout above
//     --transaction-max-timeout-ms or not positive
//     (INVALID_TRANSACTION_TIMEOUT); a new id gets a fresh producer id at
//     epoch 0, a known one its producer id at the next epoch, after the
//     transaction an earlier instance left open is aborted (that instance
//     is fenced); v3+ with a producer id and epoch (KIP-360) must name the
//     current pair or the one just bumped from (a retry), else
//     PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4).
//   - v3+ with an existing producer id and epoch (KIP-360, after a sequence
//     error): the same id with epoch+1; a fresh id with epoch 0 when the
//     epoch is exhausted. An epoch older than one this gateway already
//     bumped that id to is fenced: PRODUCER_FENCED on v4+ (KIP-588),
//     INVALID_PRODUCER_EPOCH before; a retry of the last bump gets the same
//     answer. (A Kafka broker hands an idempotent
//     producer a fresh id here; the Java producer bumps its epoch locally
//     and never asks, franz-go asks.)
//   - Inline: a map lookup and an atomic add; a store call only for the
//     first reservation (waited for) and in the background afterwards.
//
// Version notes:
//   - v2 is flexible; v3 adds ProducerID/ProducerEpoch (KIP-360); v4 lets the
//     broker answer PRODUCER_FENCED (KIP-588); v5 is KIP-890 part 1
//     (transactions only). v6 (KIP-939, 2PC) is not served.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 22, MinVersion: 0, MaxVersion: 5, Inline: true, Queued: initProducerIDTransactional, Handle: typed(initProducerID)})
}

// initProducerIDTransactional reports from the undecoded body that the
// request names a transactional id (non-null, non-empty): its first field,
// a nullable string (v0-1) or a compact nullable string (v2+). Loop only;
// no allocation.
func initProducerIDTransactional(body []byte, version int16) bool {
	if version < 2 {
		return len(body) >= 2 && int16(uint16(body[0])<<8|uint16(body[1])) > 0
	}
	// A compact string's length + 1 as an unsigned varint: 0 null, 1 empty.
	return len(body) >= 1 && (body[0] > 1)
}

func initProducerID(c *Call, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) (kmsg.Response, error) {
	if req.TransactionalID != nil && *req.TransactionalID != "" {
		if c.G.Txn != nil {
			return initTransactional(c, req, resp), nil
		}
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil
	}
	if !c.Authorized(kmsg.ACLOperationIdempotentWrite, kmsg.ACLResourceTypeCluster, ClusterResource) &&
		!c.mayWriteSomeTopic() {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil
	}
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 {
		epoch, fresh, fenced := c.G.Idem.bumpEpoch(req.ProducerID, req.ProducerEpoch)
		switch {
		case fenced:
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
			if req.Version >= 4 {
				resp.ErrorCode = kerr.ProducerFenced.Code
			}
			resp.ProducerID, resp.ProducerEpoch = -1, -1
			return resp, nil
		case !fresh:
			resp.ProducerID, resp.ProducerEpoch = req.ProducerID, epoch
			return resp, nil
		}
	}
	id, ok := c.G.Producers.Allocate(c.G.Store, c.G.Log)
	if !ok {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp, nil
}

// initTransactional answers an InitProducerId with a transactional id.
// Worker only: the coordinator stores its answer first.
func initTransactional(c *Call, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) *kmsg.InitProducerIDResponse {
	id := *req.TransactionalID
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case !c.Authorized(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	case len(id) > txn.MaxIDLen:
		resp.ErrorCode = kerr.InvalidRequest.Code
	default:
		pid, epoch := int64(-1), int16(-1)
		if req.Version >= 3 {
			pid, epoch = req.ProducerID, req.ProducerEpoch
		}
		r := c.G.Txn.InitProducerID(c.Ctx, id, req.TransactionTimeoutMillis, pid, epoch, req.Version)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = r.Code, r.ProducerID, r.Epoch
	}
	return resp
}
