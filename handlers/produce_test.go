package handlers

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/codec"
)

func TestProduceFetchRoundTrip(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	recs := []rec{
		{key: []byte("k1"), value: []byte("hello"), headers: [][2][]byte{{[]byte("h"), []byte("v")}}},
		{key: nil, value: []byte("world"), ts: baseTs + 5},
		{key: []byte("k3"), value: nil},
	}
	for _, v := range []int16{3, 9, 11} {
		topic := "rt-" + string(rune('a'+v))
		p := produceOne(t, g, produceReq(v, topic, 1, batch(recs...)))
		if p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("v%d produce: code %d base %d", v, p.ErrorCode, p.BaseOffset)
		}
		if p.LogAppendTime != -1 {
			t.Errorf("LogAppendTime %d", p.LogAppendTime)
		}
		p = produceOne(t, g, produceReq(v, topic, 1, gzipped(t, batch(recs[:2]...))))
		if p.ErrorCode != 0 || p.BaseOffset != 3 {
			t.Fatalf("v%d gzip produce: code %d base %d", v, p.ErrorCode, p.BaseOffset)
		}
	}
	for _, fv := range []int16{4, 11, 12} {
		resp := do(t, g, fetchReq(fv, "rt-l", 1, 0)).(*kmsg.FetchResponse)
		fp := resp.Topics[0].Partitions[0]
		if resp.ErrorCode != 0 || fp.ErrorCode != 0 || resp.SessionID != 0 {
			t.Fatalf("fetch v%d: top %d partition %d", fv, resp.ErrorCode, fp.ErrorCode)
		}
		if fp.HighWatermark != 5 || fp.LastStableOffset != 5 || fp.LogStartOffset != 0 || fp.PreferredReadReplica != -1 {
			t.Errorf("fetch v%d: hwm %d lso %d lstart %d", fv, fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset)
		}
		got := readRecords(t, fp.RecordBatches)
		if len(got) != 5 {
			t.Fatalf("fetch v%d: %d records", fv, len(got))
		}
		all := append(append([]rec{}, recs...), recs[:2]...)
		for i, r := range got {
			w := all[i]
			if r.offset != int64(i) || !bytes.Equal(r.key, w.key) || (r.key == nil) != (w.key == nil) || !bytes.Equal(r.value, w.value) || (r.value == nil) != (w.value == nil) {
				t.Errorf("record %d: %+v want %+v", i, r, w)
			}
			wantTs := baseTs
			if w.ts != 0 {
				wantTs = w.ts
			}
			if r.ts != wantTs {
				t.Errorf("record %d: ts %d want %d", i, r.ts, wantTs)
			}
		}
		if len(got[0].headers) != 1 || got[0].headers[0] != [2]string{"h", "v"} {
			t.Errorf("headers %v", got[0].headers)
		}
		// Each batch travels as the producer sent it: the first
		// uncompressed, the second gzip (docs/MAPPING.md, kafka.codec).
		if codecs := batchCodecs(t, fp.RecordBatches); len(codecs) != 2 || codecs[0] != codec.CompressionNone || codecs[1] != codec.CompressionGzip {
			t.Errorf("fetch v%d: batch codecs %v, want [0 1]", fv, codecs)
		}
	}
	// From the middle.
	resp := do(t, g, fetchReq(12, "rt-l", 1, 2)).(*kmsg.FetchResponse)
	got := readRecords(t, resp.Topics[0].Partitions[0].RecordBatches)
	if len(got) != 3 || got[0].offset != 2 {
		t.Fatalf("from 2: %+v", got)
	}
}

