package handlers

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createPartitionsReq(v int16, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version, req.ValidateOnly, req.Topics = v, validateOnly, topics
	return req
}

func cpTopic(name string, count int32, assign ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = name, count
	for _, a := range assign {
		ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
		ra.Replicas = a
		t.Assignment = append(t.Assignment, ra)
	}
	return t
}

func metadataPartitions(t *testing.T, g *Gateway, topic string) int {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = strp(topic)
	req.Topics = append(req.Topics, mt)
	resp := do(t, g, req).(*kmsg.MetadataResponse)
	return len(resp.Topics[0].Partitions)
}

func TestCreatePartitions(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "cp", 2)
	produceOne(t, g, produceReq(9, "cp", 1, batch(rec{value: []byte("kept")})))
	cases := []struct {
		name  string
		v     int16
		only  bool
		topic kmsg.CreatePartitionsRequestTopic
		code  int16
		msg   string
		after int
	}{
		{"fewer", 3, false, cpTopic("cp", 1), kerr.InvalidPartitions.Code, "currently has 2 partitions, which is higher than the requested 1", 2},
		{"same", 0, false, cpTopic("cp", 2), kerr.InvalidPartitions.Code, "already has 2 partitions", 2},
		{"too many", 3, false, cpTopic("cp", 1001), kerr.InvalidPartitions.Code, "at most 1000", 2},
		{"unknown", 3, false, cpTopic("nope", 4), kerr.UnknownTopicOrPartition.Code, "", 2},
		{"bad name", 3, false, cpTopic("a/b", 4), kerr.UnknownTopicOrPartition.Code, "", 2},
		{"assignment count", 3, false, cpTopic("cp", 4, []int32{1}), kerr.InvalidReplicaAssignment.Code, "by 2 but 1", 2},
		{"assignment broker", 3, false, cpTopic("cp", 3, []int32{2}), kerr.InvalidReplicaAssignment.Code, "one broker", 2},
		{"validate only", 3, true, cpTopic("cp", 5), 0, "", 2},
		{"grow", 1, false, cpTopic("cp", 3), 0, "", 3},
		{"grow with assignment", 3, false, cpTopic("cp", 5, []int32{1}, []int32{1}), 0, "", 5},
	}
	for _, tc := range cases {
		resp := do(t, g, createPartitionsReq(tc.v, tc.only, tc.topic)).(*kmsg.CreatePartitionsResponse)
		rt := resp.Topics[0]
		msg := ""
		if rt.ErrorMessage != nil {
			msg = *rt.ErrorMessage
		}
		if rt.ErrorCode != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: code %d %q, want %d %q", tc.name, rt.ErrorCode, msg, tc.code, tc.msg)
		}
		if n := metadataPartitions(t, g, "cp"); n != tc.after {
			t.Errorf("%s: %d partitions after, want %d", tc.name, n, tc.after)
		}
	}
	// Duplicates: both entries refused, nothing changed.
	resp := do(t, g, createPartitionsReq(3, false, cpTopic("cp", 7), cpTopic("cp", 8))).(*kmsg.CreatePartitionsResponse)
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("duplicate: code %d", rt.ErrorCode)
		}
	}
	// The old partition kept its record; a new one takes writes.
	if got := fetchFrom(t, g, "cp", 1, 0); len(got) != 1 {
		t.Fatalf("kept partition: %v", got)
	}
	if p := produceOne(t, g, produceReq(9, "cp", 4, batch(rec{value: []byte("new")}))); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce to new partition: %+v", p)
	}
}

