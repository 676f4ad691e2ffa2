package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/codec"
	"github.com/iggy-kafka/gateway/txn"
)

// txnBatch is a transactional batch of one record of producer pid at
// epoch, sequence seq.
func txnBatch(pid int64, epoch int16, seq int32, value string) []byte {
	var bb codec.BatchBuilder
	buf := bb.Begin(nil, 0, baseTs)
	bb.Producer(pid, epoch, seq)
	bb.Transactional()
	buf = bb.AppendRecord(buf, 0, 0, nil, []byte(value), 0)
	return bb.Finish(buf)
}

// TestTxnMarkerBetweenCheckAndAppend: a transactional batch whose
// transaction ends (its marker written) after the coordinator's check and
// before its append is refused with INVALID_TXN_STATE and opens nothing:
// the partition's last stable offset is not held by a transaction no
// marker will ever end.
func TestTxnMarkerBetweenCheckAndAppend(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate, func(c *Config) { c.Transactions = TxnConfig{Enabled: true, Version: 1} })
	createTopic(t, g, "tr", 1)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	init.TransactionalID = strp("race")
	init.TransactionTimeoutMillis = 60000
	ir := do(t, g, init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %d", ir.ErrorCode)
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "race", pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "tr", []int32{0}
	add.Topics = append(add.Topics, at)
	if ar := do(t, g, add).(*kmsg.AddPartitionsToTxnResponse); ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %+v", ar)
	}
	send := func(seq int32, v string) kmsg.ProduceResponseTopicPartition {
		req := produceReq(9, "tr", 0, txnBatch(pid, epoch, seq, v))
		req.TransactionID = strp("race")
		return produceOne(t, g, req)
	}
	if p := send(0, "in"); p.ErrorCode != 0 {
		t.Fatalf("first transactional produce: %d", p.ErrorCode)
	}
	// The second batch passes the check; the transaction is committed
	// (its marker written) before the batch is appended.
	g.afterTxnCheck = func() {
		g.afterTxnCheck = nil
		if r := g.Txn.End(t.Context(), "race", pid, epoch, true, false, false); r.Code != 0 {
			t.Errorf("EndTxn: %+v", r)
		}
	}
	if p := send(1, "late"); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("late transactional produce: code %d, want INVALID_TXN_STATE", p.ErrorCode)
	}
	st, err := g.Store.Partition(t.Context(), g.Cfg.Stream, "tr", 0)
	if err != nil {
		t.Fatal(err)
	}
	if lso := g.Txn.Index.LastStable(txn.Partition{Topic: "tr", Partition: 0}, st.Next); lso != st.Next || st.Next != 2 {
		t.Fatalf("last stable offset %d, high watermark %d; want 2 and 2 (a record and its marker)", lso, st.Next)
	}
}

// TestTxnV2NextTransactionAfterBumpedMarker: under transaction.version 2
// the commit's markers carry the bumped epoch; the producer's next
// transaction at that epoch starts at sequence 0 on the same partition
// and is stored, and a batch of the old epoch is refused.
func TestTxnV2NextTransactionAfterBumpedMarker(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate, func(c *Config) { c.Transactions = TxnConfig{Enabled: true, Version: 2} })
	createTopic(t, g, "tv2", 1)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 5
	init.TransactionalID = strp("v2")
	init.TransactionTimeoutMillis = 60000
	ir := do(t, g, init).(*kmsg.InitProducerIDResponse)
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	send := func(epoch int16, seq int32, v string) int16 {
		req := produceReq(12, "tv2", 0, txnBatch(pid, epoch, seq, v))
		req.TransactionID = strp("v2")
		return produceOne(t, g, req).ErrorCode
	}
	end := func(epoch int16) *kmsg.EndTxnResponse {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = 5
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "v2", pid, epoch, true
		return do(t, g, req).(*kmsg.EndTxnResponse)
	}
	if code := send(epoch, 0, "a"); code != 0 { // Produce v12 adds the partition
		t.Fatalf("first transaction: %d", code)
	}
	r := end(epoch)
	if r.ErrorCode != 0 || r.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: %+v", r)
	}
	if code := send(epoch, 1, "late"); code != kerr.InvalidProducerEpoch.Code && code != kerr.ProducerFenced.Code {
		t.Fatalf("old epoch after the bump: %d", code)
	}
	if code := send(r.ProducerEpoch, 0, "b"); code != 0 {
		t.Fatalf("next transaction at the bumped epoch: %d", code)
	}
	if r2 := end(r.ProducerEpoch); r2.ErrorCode != 0 {
		t.Fatalf("second EndTxn: %+v", r2)
	}
}