func TestProduceRefusals(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "t", 2)
	good := batch(rec{value: []byte("x")})
	crcBad := append([]byte(nil), good...)
	crcBad[len(crcBad)-1] ^= 0xff
	short := good[:len(good)-3]
	old := append([]byte(nil), good...)
	old[16] = 1 // magic 1

	tx := "tx"
	cases := []struct {
		name string
		req  *kmsg.ProduceRequest
		code int16
	}{
		{"v2 old format", produceReq(2, "t", 0, good), kerr.UnsupportedVersion.Code},
		{"v0", produceReq(0, "t", 0, good), kerr.UnsupportedVersion.Code},
		{"transactional id", func() *kmsg.ProduceRequest {
			r := produceReq(9, "t", 0, good)
			r.TransactionID = &tx
			return r
		}(), kerr.UnsupportedVersion.Code},
		{"transactional bit", produceReq(9, "t", 0, withAttrs(good, 0x10)), kerr.UnsupportedVersion.Code},
		{"control bit", produceReq(9, "t", 0, withAttrs(good, 0x20)), kerr.UnsupportedVersion.Code},
		{"acks 2", func() *kmsg.ProduceRequest { r := produceReq(9, "t", 0, good); r.Acks = 2; return r }(), kerr.InvalidRequiredAcks.Code},
		{"acks -2", func() *kmsg.ProduceRequest { r := produceReq(9, "t", 0, good); r.Acks = -2; return r }(), kerr.InvalidRequiredAcks.Code},
		{"bad name", produceReq(9, "a/b", 0, good), kerr.InvalidTopicException.Code},
		{"dot name", produceReq(9, "..", 0, good), kerr.InvalidTopicException.Code},
		{"long name", produceReq(9, strings.Repeat("a", 250), 0, good), kerr.InvalidTopicException.Code},
		{"partition range", produceReq(9, "t", 2, good), kerr.UnknownTopicOrPartition.Code},
		{"negative partition", produceReq(9, "t", -1, good), kerr.UnknownTopicOrPartition.Code},
		{"two batches", produceReq(9, "t", 0, append(append([]byte(nil), good...), good...)), kerr.InvalidRecord.Code},
		{"trailing bytes", produceReq(9, "t", 0, append(append([]byte(nil), good...), 0, 0, 0)), kerr.InvalidRecord.Code},
		{"no records", produceReq(9, "t", 0, nil), kerr.InvalidRecord.Code},
		{"bad crc", produceReq(9, "t", 0, crcBad), kerr.CorruptMessage.Code},
		{"short", produceReq(9, "t", 0, short), kerr.CorruptMessage.Code},
		{"magic 1", produceReq(9, "t", 0, old), kerr.InvalidRecord.Code},
		{"zstd before v7", produceReq(6, "t", 0, withAttrs(good, codec.CompressionZstd)), kerr.UnsupportedCompressionType.Code},
		{"bad gzip data", produceReq(9, "t", 0, withAttrs(good, codec.CompressionGzip)), kerr.InvalidRecord.Code},
		{"unknown codec", produceReq(9, "t", 0, withAttrs(good, 6)), kerr.InvalidRecord.Code},
	}
	for _, tc := range cases {
		p := produceOne(t, g, tc.req)
		if p.ErrorCode != tc.code {
			t.Errorf("%s: code %d want %d", tc.name, p.ErrorCode, tc.code)
		}
		if p.BaseOffset != -1 {
			t.Errorf("%s: base offset %d on error", tc.name, p.BaseOffset)
		}
	}
	// Nothing was stored by any of them.
	st, err := g.Store.Partition(context.Background(), "kafka", "t", 0)
	if err != nil || st.Next != 0 {
		t.Fatalf("partition after refusals: %+v %v", st, err)
	}
}

// A transactional_id refuses every partition, even valid ones of existing
// topics, and stores nothing.
func TestProduceTransactionalAllPartitions(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "t", 2)
	tx := "my-tx"
	req := produceReq(9, "t", 0, valueBatch(2))
	req.TransactionID = &tx
	p1 := req.Topics[0].Partitions[0]
	p1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	resp := do(t, g, req).(*kmsg.ProduceResponse)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.UnsupportedVersion.Code || p.ErrorMessage == nil {
			t.Errorf("partition %d: code %d", p.Partition, p.ErrorCode)
		}
	}
	for p := int32(0); p < 2; p++ {
		if st, _ := g.Store.Partition(context.Background(), "kafka", "t", p); st.Next != 0 {
			t.Errorf("partition %d holds %d", p, st.Next)
		}
	}
	// An empty transactional id is no transaction.
	empty := ""
	req = produceReq(9, "t", 0, valueBatch(1))
	req.TransactionID = &empty
	if p := produceOne(t, g, req); p.ErrorCode != 0 {
		t.Errorf("empty transactional id: %d", p.ErrorCode)
	}
}

