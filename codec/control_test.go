package codec

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAppendTxnMarker(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{false, true} {
		m := TxnMarker{ProducerID: 0x0102030405, Epoch: 7, Commit: commit, CoordinatorEpoch: 42, TimestampMs: 1_700_000_000_123}
		b := AppendTxnMarker([]byte("prefix"), 99, m)[len("prefix"):]
		rb, n, err := ParseBatch(b)
		if err != nil || n != len(b) {
			t.Fatalf("ParseBatch: %v (%d of %d)", err, n, len(b))
		}
		if !rb.IsControl() || !rb.IsTransactional() || rb.Attributes != 0x30 || rb.ProducerID != m.ProducerID ||
			rb.ProducerEpoch != 7 || rb.BaseSequence != -1 || rb.BaseOffset != 99 || rb.NumRecords != 1 ||
			rb.FirstTimestamp != m.TimestampMs || rb.MaxTimestamp != m.TimestampMs || rb.LastOffsetDelta != 0 {
			t.Fatalf("marker batch header %+v", rb)
		}
		// What a client reads: kmsg's control key and end-transaction
		// marker value.
		it := NewRecordIter(rb.Records, rb.NumRecords)
		if !it.Next() {
			t.Fatal(it.Err())
		}
		r := it.Record()
		var key kmsg.ControlRecordKey
		var val kmsg.EndTxnMarker
		if err := key.ReadFrom(r.Key); err != nil {
			t.Fatal(err)
		}
		if err := val.ReadFrom(r.Value); err != nil {
			t.Fatal(err)
		}
		wantType := kmsg.ControlRecordKeyTypeAbort
		if commit {
			wantType = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Version != 0 || key.Type != wantType || val.Version != 0 || val.CoordinatorEpoch != 42 {
			t.Fatalf("control record %+v %+v", key, val)
		}
		if c, e, ok := ParseControlRecord(r.Key, r.Value); !ok || c != commit || e != 42 {
			t.Fatalf("ParseControlRecord = %v %d %v", c, e, ok)
		}
		if len(rb.Records) != 1+ControlRecordBodyLen {
			t.Fatalf("record of %d bytes, body length constant %d", len(rb.Records), ControlRecordBodyLen)
		}
	}
}

func TestParseControlRecordRefuses(t *testing.T) {
	t.Parallel()
	k, v := ControlKey(true), ControlValue(1)
	for name, kv := range map[string][2][]byte{
		"short key":     {k[:3], v[:]},
		"key version 1": {{0, 1, 0, 1}, v[:]},
		"type 2":        {{0, 0, 0, 2}, v[:]},
		"value version": {k[:], {0, 1, 0, 0, 0, 1}},
		"long value":    {k[:], append(v[:], 0)},
		"null":          {nil, nil},
	} {
		if _, _, ok := ParseControlRecord(kv[0], kv[1]); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestBuilderProducerAndTransactional(t *testing.T) {
	t.Parallel()
	var bb BatchBuilder
	b := bb.Begin(nil, 5, 1000)
	bb.Producer(77, 3, 12)
	bb.Transactional()
	b = bb.AppendRecord(b, 0, 0, []byte("k"), []byte("v"), 0)
	b = bb.AppendRecord(b, 1, 2, nil, []byte("w"), 0)
	b = bb.Finish(b)
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	rb, _, err := ParseBatch(b) // checks the CRC
	if err != nil {
		t.Fatal(err)
	}
	if kb.Attributes != 0x10 || kb.ProducerID != 77 || kb.ProducerEpoch != 3 || kb.FirstSequence != 12 ||
		kb.NumRecords != 2 || !rb.IsTransactional() || rb.IsControl() {
		t.Fatalf("header %+v", kb)
	}
	// A reused builder starts plain again.
	b = bb.Begin(b[:0], 5, 1000)
	b = bb.AppendRecord(b, 0, 0, nil, []byte("v"), 0)
	b = bb.Finish(b)
	if rb, _, err = ParseBatch(b); err != nil || rb.Attributes != 0 || rb.ProducerID != -1 || rb.ProducerEpoch != -1 || rb.BaseSequence != -1 {
		t.Fatalf("reused builder: %+v %v", rb, err)
	}
}