func deleteRecordsReq(v int16, topic string, parts map[int32]int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version = v
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for p, o := range parts {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestDeleteRecords(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "dr", 2)
	for range 5 {
		produceOne(t, g, produceReq(9, "dr", 0, batch(rec{value: []byte("a")}, rec{value: []byte("b")})))
	}
	produceOne(t, g, produceReq(9, "dr", 1, batch(rec{value: []byte("c")})))
	one := func(v int16, p int32, off int64) kmsg.DeleteRecordsResponseTopicPartition {
		resp := do(t, g, deleteRecordsReq(v, "dr", map[int32]int64{p: off})).(*kmsg.DeleteRecordsResponse)
		return resp.Topics[0].Partitions[0]
	}
	if r := one(2, 0, 11); r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("above hwm: %+v", r)
	}
	if r := one(2, 0, -2); r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("-2: %+v", r)
	}
	if r := one(2, 7, 0); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %+v", r)
	}
	if r := one(0, 0, 3); r.ErrorCode != 0 || r.LowWatermark != 3 {
		t.Fatalf("delete to 3: %+v", r)
	}
	if r := one(1, 0, 1); r.ErrorCode != 0 || r.LowWatermark != 3 {
		t.Fatalf("a lower offset moved the start back: %+v", r)
	}
	// Fetch below the start is out of range; from it, records come.
	fr := do(t, g, fetchReq(12, "dr", 0, 2)).(*kmsg.FetchResponse)
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 3 {
		t.Fatalf("fetch below start: code %d lso %d", p.ErrorCode, p.LogStartOffset)
	}
	if got := fetchFrom(t, g, "dr", 0, 3); len(got) != 7 || got[0].offset != 3 {
		t.Fatalf("fetch from start: %v", got)
	}
	lo := do(t, g, listOffsetsReq(11, "dr", 0, -2)).(*kmsg.ListOffsetsResponse)
	if p := lo.Topics[0].Partitions[0]; p.Offset != 3 {
		t.Fatalf("earliest after delete: %d", p.Offset)
	}
	lo = do(t, g, listOffsetsReq(11, "dr", 0, 0)).(*kmsg.ListOffsetsResponse)
	if p := lo.Topics[0].Partitions[0]; p.Offset != 3 {
		t.Fatalf("by time after delete: %d", p.Offset)
	}
	// -1 is the high watermark; both partitions in one request.
	resp := do(t, g, deleteRecordsReq(2, "dr", map[int32]int64{0: -1, 1: -1})).(*kmsg.DeleteRecordsResponse)
	for _, p := range resp.Topics[0].Partitions {
		want := map[int32]int64{0: 10, 1: 1}[p.Partition]
		if p.ErrorCode != 0 || p.LowWatermark != want {
			t.Errorf("delete to hwm: %+v want %d", p, want)
		}
	}
	// A partition named twice in one request: refused, not applied.
	req := deleteRecordsReq(2, "dr", map[int32]int64{0: 10})
	req.Topics = append(req.Topics, req.Topics[0])
	resp = do(t, g, req).(*kmsg.DeleteRecordsResponse)
	if c := resp.Topics[1].Partitions[0].ErrorCode; c != kerr.InvalidRequest.Code {
		t.Errorf("duplicate partition: %d", c)
	}
	if r := do(t, g, deleteRecordsReq(2, "missing", map[int32]int64{0: 0})).(*kmsg.DeleteRecordsResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %+v", r.Topics[0].Partitions[0])
	}
}

func TestDescribeLogDirs(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "ld", 2)
	createTopic(t, g, "other", 1)
	produceOne(t, g, produceReq(9, "ld", 1, batch(rec{value: make([]byte, 500)})))
	for _, v := range []int16{1, 4} {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		resp := do(t, g, req).(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 || resp.Dirs[0].Dir != "iggy:kafka" {
			t.Fatalf("v%d dirs: %+v", v, resp.Dirs)
		}
		d := resp.Dirs[0]
		if len(d.Topics) != 2 || d.Topics[0].Topic != "ld" || len(d.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d topics: %+v", v, d.Topics)
		}
		if p := d.Topics[0].Partitions[1]; p.Size < 500 {
			t.Errorf("v%d size of a partition holding 500 bytes: %d", v, p.Size)
		}
		if v == 4 && (d.TotalBytes != -1 || d.UsableBytes != -1) {
			t.Errorf("v4 volume bytes: %d %d", d.TotalBytes, d.UsableBytes)
		}
	}
	// Named: unknown topics and partitions left out, duplicates once.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	for _, rt := range []struct {
		topic string
		parts []int32
	}{{"ld", []int32{1, 5, 1}}, {"nope", []int32{0}}} {
		t := kmsg.NewDescribeLogDirsRequestTopic()
		t.Topic, t.Partitions = rt.topic, rt.parts
		req.Topics = append(req.Topics, t)
	}
	resp := do(t, g, req).(*kmsg.DescribeLogDirsResponse)
	d := resp.Dirs[0]
	if len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 || d.Topics[0].Partitions[0].Partition != 1 {
		t.Fatalf("named: %+v", d.Topics)
	}
}