func TestProduceAutoCreate(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	if p := produceOne(t, g, produceReq(9, "auto", 2, valueBatch(1))); p.ErrorCode != 0 {
		t.Fatalf("auto-create: %d", p.ErrorCode)
	}
	ti, err := g.Store.Topic(context.Background(), "kafka", "auto")
	if err != nil || ti.Partitions != 3 {
		t.Fatalf("created %+v %v", ti, err)
	}
	g = newGateway(t, noAutoCreate)
	if p := produceOne(t, g, produceReq(9, "auto", 0, valueBatch(1))); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("auto-create off: %d", p.ErrorCode)
	}
	if topicExists(g, "auto") {
		t.Fatal("topic created with auto-create off")
	}
}

func TestProduceZstdV7(t *testing.T) {
	t.Parallel()
	// zstd is legal from v7: the codec is asked to decompress. Garbage
	// data must then be INVALID_RECORD, not UNSUPPORTED_COMPRESSION_TYPE.
	g := newGateway(t)
	p := produceOne(t, g, produceReq(7, "z", 0, withAttrs(valueBatch(1), codec.CompressionZstd)))
	if p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("code %d", p.ErrorCode)
	}
}

// The decompression budget covers the whole request.
func TestProduceDecompressionBudget(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("z"), 64<<10)
	b := gzipped(t, batch(rec{value: big}))
	g := newGateway(t, func(c *Config) { c.MaxFrameSize = 100 << 10 })
	req := produceReq(9, "b", 0, b)
	p2 := req.Topics[0].Partitions[0]
	p2.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p2)
	resp := do(t, g, req).(*kmsg.ProduceResponse)
	ps := resp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 {
		t.Fatalf("first partition: %d", ps[0].ErrorCode)
	}
	if ps[1].ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("second partition over the shared budget: %d", ps[1].ErrorCode)
	}
}

func TestProduceMessageTooLarge(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(c *Config) { c.MaxMessageSize = 1024 })
	p := produceOne(t, g, produceReq(9, "m", 0, batch(rec{value: make([]byte, 4096)})))
	if p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("code %d", p.ErrorCode)
	}
}

func TestProduceAcks0(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	req := produceReq(9, "a0", 0, valueBatch(2))
	req.Acks = 0
	resp, err := run(t, newCall(g, 0, 9), req)
	if resp != nil || err != nil {
		t.Fatalf("acks=0 success: %v %v", resp, err)
	}
	if st, _ := g.Store.Partition(context.Background(), "kafka", "a0", 0); st.Next != 2 {
		t.Fatalf("stored %d", st.Next)
	}
	req = produceReq(9, "a0", 99, valueBatch(2))
	req.Acks = 0
	resp, err = run(t, newCall(g, 0, 9), req)
	if resp != nil || !errors.Is(err, errAcks0Failed) {
		t.Fatalf("acks=0 failure: %v %v", resp, err)
	}
	tx := "tx"
	req = produceReq(9, "a0", 0, valueBatch(2))
	req.Acks, req.TransactionID = 0, &tx
	if _, err = run(t, newCall(g, 0, 9), req); err == nil {
		t.Fatal("acks=0 transactional kept the connection")
	}
}

func TestProduceSignalsWatchers(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "w", 1)
	fired := make(chan struct{}, 1)
	cancel := g.Watch.Watch([]PartitionKey{{"w", 0}}, func() { fired <- struct{}{} })
	defer cancel()
	produceOne(t, g, produceReq(9, "w", 0, valueBatch(1)))
	select {
	case <-fired:
	case <-time.After(time.Second):
		t.Fatal("watcher not signalled")
	}
}

// A deadline passed to Append is REQUEST_TIMED_OUT, which producers retry.
func TestProduceContextDone(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	createTopic(t, g, "d", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := newCall(g, 0, 9)
	c.Ctx = ctx
	resp, err := run(t, c, produceReq(9, "d", 0, valueBatch(1)))
	if err != nil {
		t.Fatal(err)
	}
	code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	if code != kerr.RequestTimedOut.Code && code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("code %d", code)
	}
}

// batchCodecs lists the compression codec of each batch in b.
func batchCodecs(tb testing.TB, b []byte) []int8 {
	tb.Helper()
	var out []int8
	for len(b) > 0 {
		rb, n, err := codec.ParseBatch(b)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, rb.Compression())
		b = b[n:]
	}
	return out
}
