package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/handlers"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/loop"
	"github.com/iggy-kafka/gateway/txn"
)

// withTxnMaxIDs bounds the transactional ids kept (--transaction-max-ids);
// after withTransactions.
func withTxnMaxIDs(n int) gwOption {
	return func(h *handlers.Config, _ *loop.Config) { h.Transactions.MaxIDs = n }
}

// TestTransactionsHostile: what a broken or hostile client sends the
// transaction coordinator, answered with Kafka's errors over raw requests:
// a transactional id over txn.MaxIDLen, a control batch (a marker) from a
// client, a transactional batch without the request's transactional id, a
// producer that never ends its transaction, and more transactional ids
// than --transaction-max-ids.
func TestTransactionsHostile(t *testing.T) {
	t.Parallel()
	const maxIDs = 4
	gw := startGateway(t, withTransactions(2), withTxnMaxIDs(maxIDs))
	const topic = "tx-hostile"
	cl := newClient(t, gw.Addr)
	createTopic(t, cl, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	initPid := func(id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
		// On the wire: franz-go's client retries the retriable
		// COORDINATOR_LOAD_IN_PROGRESS.
		return dialWire(t, gw.Addr).roundTrip(req, 5, 1).(*kmsg.InitProducerIDResponse)
	}
	produce := func(txnID *string, batch []byte) int16 {
		t.Helper()
		req := produceReq(topic, batch)
		req.TransactionID = txnID
		// On the wire at v11 (topic names; partitions added with
		// AddPartitionsToTxn).
		resp := dialWire(t, gw.Addr).roundTrip(req, 11, 1).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0].ErrorCode
	}

	// A transactional id of txn.MaxIDLen bytes is served, one byte more
	// is INVALID_REQUEST, in FindCoordinator and InitProducerId alike.
	long := strings.Repeat("x", txn.MaxIDLen+1)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{long, long[:txn.MaxIDLen]}
	// On the wire: franz-go's client turns a key's error into the call's.
	fr := dialWire(t, gw.Addr).roundTrip(fc, 4, 1).(*kmsg.FindCoordinatorResponse)
	if len(fr.Coordinators) != 2 || fr.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code || fr.Coordinators[1].ErrorCode != 0 {
		t.Fatalf("FindCoordinator of ids of %d and %d bytes: %+v", txn.MaxIDLen+1, txn.MaxIDLen, fr.Coordinators)
	}
	if r := initPid(long, 60000); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("InitProducerId with a %d-byte id: %v", len(long), kerr.ErrorForCode(r.ErrorCode))
	}

	// A control batch from a client: INVALID_RECORD, nothing stored.
	id := "hostile-1"
	r := initPid(id, 60000)
	if r.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	const transactional, control = 0x10, 0x20
	if code := produce(&id, recordBatch(r.ProducerID, transactional|control, "marker")); code != kerr.InvalidRecord.Code {
		t.Fatalf("control batch from a client: %v, want INVALID_RECORD", kerr.ErrorForCode(code))
	}
	// A transactional batch without the request's transactional id:
	// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers a Produce
	// with transactional records and a null transactional id.
	if code := produce(nil, recordBatch(r.ProducerID, transactional, "no id")); code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without a transactional id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if o := endOffset(t, cl, topic); o != 0 {
		t.Fatalf("end offset %d after refused batches, want 0", o)
	}

	// A producer that never ends its transaction: its timeout (1 s)
	// aborts it, the epoch bumped, and the last stable offset moves past
	// it.
	stuck := "hostile-stuck"
	r = initPid(stuck, 1000)
	if r.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = stuck, r.ProducerID, r.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = topic, []int32{0}
	add.Topics = append(add.Topics, at)
	ar, err := add.RequestWith(ctx, cl)
	if err != nil || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %v %+v", err, ar)
	}
	if code := produce(&stuck, recordBatch(r.ProducerID, transactional, "open")); code != 0 {
		t.Fatalf("transactional produce: %v", kerr.ErrorForCode(code))
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	await.True(t, 20*time.Second, "the abandoned transaction aborted and read_committed past it", func() bool {
		in, _ := gw.G.Txn.Describe(stuck)
		return in.State == txn.CompleteAbort
	})
	if got := readAll(t, gw.Addr, kgo.ReadCommitted(), 1, topic); len(got) != 1 || got[0] != "after" {
		t.Fatalf("read_committed after the timeout: %v", got)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = stuck, r.ProducerID, r.ProducerEpoch, true
	er, err := end.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if er.ErrorCode != kerr.ProducerFenced.Code && er.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("EndTxn of the timed-out transaction: %v, want PRODUCER_FENCED", kerr.ErrorForCode(er.ErrorCode))
	}

	// More transactional ids than --transaction-max-ids: the one past it
	// is refused with COORDINATOR_LOAD_IN_PROGRESS (docs/CONFIG.md) and
	// not kept; the ids kept still work.
	for _, id := range []string{"hostile-3", "hostile-4"} {
		if r := initPid(id, 60000); r.ErrorCode != 0 {
			t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	for range 3 {
		if r := initPid("hostile-over", 60000); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("InitProducerId past %d ids: %v, want COORDINATOR_LOAD_IN_PROGRESS", maxIDs, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if kept := gw.G.Txn.List(func(txn.Info) bool { return true }); len(kept) != maxIDs {
		t.Fatalf("%d ids kept, want %d: %+v", len(kept), maxIDs, kept)
	}
	if r := initPid("hostile-1", 60000); r.ErrorCode != 0 {
		t.Fatalf("InitProducerId of a kept id at the bound: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
