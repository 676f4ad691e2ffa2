// DescribeTransactions: v0-0
//
// Behavior:
//   - No transactions exist, so every transactional id is answered
//     TRANSACTIONAL_ID_NOT_FOUND, with producer id and epoch -1 and no
//     topics, as Kafka answers an id its coordinator does not know.
//   - Clients find the transaction coordinator first (FindCoordinator key
//     type 1), which this gateway refuses (see 10_find_coordinator.go), so
//     mainly tools that send the request straight to a broker reach this.
//
// Version notes:
//   - v0 only (KIP-664), as in Kafka 4.1.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 65, MinVersion: 0, MaxVersion: 0, Inline: true, Handle: typed(describeTransactions)})
}

// describeTransactions touches no store: safe on the event loop.
func describeTransactions(c *Call, req *kmsg.DescribeTransactionsRequest, resp *kmsg.DescribeTransactionsResponse) (kmsg.Response, error) {
	resp.TransactionStates = make([]kmsg.DescribeTransactionsResponseTransactionState, len(req.TransactionalIDs))
	for i, id := range req.TransactionalIDs {
		st := &resp.TransactionStates[i]
		st.Default()
		st.ErrorCode = kerr.TransactionalIDNotFound.Code
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		}
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch = -1, -1
		st.StartTimestamp = -1
		st.Topics = []kmsg.DescribeTransactionsResponseTransactionStateTopic{}
	}
	return resp, nil
}
