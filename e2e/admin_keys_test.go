package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go's kadm grows a topic; the count is refused when it would not
// grow; Metadata shows the new partitions at once and they take records.
func TestKadmCreatePartitions(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "cp-kadm", 2)
	adm := kadm.NewClient(cl)
	ctx := adminCtx(t)

	if rs, err := adm.ValidateCreatePartitions(ctx, 3, "cp-kadm"); err != nil || rs["cp-kadm"].Err != nil {
		t.Fatalf("validate: %v %+v", err, rs)
	}
	if n := partitionsOf(t, gw.Addr, "cp-kadm"); n != 2 {
		t.Fatalf("validate_only changed the count to %d", n)
	}
	rs, err := adm.CreatePartitions(ctx, 3, "cp-kadm")
	if err != nil || rs["cp-kadm"].Err != nil {
		t.Fatalf("create partitions: %v %+v", err, rs)
	}
	if n := partitionsOf(t, gw.Addr, "cp-kadm"); n != 5 {
		t.Fatalf("%d partitions after adding 3 to 2", n)
	}
	rs, err = adm.UpdatePartitions(ctx, 4, "cp-kadm")
	if err != nil || !errors.Is(rs["cp-kadm"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrink: %v %+v", err, rs)
	}
	// The new partitions take records and give them back.
	var recs []*kgo.Record
	for p := int32(0); p < 5; p++ {
		recs = append(recs, &kgo.Record{Topic: "cp-kadm", Partition: p, Value: fmt.Appendf(nil, "p%d", p)})
	}
	pcl := newClient(t, gw.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceAll(t, pcl, recs)
	sameRecs(t, want, consumeN(t, gw.Addr, "cp-kadm", 5))
}

// DeleteRecords through kadm: the low watermark moves, ListOffsets
// earliest follows, a consumer from the start begins there, one below it
// resets to it (auto.offset.reset=earliest), -1 is the high watermark, and
// an offset past it is OFFSET_OUT_OF_RANGE.
func TestKadmDeleteRecords(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "dr-kadm", 2)
	adm := kadm.NewClient(cl)
	recs := append(valueRecords("dr-kadm", 20), &kgo.Record{Topic: "dr-kadm", Partition: 1, Value: []byte("other")})
	pcl := newClient(t, gw.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	all := produceAll(t, pcl, recs)
	ctx := adminCtx(t)

	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "dr-kadm", Partition: 0, At: 8})
	os.Add(kadm.Offset{Topic: "dr-kadm", Partition: 1, At: 5})
	dr, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("dr-kadm", 0); r.Err != nil || r.LowWatermark != 8 {
		t.Fatalf("partition 0: %+v", r)
	}
	if r, _ := dr.Lookup("dr-kadm", 1); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("past the high watermark: %+v", r)
	}
	if o := startOffset(t, cl, "dr-kadm"); o != 8 {
		t.Fatalf("earliest after delete: %d", o)
	}
	var want []rec
	for _, r := range all {
		if r.Partition == 1 || r.Offset >= 8 {
			want = append(want, r)
		}
	}
	sameRecs(t, want, consumeN(t, gw.Addr, "dr-kadm", len(want)))

	// A consumer asking for offset 3 is out of range and resets to the start.
	ccl := newClient(t, gw.Addr,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"dr-kadm": {0: kgo.NewOffset().At(3)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first int64 = -1
	for first < 0 {
		fs := ccl.PollFetches(pctx)
		if pctx.Err() != nil {
			t.Fatal("no record after the reset")
		}
		fs.EachRecord(func(r *kgo.Record) {
			if first < 0 {
				first = r.Offset
			}
		})
	}
	if first != 8 {
		t.Fatalf("a consumer below the start resumed at %d, want 8", first)
	}

	os = nil
	os.Add(kadm.Offset{Topic: "dr-kadm", Partition: 0, At: -1})
	if dr, err = adm.DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("dr-kadm", 0); r.Err != nil || r.LowWatermark != 20 {
		t.Fatalf("delete to the high watermark: %+v", r)
	}
}

// DescribeAllLogDirs: one broker, one dir, every partition with a size.
func TestKadmDescribeLogDirs(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "ld-kadm", 2)
	adm := kadm.NewClient(cl)
	produceAll(t, newClient(t, gw.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner())),
		[]*kgo.Record{{Topic: "ld-kadm", Partition: 1, Value: make([]byte, 2000)}})
	all, err := adm.DescribeAllLogDirs(adminCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d brokers", len(all))
	}
	for _, dirs := range all {
		if err := dirs.Error(); err != nil || len(dirs) != 1 {
			t.Fatalf("dirs: %+v %v", dirs, err)
		}
		p1, ok := dirs.LookupPartition("ld-kadm", 1)
		if !ok || p1.Size < 2000 {
			t.Fatalf("partition 1 holding 2000 bytes: %+v %v", p1, ok)
		}
		if _, ok := dirs.LookupPartition("ld-kadm", 0); !ok {
			t.Fatal("empty partition 0 not listed")
		}
	}
}

