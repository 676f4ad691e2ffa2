package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/cluster"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/txn"
)

// Transaction coordinators in cluster mode, two gateways over one store
// and one etcd: FindCoordinator names the id's coordinator and the other
// gateway refuses the id (NOT_COORDINATOR); the coordinator's state is in
// etcd, so when it leaves, the other gateway carries on from it: a
// producer's new instance is fenced against the epoch the first gateway
// handed out and its open transaction is aborted, and a transaction no
// client asks about any more is found by the scan after the membership
// change and aborted at its timeout. The gateway that left writes nothing.
func TestTxnClusterCoordinatorHandover(t *testing.T) {
	t.Parallel()
	nodes, st, g1, g2 := newTxnClusterPair(t)
	v := nodes[0].View()
	id := nameWhere("tc", func(n string) bool { return v.Coordinator(n) == 2 })
	idle := nameWhere("ti", func(n string) bool { return v.Coordinator(n) == 2 })
	topic := nameWhere("tt", func(n string) bool { return v.Leader(n, 0) == 2 })
	createTopic(t, g1, topic, 1)
	p := txn.Partition{Topic: topic, Partition: 0}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 4
	fc.CoordinatorType = coordinatorTxn
	fc.CoordinatorKeys = []string{id}
	if r := onListener(t, g1, fc).(*kmsg.FindCoordinatorResponse); r.Coordinators[0].ErrorCode != 0 || r.Coordinators[0].NodeID != 2 || r.Coordinators[0].Port != 9093 {
		t.Fatalf("FindCoordinator at gateway 1: %+v, want gateway 2", r.Coordinators[0])
	}
	if r := initAt(t, g1, id, 60000); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("InitProducerId at the gateway not coordinating: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	pid, epoch := txnInit(t, g2, id, 4)
	open := func(g *Gateway, id string, pid int64, epoch int16, seq int32, value string) {
		t.Helper()
		txnAddAt(t, g, id, pid, epoch, topic)
		txnProduceAt(t, g, id, pid, epoch, seq, topic, value)
	}
	open(g2, id, pid, epoch, 0, "committed")
	if r := g2.Txn.End(t.Context(), id, pid, epoch, true, false, false); r.Code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.Code))
	}
	open(g2, id, pid, epoch, 1, "left open")
	ir := initAt(t, g2, idle, 1000)
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId of the idle id: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	open(g2, idle, ir.ProducerID, ir.ProducerEpoch, 0, "abandoned")
	hwm := func() uint64 {
		t.Helper()
		s, err := st.Partition(t.Context(), "kafka", topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s.Next
	}
	if n := hwm(); n != 4 { // a record, its commit marker, two open records
		t.Fatalf("high watermark %d before the handover, want 4", n)
	}

	// Gateway 2 leaves; gateway 1 coordinates both ids and leads the
	// partition, with what gateway 2 stored in etcd.
	nodes[1].Close()
	g1.ClusterChanged(v, nodes[0].View())
	await.True(t, 15*time.Second, "gateway 1 coordinates the ids", func() bool {
		return nodes[0].GroupCode(id) == 0 && nodes[0].GroupCode(idle) == 0
	})
	if r := g2.Txn.End(t.Context(), id, pid, epoch, true, false, false); r.Code == 0 {
		t.Fatal("EndTxn at the gateway that left was answered as done")
	}
	await.True(t, 15*time.Second, "the abandoned transaction aborted at its timeout by gateway 1", func() bool {
		in, ok := g1.Txn.Describe(idle)
		return ok && in.State == txn.CompleteAbort
	})
	in, ok := describeAt(t, g1, id)
	if !ok || in.State != "Ongoing" || in.ProducerID != pid || in.ProducerEpoch != epoch {
		t.Fatalf("gateway 1 describes %+v, want the open transaction of producer %d at epoch %d", in, pid, epoch)
	}
	// A new instance of the producer: the same producer id, its open
	// transaction aborted under one bump, its own epoch the next.
	if r := initAt(t, g1, id, 60000); r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+2 {
		t.Fatalf("InitProducerId at gateway 1: %+v, want producer %d at epoch %d", r, pid, epoch+2)
	}
	if n := hwm(); n != 6 { // and two abort markers
		t.Fatalf("high watermark %d after the handover, want 6", n)
	}
	if lso := g1.Txn.Index.LastStable(p, 6); lso != 6 {
		t.Fatalf("last stable offset %d at gateway 1, want 6 (nothing open)", lso)
	}
}

// initAt is an InitProducerId v4 for id at g with a timeout.
func initAt(t *testing.T, g *Gateway, id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	init.TransactionalID = strp(id)
	init.TransactionTimeoutMillis = timeoutMs
	return do(t, g, init).(*kmsg.InitProducerIDResponse)
}

