package e2e

// Native interop on the real Iggy server, with Iggy's own CLI as the native
// client: what kcat and franz-go write through the gateway must read with
// `iggy message poll` exactly as docs/MAPPING.md says (payload, the kafka.*
// user headers, partition and offset numbering, message ids, timestamps).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNativeReadsKafkaRecords: records kcat and franz-go produce through
// the gateway, to one and to four partitions, read natively with `iggy
// message poll` as docs/MAPPING.md documents them. Then the CLI copies one
// partition natively (poll to a file, send from it) into a topic it
// created, and franz-go reads the copy as the original records.
func TestNativeReadsKafkaRecords(t *testing.T) {
	t.Parallel()
	kcat := needKcat(t)
	gw, rb, cli := realGateway(t)
	// Uncompressed, as kcat sends by default: a compressed batch's first
	// message also carries kafka.codec (docs/MAPPING.md), which the
	// header checks below do not expect.
	cl := newClient(t, gw.Addr, kgo.ProducerBatchCompression(kgo.NoCompression()))

	// kcat, one partition: three runs.
	createTopic(t, cl, "kcat-one", 1)
	low, high := byteRange(1, 0x7f), byteRange(0x80, 0xff) // argv cannot carry NUL
	var kcatOne []kafkaRec
	var input strings.Builder
	for i := range 10 {
		k, v := fmt.Sprintf("k-%d", i), fmt.Sprintf("value %d naïve ✓ %s", i, strings.Repeat("z", i))
		input.WriteString(k + ":" + v + "\n")
		kcatOne = append(kcatOne, kafkaRec{Key: []byte(k), Value: []byte(v), Headers: []kgo.RecordHeader{
			{Key: "trace", Value: []byte("abc-123")}, {Key: "bin-low", Value: low}, {Key: "bin-high", Value: high},
			{Key: "sp ace", Value: []byte("a=b,c")},
		}})
	}
	kcatProduce(t, kcat, gw.Addr, "kcat-one", input.String(), "-K:",
		"-H", "trace=abc-123", "-H", "bin-low="+string(low), "-H", "bin-high="+string(high), "-H", "sp ace=a=b,c")
	// Whole files as values: every byte value, and a single 00 byte (a real
	// one-byte value, not the null/empty marker).
	dir := t.TempDir()
	all, zero := filepath.Join(dir, "all"), filepath.Join(dir, "zero")
	if err := os.WriteFile(all, byteRange(0, 255), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zero, []byte{0}, 0o600); err != nil {
		t.Fatal(err)
	}
	kcatProduce(t, kcat, gw.Addr, "kcat-one", "", "-k", "bin-key", "-H", "trace=files", all, zero)
	for _, v := range [][]byte{byteRange(0, 255), {0}} {
		kcatOne = append(kcatOne, kafkaRec{Key: []byte("bin-key"), Value: v, Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("files")}}})
	}
	// An empty and a null header value: the envelope.
	kcatProduce(t, kcat, gw.Addr, "kcat-one", "k-env:enveloped value\n", "-K:", "-H", "empty=", "-H", "nullh", "-H", "after=1")
	kcatOne = append(kcatOne, kafkaRec{Key: []byte("k-env"), Value: []byte("enveloped value"), Headers: []kgo.RecordHeader{
		{Key: "empty", Value: []byte{}}, {Key: "nullh"}, {Key: "after", Value: []byte("1")},
	}})
	// No key and no headers: a plain native message, no user headers at all.
	kcatProduce(t, kcat, gw.Addr, "kcat-one", "just a value\n")
	kcatOne = append(kcatOne, kafkaRec{Value: []byte("just a value")})
	for i := range kcatOne {
		kcatOne[i].Partition, kcatOne[i].Offset, kcatOne[i].PID = 0, int64(i), -1
	}
	// The Kafka view first (it also gives the timestamps kcat stamped).
	lines := kcatConsumeAll(t, kcat, gw.Addr, "kcat-one", false)
	if len(lines) != len(kcatOne) {
		t.Fatalf("kcat reads %d records of kcat-one, want %d", len(lines), len(kcatOne))
	}
	for i, l := range lines {
		w := kcatOne[i]
		if l.Partition != 0 || l.Offset != int64(i) || l.Key != string(w.Key) || l.Value != string(w.Value) {
			t.Fatalf("kcat-one record %d read by kcat: %+v, want %v", i, l, w)
		}
		kcatOne[i].TimeMs = l.TimeMs
	}
	checkNativeRecords(t, cli, rb.stream, "kcat-one", 1, kcatOne)

	// kcat, four partitions, keys spread by librdkafka's partitioner.
	createTopic(t, cl, "kcat-four", 4)
	input.Reset()
	sent := map[string]string{}
	for i := range 40 {
		k, v := fmt.Sprintf("key-%d", i), fmt.Sprintf("value %d ✓", i)
		sent[k] = v
		input.WriteString(k + ":" + v + "\n")
	}
	kcatProduce(t, kcat, gw.Addr, "kcat-four", input.String(), "-K:", "-H", "trace=four", "-H", "bin="+string(high))
	var kcatFour []kafkaRec
	seen := map[int32]bool{}
	for _, l := range kcatConsumeAll(t, kcat, gw.Addr, "kcat-four", false) {
		if sent[l.Key] != l.Value {
			t.Fatalf("kcat-four: kcat reads %+v, which was not sent", l)
		}
		delete(sent, l.Key)
		seen[l.Partition] = true
		kcatFour = append(kcatFour, kafkaRec{Partition: l.Partition, Offset: l.Offset, Key: []byte(l.Key), Value: []byte(l.Value),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("four")}, {Key: "bin", Value: high}}, TimeMs: l.TimeMs, PID: -1})
	}
	if len(sent) != 0 || len(seen) < 2 {
		t.Fatalf("kcat-four: %d records not read back, partitions used %v", len(sent), seen)
	}
	checkNativeRecords(t, cli, rb.stream, "kcat-four", 4, kcatFour)

	// franz-go (idempotent by default), one and four partitions.
	rng := rand.New(rand.NewPCG(9, 9))
	large := make([]byte, 64<<10)
	for i := range large {
		large[i] = byte(rng.UintN(256))
	}
	records := func(topic string) []*kgo.Record {
		var rs []*kgo.Record
		for i := range 20 {
			rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "user-%d", i%6), Value: fmt.Appendf(nil, "kgo value %d", i),
				Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "kgo-%d", i)}, {Key: "bin", Value: byteRange(0, 254)}}})
		}
		rs = append(rs,
			&kgo.Record{Topic: topic, Value: []byte("no key"), Headers: []kgo.RecordHeader{{Key: "why", Value: []byte("null key")}}},
			&kgo.Record{Topic: topic, Key: []byte("no-headers"), Value: []byte("plain")},
			&kgo.Record{Topic: topic, Value: []byte("no key, no headers")},
			&kgo.Record{Topic: topic, Value: []byte{0}},
			&kgo.Record{Topic: topic, Key: []byte("big"), Value: large, Headers: []kgo.RecordHeader{{Key: "size", Value: []byte("65536")}}},
			&kgo.Record{Topic: topic, Key: []byte("one-zero"), Value: []byte{0}},
			&kgo.Record{Topic: topic, Key: []byte("tombstone")},
			&kgo.Record{Topic: topic, Key: []byte("empty-value"), Value: []byte{}},
			&kgo.Record{Topic: topic, Key: []byte{}, Value: []byte("empty key: envelope")},
		)
		return rs
	}
	for _, tc := range []struct {
		topic string
		parts int32
	}{{"kgo-one", 1}, {"kgo-four", 4}} {
		createTopic(t, cl, tc.topic, tc.parts)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res := cl.ProduceSync(ctx, records(tc.topic)...)
		// CreateTime 0 in a batch of its own (in a batch with real
		// timestamps it would clamp them, MAPPING.md "Timestamps").
		res = append(res, cl.ProduceSync(ctx, &kgo.Record{Topic: tc.topic, Key: []byte("epoch"), Value: []byte("at the epoch"),
			Timestamp: time.UnixMilli(0)})...)
		cancel()
		if err := res.FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", tc.topic, err)
		}
		var want []kafkaRec
		for _, r := range res {
			want = append(want, recOfKgo(r.Record))
		}
		checkNativeRecords(t, cli, rb.stream, tc.topic, int(tc.parts), want)
		// And franz-go reads back what it wrote (the null key stays null).
		got := consume(t, gw.Addr, tc.topic, atLeast(len(want)), within(time.Minute), nothingMore())
		sort.Slice(want, func(i, j int) bool {
			if want[i].Partition != want[j].Partition {
				return want[i].Partition < want[j].Partition
			}
			return want[i].Offset < want[j].Offset
		})
		for i, r := range got {
			if g := recOfKgo(r); !sameKafka(g, want[i]) || g.TimeMs != want[i].TimeMs {
				t.Fatalf("%s record %d read back as %v (ts %d), want %v (ts %d)", tc.topic, i, g, g.TimeMs, want[i], want[i].TimeMs)
			}
		}
	}

	// A native copy: the CLI polls kcat-one into a file and sends the file
	// to a topic it creates; the copy reads as the same Kafka records.
	cli.run("", "topic", "create", rb.stream, "native-copy", "1", "none")
	file := filepath.Join(t.TempDir(), "copy.bin")
	cli.run("", "message", "poll", "--offset", "0", "-m", strconv.Itoa(len(kcatOne)), "--output-file", file, rb.stream, "kcat-one", "0")
	cli.run("", "message", "send", "-p", "0", "--input-file", file, rb.stream, "native-copy")
	got := consume(t, gw.Addr, "native-copy", atLeast(len(kcatOne)), within(time.Minute), nothingMore())
	for i, r := range got {
		if g := recOfKgo(r); !sameKafka(g, kcatOne[i]) || g.TimeMs != kcatOne[i].TimeMs {
			t.Fatalf("native-copy record %d: %v (ts %d), want %v (ts %d)", i, g, g.TimeMs, kcatOne[i], kcatOne[i].TimeMs)
		}
	}
}
