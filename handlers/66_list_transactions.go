// ListTransactions: v0-2
//
// Behavior:
//   - No transactions exist (the gateway serves none; the transaction keys
//     24, 25, 26 and 28 are not advertised), so the list is empty and the
//     error code 0, whatever the filters. State filters that name no Kafka
//     transaction state are echoed in UnknownStateFilters, as Kafka does.
//
// Version notes:
//   - v1 adds the duration filter (KIP-994); v2 the transactional id
//     pattern (KIP-1152). Kafka 4.1 serves v0-2.

package handlers

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	register(Spec{Key: 66, MinVersion: 0, MaxVersion: 2, Inline: true, Handle: typed(listTransactions)})
}

// txnStates are Kafka's transaction state names (TransactionState).
var txnStates = map[string]bool{
	"Empty": true, "Ongoing": true, "PrepareCommit": true, "PrepareAbort": true,
	"CompleteCommit": true, "CompleteAbort": true, "Dead": true, "PrepareEpochFence": true,
}

// listTransactions touches no store: safe on the event loop.
func listTransactions(c *Call, req *kmsg.ListTransactionsRequest, resp *kmsg.ListTransactionsResponse) (kmsg.Response, error) {
	resp.TransactionStates = []kmsg.ListTransactionsResponseTransactionState{}
	for _, s := range req.StateFilters {
		if !txnStates[s] {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	return resp, nil
}
