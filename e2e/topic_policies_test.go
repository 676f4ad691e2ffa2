package e2e

// Topic configs that decide what Produce does with a batch: a compacted
// topic refuses records without a key (KIP-467 record errors), and
// message.timestamp.type=LogAppendTime stamps the append time into every
// batch. On whichever backend the pass runs (e2e/backend_test.go).

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// librdkafka (confluent-kafka-python) producing keyless records to a
// compacted topic gets INVALID_RECORD per message; keyed records and
// tombstones are stored.
func TestCompactedTopicKeylessPython(t *testing.T) {
	t.Parallel()
	py := needPython(t, "confluent_kafka", "python3-confluent-kafka")
	gw := startGateway(t)
	runClientCheck(t, py, "python/compact_keys_check.py", gw.Addr, "compact-py", "compact-py-group", []string{
		"create_topics compact and compact,delete",
		"keyless record refused: INVALID_RECORD",
		"keyed records and a tombstone stored at 0..2",
		"mixed batch refused whole; stored 4 records",
		"alter_configs cleanup.policy=delete: keyless record stored at 4",
	})
}

// The Produce answer on the wire: INVALID_RECORD with one record error per
// keyless record and Kafka's partition error message, which shows the
// first three; nothing of the batch is stored.
func TestCompactedTopicRecordErrors(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	cl := newClient(t, gw.Addr)
	ctx := adminCtx(t)
	compact := "compact"
	if r, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, "compact-wire"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	// v11, the last version naming topics by name, on a connection of its
	// own (a client picks the newest version).
	resp := dialWire(t, gw.Addr).roundTrip(produceReq("compact-wire", recordBatch(-1, 0, "a", "b", "c", "d")), 11, 1).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	recErr := func(i int) string {
		return fmt.Sprintf("RecordError(batchIndex=%d, message='Compacted topic cannot accept message without key in topic partition compact-wire-0')", i)
	}
	wantMsg := "One or more records have been rejected due to 4 record errors in total, and only showing the first three errors at most: [" +
		recErr(0) + ", " + recErr(1) + ", " + recErr(2) + "]"
	if p.ErrorCode != kerr.InvalidRecord.Code || p.BaseOffset != -1 || p.ErrorMessage == nil || *p.ErrorMessage != wantMsg {
		t.Errorf("produce: code %d base %d message %v\nwant code %d message %q", p.ErrorCode, p.BaseOffset, deref(p.ErrorMessage), kerr.InvalidRecord.Code, wantMsg)
	}
	if len(p.ErrorRecords) != 4 {
		t.Fatalf("%d record errors, want 4: %+v", len(p.ErrorRecords), p.ErrorRecords)
	}
	for i, e := range p.ErrorRecords {
		want := "Compacted topic cannot accept message without key in topic partition compact-wire-0"
		if e.RelativeOffset != int32(i) || e.ErrorMessage == nil || *e.ErrorMessage != want {
			t.Errorf("record error %d: %d %v", i, e.RelativeOffset, deref(e.ErrorMessage))
		}
	}
	// A keyed record is taken, at offset 0: nothing of the refused batch
	// was stored.
	r := &kgo.Record{Topic: "compact-wire", Key: []byte("k"), Value: []byte("v")}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil || r.Offset != 0 {
		t.Fatalf("keyed record: offset %d, %v", r.Offset, err)
	}
}

// A topic made by kafka-topics with message.timestamp.type=LogAppendTime:
// librdkafka's delivery reports and consumer see the append time with type
// LogAppendTime, and offsets_for_times searches by it. Altering a
// CreateTime topic to LogAppendTime applies from the next batch.
func TestLogAppendTimePython(t *testing.T) {
	t.Parallel()
	py := needPython(t, "confluent_kafka", "python3-confluent-kafka")
	needJava(t)
	gw := startGateway(t)
	out, _ := kafkaTool(t, gw.Addr, "org.apache.kafka.tools.TopicCommand", "--create", "--topic", "lat-py",
		"--partitions", "1", "--config", "message.timestamp.type=LogAppendTime")
	if !strings.Contains(out, "Created topic lat-py") {
		t.Errorf("kafka-topics --create: %s", out)
	}
	runClientCheck(t, py, "python/log_append_time_check.py", gw.Addr, "lat-py", "lat-py-group", []string{
		"delivery reports LogAppendTime",
		"consumed 3 with LogAppendTime",
		"offsets_for_times by append time",
		"alter_configs LogAppendTime: CreateTime before, LogAppendTime after",
	})
}
