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

// txnInit answers InitProducerId for transactional id id at version v.
func txnInit(t *testing.T, g *Gateway, id string, v int16) (int64, int16) {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = v
	init.TransactionalID = strp(id)
	init.TransactionTimeoutMillis = 60000
	ir := do(t, g, init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %d", ir.ErrorCode)
	}
	return ir.ProducerID, ir.ProducerEpoch
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
	pid, epoch := txnInit(t, g, "race", 4)
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
	pid, epoch := txnInit(t, g, "v2", 5)
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

// TestTxnOffsetsRequireStable: offsets a transaction holds are not
// visible to OffsetFetch until it commits; with require_stable the
// partition answers UNSTABLE_OFFSET_COMMIT meanwhile (KIP-447).
func TestTxnOffsetsRequireStable(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate, func(c *Config) { c.Transactions = TxnConfig{Enabled: true, Version: 2} })
	createTopic(t, g, "in", 1)
	pid, epoch := txnInit(t, g, "offs", 5)
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.Version = 5 // adds the group implicitly (transaction.version 2)
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = "offs", "g", pid, epoch
	commit.Generation, commit.MemberID = -1, ""
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "in"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 7
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if r := do(t, g, commit).(*kmsg.TxnOffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit: %+v", r)
	}
	fetch := func(stable bool) kmsg.OffsetFetchResponseTopicPartition {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group, req.RequireStable = "g", stable
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "in", []int32{0}
		req.Topics = append(req.Topics, rt)
		return do(t, g, req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	}
	if p := fetch(true); p.ErrorCode != kerr.UnstableOffsetCommit.Code || p.Offset != -1 {
		t.Fatalf("require_stable while the transaction is open: %+v", p)
	}
	if p := fetch(false); p.ErrorCode != 0 || p.Offset != -1 {
		t.Fatalf("without require_stable while the transaction is open: %+v", p)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 5
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "offs", pid, epoch, true
	if r := do(t, g, end).(*kmsg.EndTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %+v", r)
	}
	if p := fetch(true); p.ErrorCode != 0 || p.Offset != 7 {
		t.Fatalf("after the commit: %+v", p)
	}
}

// TestTxnMarkerCoordinatorEpoch: a marker carries its coordinator's epoch,
// DescribeProducers shows the epoch of the producer's last marker on the
// partition (-1 before any), and a marker from an older coordinator epoch
// than that is refused with TRANSACTION_COORDINATOR_FENCED, as Kafka's
// partition leader refuses a zombie coordinator's.
func TestTxnMarkerCoordinatorEpoch(t *testing.T) {
	t.Parallel()
	g := newGateway(t, noAutoCreate, func(c *Config) { c.Transactions = TxnConfig{Enabled: true, Version: 1} })
	createTopic(t, g, "wm", 1)
	for want := int32(0); want <= 1; want++ { // two starts on one store
		if err := g.Txn.Load(t.Context()); err != nil {
			t.Fatal(err)
		}
		if g.Txn.Epoch() != want {
			t.Fatalf("start %d: coordinator epoch %d", want+1, g.Txn.Epoch())
		}
	}
	const pid = 4242
	if p := produceOne(t, g, produceReq(9, "wm", 0, idemBatch(pid, 0, 0, 1, "v"))); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	coordEpoch := func(g *Gateway) int32 {
		t.Helper()
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "wm", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := do(t, g, req).(*kmsg.DescribeProducersResponse)
		for _, a := range resp.Topics[0].Partitions[0].ActiveProducers {
			if a.ProducerID == pid {
				return a.CoordinatorEpoch
			}
		}
		t.Fatalf("producer %d not listed: %+v", pid, resp.Topics[0].Partitions[0])
		return 0
	}
	if e := coordEpoch(g); e != -1 {
		t.Fatalf("before any marker: coordinator epoch %d, want -1", e)
	}
	mark := func(g *Gateway, coord int32) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, 0, false, coord
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "wm", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return do(t, g, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := mark(g, 1); code != 0 {
		t.Fatalf("marker at coordinator epoch 1: %v", kerr.ErrorForCode(code))
	}
	if e := coordEpoch(g); e != 1 {
		t.Fatalf("after a marker of coordinator epoch 1: %d", e)
	}
	if code := mark(g, 0); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker of an older coordinator epoch: %v, want TRANSACTION_COORDINATOR_FENCED", kerr.ErrorForCode(code))
	}
	st, err := g.Store.Partition(t.Context(), g.Cfg.Stream, "wm", 0)
	if err != nil || st.Next != 2 {
		t.Fatalf("high watermark %d, %v: want 2 (the record and one marker)", st.Next, err)
	}
	// A restarted gateway reads the marker back from the partition: the
	// same coordinator epoch, the same fence.
	again := newGatewayOn(t, g.Store, noAutoCreate, func(c *Config) { c.Transactions = TxnConfig{Enabled: true, Version: 1} })
	if err := again.Txn.Load(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e := coordEpoch(again); e != 1 {
		t.Fatalf("after a restart: coordinator epoch %d, want the stored marker's 1", e)
	}
	if code := mark(again, 0); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("after a restart, a marker of an older coordinator epoch: %v, want TRANSACTION_COORDINATOR_FENCED", kerr.ErrorForCode(code))
	}
}
