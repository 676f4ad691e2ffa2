package handlers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded"
	"github.com/iggy-kafka/gateway/codec"
)

// newGateway returns a Gateway over a real embedded store in a temp dir.
// The store is closed at cleanup.
func newGateway(tb testing.TB, mods ...func(*Config)) *Gateway {
	tb.Helper()
	return newGatewayOn(tb, openEmbedded(tb, tb.TempDir()), mods...)
}

// openEmbedded opens an embedded store in dir, closed at cleanup.
func openEmbedded(tb testing.TB, dir string) *embedded.Store {
	tb.Helper()
	st, err := embedded.Open(dir, embedded.Options{
		Sync:   embedded.SyncNever,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// newGatewayOn is newGateway over st, built as the command builds one
// (NewGateway).
func newGatewayOn(tb testing.TB, st bridge.Backend, mods ...func(*Config)) *Gateway {
	cfg := Config{
		Stream:            "kafka",
		AdvertisedHost:    "127.0.0.1",
		AdvertisedPort:    9092,
		NodeID:            1,
		ClusterID:         "iggy-kafka-test",
		AutoCreateTopics:  true,
		DefaultPartitions: 3,
		InstanceID:        7,
		MaxFrameSize:      8 << 20,
		MaxFetchWait:      time.Second,
		MaxMessageSize:    1 << 20,
	}
	for _, m := range mods {
		m(&cfg)
	}
	return NewGateway(cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func noAutoCreate(c *Config) { c.AutoCreateTopics = false }

// newCall returns a fresh call for key at version.
// For InitProducerId it first waits for the id reservation that NewGateway
// starts at startup (handlers never wait for it).
func newCall(g *Gateway, key, version int16) *Call {
	if key == 22 && g.Producers != nil {
		g.Producers.Bind(g.Store, g.Log)
		<-g.Producers.Ready()
	}
	return &Call{G: g, Header: codec.RequestHeader{Key: key, Version: version}, Ctx: context.Background()}
}

// roundTrip encodes req at its version, decodes it with Decode (as the loop
// does), runs the handler on c and returns the response. It fails the test
// on a Go error; use run for that.
func roundTrip(tb testing.TB, c *Call, req kmsg.Request) kmsg.Response {
	tb.Helper()
	resp, err := run(tb, c, req)
	if err != nil {
		tb.Fatalf("key %d v%d: %v", req.Key(), req.GetVersion(), err)
	}
	return resp
}

func run(tb testing.TB, c *Call, req kmsg.Request) (kmsg.Response, error) {
	tb.Helper()
	body := req.AppendTo(nil)
	dec, err := Decode(req.Key(), req.GetVersion(), body)
	if err != nil {
		tb.Fatalf("decode key %d v%d: %v", req.Key(), req.GetVersion(), err)
	}
	s := Lookup(req.Key())
	if s == nil {
		tb.Fatalf("key %d not registered", req.Key())
	}
	c.Header.Key, c.Header.Version = req.Key(), req.GetVersion()
	resp, err := s.Handle(c, dec)
	if resp != nil {
		// Encode as the loop would: catches fields kmsg cannot write.
		_ = resp.AppendTo(nil)
	}
	return resp, err
}

// do is roundTrip on a fresh call, with deferred functions run after.
func do(tb testing.TB, g *Gateway, req kmsg.Request) kmsg.Response {
	tb.Helper()
	c := newCall(g, req.Key(), req.GetVersion())
	resp := roundTrip(tb, c, req)
	tb.Cleanup(c.RunDeferred)
	return resp
}

// rec is one record for the batch helpers.
type rec struct {
	key, value []byte
	ts         int64 // ms; 0 = base timestamp
	headers    [][2][]byte
}

const baseTs = int64(1_700_000_000_000)

// batch builds one uncompressed v2 batch with codec.BatchBuilder.
func batch(recs ...rec) []byte {
	var bb codec.BatchBuilder
	buf := bb.Begin(nil, 0, baseTs)
	for i, r := range recs {
		delta := int64(0)
		if r.ts != 0 {
			delta = r.ts - baseTs
		}
		buf = bb.AppendRecord(buf, int32(i), delta, r.key, r.value, len(r.headers))
		for _, h := range r.headers {
			buf = bb.AppendHeader(buf, h[0], h[1])
		}
	}
	return bb.Finish(buf)
}

// valueBatch is a batch of n records with values v0, v1...
func valueBatch(n int) []byte {
	recs := make([]rec, n)
	for i := range recs {
		recs[i] = rec{key: []byte("k"), value: []byte("value-" + string(rune('a'+i%26)))}
	}
	return batch(recs...)
}

// Offsets in the v2 batch header.
const (
	hBatchLength = 8
	hCRC         = 17
	hAttributes  = 21
	hProducerID  = 43
	hRecords     = 61
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rebatch returns a copy of b with attributes attrs and records section
// records, lengths and CRC fixed.
func rebatch(b []byte, attrs int16, records []byte) []byte {
	out := append([]byte(nil), b[:hRecords]...)
	out = append(out, records...)
	binary.BigEndian.PutUint32(out[hBatchLength:], uint32(len(out)-12))
	binary.BigEndian.PutUint16(out[hAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(out[hCRC:], crc32.Checksum(out[hAttributes:], castagnoli))
	return out
}

func attrs(b []byte) int16 { return int16(binary.BigEndian.Uint16(b[hAttributes:])) }

// withAttrs sets attribute bits on b (CRC fixed).
func withAttrs(b []byte, set int16) []byte { return rebatch(b, attrs(b)|set, b[hRecords:]) }

// gzipped returns b with its records gzip-compressed.
func gzipped(tb testing.TB, b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	if _, err := w.Write(b[hRecords:]); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return rebatch(b, attrs(b)|codec.CompressionGzip, out.Bytes())
}

// produceReq is a Produce request of one partition.
func produceReq(version int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// produceOne produces and returns the single partition result.
func produceOne(tb testing.TB, g *Gateway, req *kmsg.ProduceRequest) kmsg.ProduceResponseTopicPartition {
	tb.Helper()
	resp := do(tb, g, req).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

// fetchReq asks one partition from offset.
func fetchReq(version int16, topic string, partition int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.MaxBytes = 1 << 20
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = partition
	p.FetchOffset = offset
	p.PartitionMaxBytes = 1 << 20
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// fetched is one record read back from a Fetch response; logAppend: its
// batch is LogAppendTime (ts is the batch's append time).
type fetched struct {
	offset     int64
	ts         int64
	logAppend  bool
	key, value []byte
	headers    [][2]string
}

// readRecords parses the record batches of a fetch partition.
func readRecords(tb testing.TB, b []byte) []fetched {
	tb.Helper()
	var out []fetched
	eachRecord(tb, b, func(rb *codec.RecordBatch, r *codec.Record) {
		f := fetched{
			offset:    rb.BaseOffset + int64(r.OffsetDelta),
			ts:        rb.Timestamp(r),
			logAppend: rb.LogAppendTime(),
			key:       append([]byte(nil), r.Key...),
			value:     append([]byte(nil), r.Value...),
		}
		if r.Key == nil {
			f.key = nil
		}
		hi := codec.NewHeaderIter(r.Headers, r.HeaderCount)
		for hi.Next() {
			f.headers = append(f.headers, [2]string{string(hi.Key()), string(hi.Value())})
		}
		if err := hi.Err(); err != nil {
			tb.Fatal(err)
		}
		out = append(out, f)
	})
	return out
}

// eachRecord calls fn with every record of the record batches in b, in
// order, decompressing compressed batches.
func eachRecord(tb testing.TB, b []byte, fn func(rb *codec.RecordBatch, r *codec.Record)) {
	tb.Helper()
	for len(b) > 0 {
		rb, n, err := codec.ParseBatch(b)
		if err != nil {
			tb.Fatalf("fetched batch: %v", err)
		}
		b = b[n:]
		records := rb.Records
		if c := rb.Compression(); c != codec.CompressionNone {
			if records, err = codec.Decompress(nil, c, rb.Records, 64<<20); err != nil {
				tb.Fatalf("fetched batch, codec %d: %v", c, err)
			}
		}
		it := codec.NewRecordIter(records, rb.NumRecords)
		for it.Next() {
			r := it.Record()
			fn(&rb, r)
		}
		if err := it.Err(); err != nil {
			tb.Fatal(err)
		}
	}
}

// createTopic makes topic with n partitions straight in the store.
// topicExists says whether the store answers for topic in stream kafka.
func topicExists(g *Gateway, topic string) bool {
	_, err := g.Store.Topic(context.Background(), "kafka", topic)
	return err == nil
}

func createTopic(tb testing.TB, g *Gateway, topic string, n int32) {
	tb.Helper()
	if _, err := g.Store.CreateTopic(context.Background(), g.Cfg.Stream, topic, n); err != nil {
		tb.Fatal(err)
	}
}
