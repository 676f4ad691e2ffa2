// DescribeTransactions: v0-0
//
// Behavior:
//   - With --transactions enabled, each transactional id the coordinator
//     knows: its state (Kafka's names), timeout, when the open transaction
//     started (-1 when none), producer id and epoch, and the partitions of
//     the open transaction. An unknown id is TRANSACTIONAL_ID_NOT_FOUND
//     with producer id and epoch -1 and no topics; DESCRIBE on the id is
//     checked first (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
//   - In cluster mode an id another gateway coordinates is
//     NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while just handed
//     here), as Kafka's admin client expects of a broker it asked
//     FindCoordinator about.
//   - Without it no transactions exist: every id is
//     TRANSACTIONAL_ID_NOT_FOUND.
//   - On a worker: an id in the middle of ending its transaction is
//     described once that step is done.
//
// Version notes:
//   - v0 only (KIP-664), as in Kafka 4.4.

package handlers

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(Spec{Key: 65, MinVersion: 0, MaxVersion: 0, Handle: typed(describeTransactions)})
}

func describeTransactions(c *Call, req *kmsg.DescribeTransactionsRequest, resp *kmsg.DescribeTransactionsResponse) (kmsg.Response, error) {
	resp.TransactionStates = make([]kmsg.DescribeTransactionsResponseTransactionState, len(req.TransactionalIDs))
	for i, id := range req.TransactionalIDs {
		st := &resp.TransactionStates[i]
		st.Default()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch = -1, -1
		st.StartTimestamp = -1
		st.Topics = []kmsg.DescribeTransactionsResponseTransactionStateTopic{}
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			continue
		}
		if c.G.Txn == nil {
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
			continue
		}
		if code := c.G.Txn.Here(c.Ctx, id); code != 0 {
			st.ErrorCode = code // cluster mode: another gateway coordinates it
			continue
		}
		in, ok := c.G.Txn.Describe(id)
		if !ok {
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
			continue
		}
		st.State, st.TimeoutMillis, st.StartTimestamp = in.State.String(), in.TimeoutMs, in.StartMs
		st.ProducerID, st.ProducerEpoch = in.ProducerID, in.Epoch
		for _, p := range in.Partitions {
			n := len(st.Topics)
			if n == 0 || st.Topics[n-1].Topic != p.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = p.Topic
				st.Topics = append(st.Topics, t)
				n++
			}
			st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, p.Partition)
		}
	}
	return resp, nil
}