func TestDescribeProducers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g, closeStore := gatewayAt(t, dir)
	createTopic(t, g, "dp", 1)
	if p := produceIdem(t, g, "dp", idemBatch(1000, 2, 0, 3, "a")); p.ErrorCode != 0 {
		t.Fatal(p)
	}
	if p := produceIdem(t, g, "dp", idemBatch(1000, 2, 3, 2, "b")); p.ErrorCode != 0 {
		t.Fatal(p)
	}
	if p := produceIdem(t, g, "dp", idemBatch(77, 0, 0, 1, "c")); p.ErrorCode != 0 {
		t.Fatal(p)
	}
	describe := func(g *Gateway, parts ...int32) kmsg.DescribeProducersResponseTopic {
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "dp", parts
		req.Topics = append(req.Topics, rt)
		return do(t, g, req).(*kmsg.DescribeProducersResponse).Topics[0]
	}
	check := func(what string, rt kmsg.DescribeProducersResponseTopic, live bool) {
		t.Helper()
		ps := rt.Partitions[0].ActiveProducers
		if rt.Partitions[0].ErrorCode != 0 || len(ps) != 2 {
			t.Fatalf("%s: %+v", what, rt.Partitions[0])
		}
		if ps[0].ProducerID != 77 || ps[0].ProducerEpoch != 0 || ps[0].LastSequence != 0 ||
			ps[1].ProducerID != 1000 || ps[1].ProducerEpoch != 2 || ps[1].LastSequence != 4 {
			t.Errorf("%s: %+v", what, ps)
		}
		for _, p := range ps {
			if p.CoordinatorEpoch != -1 || p.CurrentTxnStartOffset != -1 || (p.LastTimestamp > 0) != live {
				t.Errorf("%s: %+v", what, p)
			}
		}
	}
	rt := describe(g, 0, 3)
	check("live", rt, true)
	if rt.Partitions[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: %+v", rt.Partitions[1])
	}
	// After a restart the state is rebuilt from the store.
	closeStore()
	g2, _ := gatewayAt(t, dir)
	check("rebuilt", describe(g2, 0), false)
}

func TestNoQuotasNoTransactions(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	q := kmsg.NewPtrDescribeClientQuotasRequest()
	q.Version = 1
	qr := do(t, g, q).(*kmsg.DescribeClientQuotasResponse)
	if qr.ErrorCode != 0 || qr.Entries == nil || len(qr.Entries) != 0 {
		t.Errorf("quotas: %+v", qr)
	}
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.Version = 2
	lt.StateFilters = []string{"Ongoing", "Bogus"}
	lr := do(t, g, lt).(*kmsg.ListTransactionsResponse)
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 0 || len(lr.UnknownStateFilters) != 1 || lr.UnknownStateFilters[0] != "Bogus" {
		t.Errorf("list transactions: %+v", lr)
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"a", "b"}
	dr := do(t, g, dt).(*kmsg.DescribeTransactionsResponse)
	if len(dr.TransactionStates) != 2 {
		t.Fatalf("describe transactions: %+v", dr)
	}
	for i, s := range dr.TransactionStates {
		if s.ErrorCode != kerr.TransactionalIDNotFound.Code || s.TransactionalID != dt.TransactionalIDs[i] || s.ProducerID != -1 {
			t.Errorf("describe transactions %d: %+v", i, s)
		}
	}
	// Without --transactions enabled the transaction keys are neither
	// advertised nor answered: a request closes the connection.
	for _, k := range []int16{24, 25, 26, 27, 28} {
		for _, ak := range g.apiKeys {
			if ak.ApiKey == k {
				t.Errorf("transaction key %d advertised", k)
			}
		}
		req := kmsg.RequestForKey(k)
		req.SetVersion(Lookup(k).MinVersion)
		if _, err := Lookup(k).Handle(newCall(g, k, req.GetVersion()), req); err == nil {
			t.Errorf("transaction key %d answered", k)
		}
	}
}

// fetchFrom reads one partition from offset (one Fetch).
func fetchFrom(tb testing.TB, g *Gateway, topic string, partition int32, offset int64) []fetched {
	tb.Helper()
	resp := do(tb, g, fetchReq(12, topic, partition, offset)).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		tb.Fatalf("fetch %s/%d from %d: code %d", topic, partition, offset, p.ErrorCode)
	}
	var out []fetched
	for _, r := range readRecords(tb, p.RecordBatches) {
		if r.offset >= offset {
			out = append(out, r)
		}
	}
	return out
}