// describeAt is DescribeTransactions of id at g; ok false when not found.
func describeAt(t *testing.T, g *Gateway, id string) (kmsg.DescribeTransactionsResponseTransactionState, bool) {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	st := do(t, g, req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
	if st.ErrorCode != 0 && st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("DescribeTransactions %s: %v", id, kerr.ErrorForCode(st.ErrorCode))
	}
	return st, st.ErrorCode == 0
}

// newTxnClusterPair is gateways 1 and 2 of one settled cluster over one
// embedded store, transactions (version 1) started, each advertising
// 127.0.0.1:9091+id.
func newTxnClusterPair(t *testing.T) (nodes []*cluster.Node, st bridge.Backend, g1, g2 *Gateway) {
	t.Helper()
	nodes = joinSettled(t, 9092, 9093)
	st = openEmbedded(t, t.TempDir())
	gw := func(i int) *Gateway {
		g := newGatewayOn(t, st, noAutoCreate, func(c *Config) {
			c.Cluster, c.NodeID, c.AdvertisedPort = nodes[i], int32(i+1), 9092+int32(i)
			c.Transactions = TxnConfig{Enabled: true, Version: 1, CheckInterval: 50 * time.Millisecond}
		})
		if err := g.StartTransactions(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.CloseTransactions)
		return g
	}
	return nodes, st, gw(0), gw(1)
}

// txnAddAt adds partition 0 of each topic to id's transaction at g
// (AddPartitionsToTxn v3, as a client of transaction.version 1).
func txnAddAt(t *testing.T, g *Gateway, id string, pid int64, epoch int16, topics ...string) {
	t.Helper()
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	for _, topic := range topics {
		at := kmsg.NewAddPartitionsToTxnRequestTopic()
		at.Topic, at.Partitions = topic, []int32{0}
		add.Topics = append(add.Topics, at)
	}
	ar := do(t, g, add).(*kmsg.AddPartitionsToTxnResponse)
	for _, rt := range ar.Topics {
		if ar.ErrorCode != 0 || rt.Partitions[0].ErrorCode != 0 {
			t.Fatalf("AddPartitionsToTxn: %+v", ar)
		}
	}
}

// txnProduceAt writes one transactional record to topic's partition 0 at g.
func txnProduceAt(t *testing.T, g *Gateway, id string, pid int64, epoch int16, seq int32, topic, value string) {
	t.Helper()
	req := produceReq(9, topic, 0, txnBatch(pid, epoch, seq, value))
	req.TransactionID = strp(id)
	if pr := produceOne(t, g, req); pr.ErrorCode != 0 {
		t.Fatalf("transactional produce to %s: %v", topic, kerr.ErrorForCode(pr.ErrorCode))
	}
}

// committedView is a read_committed Fetch of topic's partition 0 at g:
// its high watermark, last stable offset and aborted transactions' producers.
func committedView(t *testing.T, g *Gateway, topic string) (hwm, lso int64, aborted []int64) {
	t.Helper()
	req := fetchReq(11, topic, 0, 0)
	req.IsolationLevel = 1
	rp := do(t, g, req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		t.Fatalf("read_committed fetch of %s: %v", topic, kerr.ErrorForCode(rp.ErrorCode))
	}
	for _, a := range rp.AbortedTransactions {
		aborted = append(aborted, a.ProducerID)
	}
	return rp.HighWatermark, rp.LastStableOffset, aborted
}

