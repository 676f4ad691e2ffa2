package handlers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/iggy-kafka/gateway/codec"
)

// compressedAs returns b with its records compressed with c (CRC fixed).
func compressedAs(tb testing.TB, b []byte, c int8) []byte {
	tb.Helper()
	out, err := codec.Compress(nil, c, b[hRecords:])
	if err != nil {
		tb.Fatal(err)
	}
	return rebatch(b, attrs(b)|int16(c), out)
}

// withProducer returns b as an idempotent batch of producer id pid.
func withProducer(b []byte, pid int64, epoch int16, seq int32) []byte {
	out := bytes.Clone(b)
	binary.BigEndian.PutUint64(out[hProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(out[hProducerID+8:], uint16(epoch))
	binary.BigEndian.PutUint32(out[hProducerID+10:], uint32(seq))
	return rebatch(out, attrs(out), out[hRecords:])
}

// cacheCase is one batch a test produces, and whether the tail cache
// may keep it.
type cacheCase struct {
	name  string
	batch []byte
	cache bool
}

// tailCacheBatches is one batch of every kind the mapping treats apart,
// and whether the tail cache may keep it in a CreateTime topic.
func tailCacheBatches(t *testing.T) []cacheCase {
	hdr := func(k, v string) [2][]byte { return [2][]byte{[]byte(k), []byte(v)} }
	plain := batch(
		rec{key: []byte("k1"), value: []byte("hello"), headers: [][2][]byte{hdr("h", "v"), hdr("i", "w")}},
		rec{value: []byte("no key"), ts: baseTs + 5},
		rec{key: []byte("k3"), value: nil},                                             // tombstone
		rec{key: []byte("k4"), value: []byte{}},                                        // empty value
		rec{key: []byte{}, value: []byte("empty key")},                                 // envelope
		rec{key: []byte("k6"), value: []byte("x"), headers: [][2][]byte{hdr("e", "")}}, // envelope
		rec{key: []byte("k7"), value: []byte("late"), ts: baseTs + 100_000},
	)
	epoch := batch(rec{value: []byte("at the epoch")})
	binary.BigEndian.PutUint64(epoch[27:], 0) // first timestamp 0: the record's is 0
	epoch = rebatch(epoch, attrs(epoch), epoch[hRecords:])
	negative := batch(rec{value: []byte("no time")})
	binary.BigEndian.PutUint64(negative[27:], ^uint64(0)) // -1: Fetch shows the append time
	negative = rebatch(negative, attrs(negative), negative[hRecords:])
	lastDelta := batch(rec{value: []byte("a")}, rec{value: []byte("b")})
	binary.BigEndian.PutUint32(lastDelta[23:], 5) // last offset delta 5 for 2 records
	lastDelta = rebatch(lastDelta, attrs(lastDelta), lastDelta[hRecords:])

	return []cacheCase{
		{"plain", plain, true},
		{"gzip", gzipped(t, plain), true},
		{"snappy", compressedAs(t, plain, codec.CompressionSnappy), true},
		{"lz4", compressedAs(t, plain, codec.CompressionLZ4), true},
		{"zstd", compressedAs(t, plain, codec.CompressionZstd), true},
		{"idempotent", withProducer(valueBatch(4), 42, 1, 0), true},
		{"epoch timestamp", epoch, true},
		{"negative timestamp", negative, false},
		{"last offset delta", lastDelta, false},
		// A CreateTime topic makes the producer's LogAppendTime batch
		// CreateTime (its records keep their own timestamps), as Kafka
		// does; then it is exact.
		{"log append time bit", withAttrs(valueBatch(2), 0x08), true},
	}
}

// Whatever the tail cache answers, the store would have answered the same
// records (offsets, timestamps, keys, values, headers, null against
// empty), from every offset, in both fetch modes; batches it must not keep
// are read from the store.
func TestTailCacheAnswersAsTheStore(t *testing.T) {
	eachFetchMode(t, func(t *testing.T, mode func(*Config)) {
		g := newGateway(t, mode, func(c *Config) { c.TailCacheBytes = 64 << 20 })
		createTopic(t, g, "tc", 1)
		cacheAnswersAsStore(t, g, "tc", tailCacheBatches(t))
	})
}

// In a LogAppendTime topic every batch carries the append time, in the
// tail cache (the producer's batch, stamped) as from the store (rebuilt
// from the messages); a batch without timestamps is exact there too.
func TestTailCacheLogAppendTime(t *testing.T) {
	eachFetchMode(t, func(t *testing.T, mode func(*Config)) {
		g := newGateway(t, mode, func(c *Config) { c.TailCacheBytes = 64 << 20 })
		if r := do(t, g, createReq(7, withConfig(ct("tcl", 1, 1), "message.timestamp.type", "LogAppendTime"))).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != 0 {
			t.Fatalf("create: %d", r.Topics[0].ErrorCode)
		}
		var cases []cacheCase
		for _, c := range tailCacheBatches(t) {
			switch c.name {
			case "log append time bit": // refused in a LogAppendTime topic
				continue
			case "negative timestamp":
				c.cache = true
			}
			cases = append(cases, c)
		}
		cacheAnswersAsStore(t, g, "tcl", cases)
	})
}

// cacheAnswersAsStore produces cases to partition 0 of topic, then fetches
// from every offset with and without the tail cache and fails unless both
// answers hold the same records and the cache answered exactly the
// batches it may keep.
func cacheAnswersAsStore(t *testing.T, g *Gateway, topic string, cases []cacheCase) {
	t.Helper()
	var offsets []int64 // base offset of each batch, then the end
	var cached []bool
	for _, b := range cases {
		p := produceOne(t, g, produceReq(11, topic, 0, b.batch))
		if p.ErrorCode != 0 {
			t.Fatalf("%s: produce code %d", b.name, p.ErrorCode)
		}
		offsets = append(offsets, p.BaseOffset)
		cached = append(cached, b.cache)
	}
	end := do(t, g, fetchReq(12, topic, 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0].HighWatermark
	offsets = append(offsets, end)

	tail := g.tail
	for from := int64(0); from < end; from++ {
		before := tail.Stats().Hits
		withCache := do(t, g, fetchReq(12, topic, 0, from)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		hit := tail.Stats().Hits > before
		g.tail = nil
		fromStore := do(t, g, fetchReq(12, topic, 0, from)).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		g.tail = tail

		i, _ := slices.BinarySearch(offsets, from+1)
		if want := cached[i-1]; hit != want {
			t.Errorf("from %d (batch %d): cache hit %v, want %v", from, i-1, hit, want)
		}
		a, b := recordsFrom(t, withCache.RecordBatches, from), recordsFrom(t, fromStore.RecordBatches, from)
		if len(a) == 0 {
			t.Fatalf("from %d: no records", from)
		}
		n := min(len(a), len(b)) // the cache stops at a batch it may not keep
		if fmt.Sprint(a[:n]) != fmt.Sprint(b[:n]) || n == 0 {
			t.Errorf("from %d: cache answered\n%v\nthe store\n%v", from, a[:n], b[:n])
		}
		if withCache.HighWatermark != fromStore.HighWatermark || withCache.LogStartOffset != fromStore.LogStartOffset {
			t.Errorf("from %d: hwm %d/%d, log start %d/%d", from, withCache.HighWatermark, fromStore.HighWatermark, withCache.LogStartOffset, fromStore.LogStartOffset)
		}
	}
	if tail.Stats().Hits == 0 {
		t.Fatal("the cache was never used")
	}
}

// recordsFrom is the records at from or later, each printed with its
// offset, timestamp, key, value and headers, null apart from empty.
func recordsFrom(tb testing.TB, b []byte, from int64) []string {
	tb.Helper()
	var out []string
	eachRecord(tb, b, func(rb *codec.RecordBatch, r *codec.Record) {
		off := rb.BaseOffset + int64(r.OffsetDelta)
		if off < from {
			return
		}
		var hs []string
		hi := codec.NewHeaderIter(r.Headers, r.HeaderCount)
		for hi.Next() {
			hs = append(hs, nullable(hi.Key())+"="+nullable(hi.Value()))
		}
		ts := fmt.Sprint(rb.Timestamp(r))
		if rb.LogAppendTime() {
			ts = "append:" + ts
		}
		out = append(out, fmt.Sprintf("%d@%s key=%s value=%s headers=%v", off, ts, nullable(r.Key), nullable(r.Value), hs))
	})
	return out
}

func nullable(b []byte) string {
	if b == nil {
		return "<null>"
	}
	return fmt.Sprintf("%q", b)
}
