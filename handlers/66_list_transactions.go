// ListTransactions: v0-2
//
// Behavior:
//   - With --transactions enabled, the transactional ids the coordinator
//     knows that the caller may DESCRIBE, filtered as Kafka filters: by
//     state names (any of them; none: all), producer ids (any; none: all),
//     v1 a minimum running time of the open transaction (a duration filter
//     of 0 or more matches only ids with an open transaction), v2 a
//     transactional id pattern (a Java regular expression; RE2 here, which
//     accepts the patterns tools send). State filters that name no Kafka
//     state are echoed in UnknownStateFilters. An invalid pattern is
//     INVALID_REGULAR_EXPRESSION.
//   - Without it no transactions exist: the list is empty.
//
// Version notes:
//   - v1 adds the duration filter (KIP-994); v2 the transactional id
//     pattern (KIP-1152). Kafka 4.4 serves v0-2.

package handlers

import (
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/txn"
)

func init() {
	register(Spec{Key: 66, MinVersion: 0, MaxVersion: 2, Handle: typed(listTransactions)})
}

func listTransactions(c *Call, req *kmsg.ListTransactionsRequest, resp *kmsg.ListTransactionsResponse) (kmsg.Response, error) {
	resp.TransactionStates = []kmsg.ListTransactionsResponseTransactionState{}
	var states []txn.State
	for _, s := range req.StateFilters {
		if st, ok := txn.ParseState(s); ok {
			states = append(states, st)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		pattern = re
	}
	if c.G.Txn == nil {
		return resp, nil
	}
	nowMs := time.Now().UnixMilli()
	for _, in := range c.G.Txn.List(func(in txn.Info) bool {
		switch {
		case len(req.StateFilters) > 0 && !slices.Contains(states, in.State):
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, in.ProducerID):
		case req.Version >= 1 && req.DurationFilterMillis >= 0 && (in.StartMs < 0 || nowMs-in.StartMs < req.DurationFilterMillis):
		case pattern != nil && !pattern.MatchString(in.ID):
		default:
			return true
		}
		return false
	}) {
		if !c.Authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, in.ID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = in.ID, in.ProducerID, in.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