// A transaction whose partitions are led by the other gateway than its
// coordinator: the coordinator has each leader write its markers (a
// request in etcd, served by the leader's watch), EndTxn answers once
// they are written, and the leader's readers see the truth: the last
// stable offset held while the transaction is open and moved past its
// marker after, an aborted transaction listed for read_committed readers.
// No marker request is left in etcd.
func TestTxnClusterMarkersAtTheLeaders(t *testing.T) {
	t.Parallel()
	nodes, _, g1, g2 := newTxnClusterPair(t)
	v := nodes[0].View()
	id := nameWhere("mc", func(n string) bool { return v.Coordinator(n) == 2 })
	far := nameWhere("mf", func(n string) bool { return v.Leader(n, 0) == 1 })
	near := nameWhere("mn", func(n string) bool { return v.Leader(n, 0) == 2 })
	createTopic(t, g1, far, 1)
	createTopic(t, g1, near, 1)
	pid, epoch := txnInit(t, g2, id, 4)

	txnAddAt(t, g2, id, pid, epoch, far, near)
	txnProduceAt(t, g1, id, pid, epoch, 0, far, "c1")
	txnProduceAt(t, g2, id, pid, epoch, 0, near, "c2")
	if hwm, lso, _ := committedView(t, g1, far); hwm != 1 || lso != 0 {
		t.Fatalf("open transaction at the far leader: high watermark %d, last stable %d; want 1 and 0", hwm, lso)
	}
	if r := g2.Txn.End(t.Context(), id, pid, epoch, true, false, false); r.Code != 0 {
		t.Fatalf("EndTxn commit: %v", kerr.ErrorForCode(r.Code))
	}
	for _, x := range []struct {
		g     *Gateway
		topic string
	}{{g1, far}, {g2, near}} {
		if hwm, lso, ab := committedView(t, x.g, x.topic); hwm != 2 || lso != 2 || len(ab) != 0 {
			t.Fatalf("after the commit, %s: high watermark %d, last stable %d, aborted %v; want 2, 2, none", x.topic, hwm, lso, ab)
		}
	}

	// A batch after its transaction ended, at a leader that does not
	// coordinate it: checked against the coordinator's state in etcd.
	late := produceReq(9, far, 0, txnBatch(pid, epoch, 1, "late"))
	late.TransactionID = strp(id)
	if pr := produceOne(t, g1, late); pr.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("a batch after the commit at the far leader: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(pr.ErrorCode))
	}
	txnAddAt(t, g2, id, pid, epoch, far)
	txnProduceAt(t, g1, id, pid, epoch, 1, far, "a1")
	if r := g2.Txn.End(t.Context(), id, pid, epoch, false, false, false); r.Code != 0 {
		t.Fatalf("EndTxn abort: %v", kerr.ErrorForCode(r.Code))
	}
	if hwm, lso, ab := committedView(t, g1, far); hwm != 4 || lso != 4 || len(ab) != 1 || ab[0] != pid {
		t.Fatalf("after the abort: high watermark %d, last stable %d, aborted %v; want 4, 4, [%d]", hwm, lso, ab, pid)
	}
	left := 0
	if err := nodes[0].ScanState(t.Context(), txnMarkPrefix, func(string, []byte, int64) { left++ }); err != nil || left != 0 {
		t.Fatalf("%d marker requests left in etcd (%v)", left, err)
	}
}

// FuzzMarkRequest: a marker request's or a relayed TxnOffsetCommit's key
// and value, as read from etcd, either parse or are refused, never panic;
// a value that parses encodes back to the same bytes.
func FuzzMarkRequest(f *testing.F) {
	f.Add("txnmark/orders/3/42", markRequest{epoch: 2, coordEpoch: 9, commit: true, from: 17}.encode())
	f.Add("txnmark/a/b/c", []byte{1, 0})
	f.Add("txnmark//0/1", []byte{})
	f.Add(offsKey("tx", "g"), offsRelay{pid: 7, epoch: 1, implicit: true, group: "g",
		offs: []txn.Offset{{Partition: txn.Partition{Topic: "t", Partition: 2}, Offset: 9, LeaderEpoch: -1, Metadata: "m"}}}.encode())
	f.Add(offsKey("tx", "g"), offsRelay{answered: true, code: 48}.encode())
	f.Fuzz(func(t *testing.T, key string, v []byte) {
		if p, pid, ok := parseMarkKey(key); ok && markKey(p, pid) != key {
			q, qpid, ok2 := parseMarkKey(markKey(p, pid))
			if !ok2 || q != p || qpid != pid {
				t.Fatalf("%q parsed as %+v/%d, which does not read back", key, p, pid)
			}
		}
		if m, ok := parseMarkRequest(v); ok && string(m.encode()) != string(v) {
			t.Fatalf("%x parsed as %+v, encoded as %x", v, m, m.encode())
		}
		parseOffsKey(key)
		if r, ok := parseOffsRelay(v); ok {
			if again, ok := parseOffsRelay(r.encode()); !ok || again.answered != r.answered || again.code != r.code || again.pid != r.pid || again.group != r.group || len(again.offs) != len(r.offs) {
				t.Fatalf("%x parsed as %+v, which does not read back", v, r)
			}
		}
	})
}