// DescribeProducers lists the idempotent producer franz-go used, with its
// last sequence.
func TestKadmDescribeProducers(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := clientWithTopic(t, gw.Addr, "dp-kadm", 1, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	produceAll(t, cl, valueRecords("dp-kadm", 7))
	pid, epoch, err := cl.ProducerID(adminCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := adm.DescribeProducers(adminCtx(t), kadm.TopicsSet{"dp-kadm": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ps := ds.SortedProducers()
	if len(ps) != 1 || ps[0].ProducerID != pid || ps[0].ProducerEpoch != epoch || ps[0].LastSequence != 6 ||
		ps[0].CurrentTxnStartOffset != -1 || ps[0].LastTimestamp <= 0 {
		t.Fatalf("producers %+v, want id %d epoch %d last sequence 6", ps, pid, epoch)
	}
}

// No quotas and no transactions: empty answers, not errors.
func TestKadmQuotasTransactions(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := newClient(t, gw.Addr)
	adm := kadm.NewClient(cl)
	ctx := adminCtx(t)
	qs, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(qs) != 0 {
		t.Fatalf("quotas: %+v %v", qs, err)
	}
	ts, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil || len(ts) != 0 {
		t.Fatalf("transactions: %+v %v", ts, err)
	}
	// kadm finds a transaction coordinator first, which the gateway
	// refuses; the request itself goes straight to the broker here.
	bs, err := adm.ListBrokers(ctx)
	if err != nil || len(bs) != 1 {
		t.Fatalf("brokers: %+v %v", bs, err)
	}
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"no-such-txn"}
	kresp, err := cl.Broker(int(bs[0].NodeID)).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 || resp.TransactionStates[0].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe transactions: %+v", resp.TransactionStates)
	}
}

// The gateway binary, restarted (kill -9) after DeleteRecords and
// CreatePartitions: the log start and the partition count hold, new
// records continue the offsets, and a consumer from the start begins at
// the log start.
func TestDeleteRecordsCreatePartitionsSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gw := spawnGateway(t, dir)
	cl := filledTopic(t, gw.Addr, "dr-restart", 10)
	adm := kadm.NewClient(cl)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "dr-restart", Partition: 0, At: -1}) // everything
	if dr, err := adm.DeleteRecords(adminCtx(t), os); err != nil {
		t.Fatal(err)
	} else if r, _ := dr.Lookup("dr-restart", 0); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("delete all: %+v", r)
	}
	if rs, err := adm.UpdatePartitions(adminCtx(t), 2, "dr-restart"); err != nil || rs["dr-restart"].Err != nil {
		t.Fatalf("grow: %v %+v", err, rs)
	}
	cl.Close()
	gw.Kill()

	gw2 := spawnGateway(t, dir)
	if n := partitionsOf(t, gw2.Addr, "dr-restart"); n != 2 {
		t.Fatalf("%d partitions after the restart, want 2", n)
	}
	cl2 := newClient(t, gw2.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if o := startOffset(t, cl2, "dr-restart"); o != 10 {
		t.Fatalf("log start after the restart: %d", o)
	}
	more := produceAll(t, cl2, []*kgo.Record{{Topic: "dr-restart", Value: []byte("after")}})
	if more[0].Offset != 10 {
		t.Fatalf("a record after delete-all and restart got offset %d, want 10", more[0].Offset)
	}
	sameRecs(t, more, consumeN(t, gw2.Addr, "dr-restart", 1))
	gw2.Stop()
}