// A partition whose leader leaves in the middle of a transaction: the
// gateway that takes it over holds its last stable offset for the open
// transaction (read from the coordinator's state in etcd, since it never
// saw the transaction's records arrive), refuses read_committed reads
// until it has loaded that, and moves the offset past the marker it
// writes at the commit.
func TestTxnClusterLeaderHandoverKeepsOpenTransaction(t *testing.T) {
	t.Parallel()
	nodes, _, g1, g2 := newTxnClusterPair(t)
	v := nodes[0].View()
	id := nameWhere("hc", func(n string) bool { return v.Coordinator(n) == 2 })
	far := nameWhere("hf", func(n string) bool { return v.Leader(n, 0) == 1 })
	createTopic(t, g1, far, 1)
	if p := produceOne(t, g1, produceReq(9, far, 0, idemBatch(4242, 0, 0, 1, "before"))); p.ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	pid, epoch := txnInit(t, g2, id, 4)
	txnAddAt(t, g2, id, pid, epoch, far)
	txnProduceAt(t, g1, id, pid, epoch, 0, far, "open")
	if hwm, lso, _ := committedView(t, g1, far); hwm != 2 || lso != 1 {
		t.Fatalf("at the first leader: high watermark %d, last stable %d; want 2 and 1", hwm, lso)
	}

	old := nodes[1].View()
	nodes[0].Close()
	await.True(t, 15*time.Second, "gateway 2 serves the partition", func() bool { return nodes[1].Serves(far, 0) })
	g2.ClusterChanged(old, nodes[1].View())
	await.True(t, 15*time.Second, "gateway 2 loaded the partitions' transactions", g2.Txn.Ready)
	if hwm, lso, _ := committedView(t, g2, far); hwm != 2 || lso > 1 {
		t.Fatalf("at the new leader: high watermark %d, last stable %d; want 2 and at most 1", hwm, lso)
	}
	if r := g2.Txn.End(t.Context(), id, pid, epoch, true, false, false); r.Code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.Code))
	}
	if hwm, lso, _ := committedView(t, g2, far); hwm != 3 || lso != 3 {
		t.Fatalf("after the commit: high watermark %d, last stable %d; want 3 and 3", hwm, lso)
	}
}

// TxnOffsetCommit at a group's coordinator that is not the transaction's:
// the offsets are relayed to the transaction's coordinator (its checks
// answer), held there with its state, unstable for require_stable readers
// at the group's coordinator while the transaction is open, and applied
// at the commit. The other gateway refuses the group (NOT_COORDINATOR).
func TestTxnClusterOffsetsRelayed(t *testing.T) {
	t.Parallel()
	nodes, _, g1, g2 := newTxnClusterPair(t)
	v := nodes[0].View()
	id := nameWhere("oc", func(n string) bool { return v.Coordinator(n) == 2 })
	grp := nameWhere("og", func(n string) bool { return v.Coordinator(n) == 1 })
	createTopic(t, g1, "oin", 1)
	pid, epoch := txnInit(t, g2, id, 4)
	commit := func(g *Gateway, epoch int16, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 3
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = id, grp, pid, epoch
		req.Generation, req.MemberID = -1, ""
		ct := kmsg.NewTxnOffsetCommitRequestTopic()
		ct.Topic = "oin"
		cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = 0, offset
		ct.Partitions = append(ct.Partitions, cp)
		req.Topics = append(req.Topics, ct)
		return do(t, g, req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(g1, epoch, 7); code != kerr.InvalidTxnState.Code {
		t.Fatalf("offsets of a group not added to the transaction: %v, want INVALID_TXN_STATE from its coordinator", kerr.ErrorForCode(code))
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.Version = 3
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, grp
	if r := do(t, g2, add).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if code := commit(g2, epoch, 7); code != kerr.NotCoordinator.Code {
		t.Fatalf("TxnOffsetCommit at the gateway not coordinating the group: %v", kerr.ErrorForCode(code))
	}
	if code := commit(g1, epoch+1, 7); code != kerr.ProducerFenced.Code && code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TxnOffsetCommit of a wrong epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit(g1, epoch, 7); code != 0 {
		t.Fatalf("TxnOffsetCommit relayed: %v", kerr.ErrorForCode(code))
	}
	fetch := func() kmsg.OffsetFetchResponseTopicPartition {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group, req.RequireStable = grp, true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "oin", []int32{0}
		req.Topics = append(req.Topics, rt)
		return do(t, g1, req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
	}
	if p := fetch(); p.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable at the group's coordinator while the transaction is open: %+v", p)
	}
	if r := g2.Txn.End(t.Context(), id, pid, epoch, true, false, false); r.Code != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.Code))
	}
	if p := fetch(); p.ErrorCode != 0 || p.Offset != 7 {
		t.Fatalf("after the commit: %+v, want offset 7", p)
	}
	left := 0
	if err := nodes[0].ScanState(t.Context(), txnOffsPrefix, func(string, []byte, int64) { left++ }); err != nil || left != 0 {
		t.Fatalf("%d relayed commits left in etcd (%v)", left, err)
	}
}
