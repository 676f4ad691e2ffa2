package iggy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/iggytest"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// The differential test runs the same command sequences against iggytest
// and against the real Iggy server and compares the decoded replies field
// by field. Ids, timestamps and created_at are left out of the
// observations: the real server numbers and stamps things its own way,
// and nothing the gateway does depends on the values. Everything else the
// client decodes is compared: status and result codes, counts, offsets,
// payloads, user headers, option blocks and sizes.
//
// A sequence is a list of steps; each step calls the client and records
// what came back as ordered key=value observations. Stream names differ
// between the servers (the real one is shared, so each sequence gets a
// stream of its own), so steps name the stream through d.stream and never
// record it.

// dctx is what a step runs against.
type dctx struct {
	c      *Client
	stream string
}

func (d *dctx) s() Identifier { return Name(d.stream) }

// obs is one step's observations, in order.
type obs struct {
	keys []string
	vals map[string]string
}

func (o *obs) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]string{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = fmt.Sprint(v)
}

// errCode renders an error by what the client decoded from the server:
// the Iggy code and whether it came in a result section, an eviction
// reason, or a client-side refusal. Connection errors keep only their
// class (a timeout is "no reply").
func errCode(err error) string {
	var ie *Error
	var ev *EvictionError
	var ce *ConnError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &ie):
		if ie.Committed {
			return fmt.Sprintf("result %d", ie.Code)
		}
		return fmt.Sprintf("status %d", ie.Code)
	case errors.As(err, &ev):
		return fmt.Sprintf("evicted %d", ev.Reason)
	case errors.Is(err, ErrNameLength):
		return "client: name length"
	case errors.Is(err, bridge.ErrInvalidBatch):
		return "client: invalid batch"
	case errors.As(err, &ce):
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
			return "no reply"
		}
		return "connection error"
	}
	return "error: " + err.Error()
}

func (o *obs) err(err error) { o.set("err", errCode(err)) }

func (o *obs) stream(s Stream) {
	o.set("topics_count", s.TopicsCount)
	o.set("messages_count", s.MessagesCount)
	o.set("size_bytes", s.SizeBytes)
	for i, t := range s.Topics {
		o.topicHeader(fmt.Sprintf("topic[%d].", i), t)
	}
}

func (o *obs) topicHeader(p string, t Topic) {
	o.set(p+"name", t.Name)
	o.set(p+"partitions_count", t.PartitionsCount)
	o.set(p+"message_expiry", t.MessageExpiry)
	o.set(p+"compression", t.Compression)
	o.set(p+"max_topic_size", t.MaxTopicSize)
	o.set(p+"size_bytes", t.SizeBytes)
	o.set(p+"messages_count", t.MessagesCount)
	o.set(p+"options", optionsString(t.Options))
	o.set(p+"derived_options", optionsString(t.DerivedOptions))
}

func (o *obs) topic(t Topic) {
	o.topicHeader("", t)
	for _, p := range t.Partitions {
		k := fmt.Sprintf("partition[%d].", p.ID)
		o.set(k+"segments_count", p.SegmentsCount)
		o.set(k+"current_offset", p.CurrentOffset)
		o.set(k+"size_bytes", p.SizeBytes)
		o.set(k+"messages_count", p.MessagesCount)
	}
}

func optionsString(block []byte) string {
	opts, err := ParseTopicOptions(block)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	parts := make([]string, len(opts))
	for i, op := range opts {
		parts[i] = op.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// dstep is one command of a sequence.
type dstep struct {
	name string
	run  func(ctx context.Context, d *dctx, o *obs)
}

type dseq struct {
	name  string
	steps []dstep
}

// Step builders.

func getStream(name string, which func(d *dctx) Identifier) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		s, ok, err := d.c.GetStream(ctx, which(d))
		o.err(err)
		o.set("found", ok)
		if ok {
			o.stream(s)
		}
	}}
}

func ownStream(d *dctx) Identifier { return d.s() }

func otherStream(d *dctx) Identifier { return Name(d.stream + ".missing") }

func createStream(name string, which func(d *dctx) string) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		s, err := d.c.CreateStream(ctx, which(d))
		o.err(err)
		if err == nil {
			o.stream(s)
		}
	}}
}

func deleteStream(name string, which func(d *dctx) Identifier) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) { o.err(d.c.DeleteStream(ctx, which(d))) }}
}

func createTopic(name, topic string, n uint32, opts ...TopicOption) dstep {
	return createTopicIn(name, ownStream, topic, n, opts...)
}

func createTopicIn(name string, which func(d *dctx) Identifier, topic string, n uint32, opts ...TopicOption) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		t, err := d.c.CreateTopicWithOptions(ctx, which(d), topic, n, opts)
		o.err(err)
		if err == nil {
			o.topic(t)
		}
	}}
}

func getTopic(name, topic string) dstep {
	return getTopicIn(name, ownStream, topic)
}

func getTopicIn(name string, which func(d *dctx) Identifier, topic string) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		t, ok, err := d.c.GetTopic(ctx, which(d), Name(topic))
		o.err(err)
		o.set("found", ok)
		if ok {
			o.topic(t)
		}
	}}
}

func getTopics(name string) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		ts, err := d.c.GetTopics(ctx, d.s())
		o.err(err)
		o.set("count", len(ts))
		for i, t := range ts {
			o.topicHeader(fmt.Sprintf("topic[%d].", i), t)
		}
	}}
}

func updateTopic(name, topic, newName string, opts ...TopicOption) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		o.err(d.c.UpdateTopic(ctx, d.s(), Name(topic), newName, opts))
	}}
}

func deleteTopic(name string, which func(d *dctx) Identifier, topic string) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		o.err(d.c.DeleteTopic(ctx, which(d), Name(topic)))
	}}
}

func createPartitions(name, topic string, n uint32) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		o.err(d.c.CreatePartitions(ctx, d.s(), Name(topic), n))
	}}
}

func deletePartitions(name, topic string, n uint32) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		o.err(d.c.DeletePartitions(ctx, d.s(), Name(topic), n))
	}}
}

// dmsg is a message to send: payload and user headers.
type dmsg struct {
	payload string
	headers map[string]string
}

func diffBatch(t testing.TB, msgs []dmsg) []byte {
	var bb bridge.IggyBatchBuilder
	buf := bb.Begin(nil, origin0)
	for i, m := range msgs {
		var hdr []byte
		for _, k := range sortedKeys(m.headers) {
			var err error
			if hdr, err = bridge.AppendUserHeader(hdr, bridge.KindString, []byte(k), bridge.KindString, []byte(m.headers[k])); err != nil {
				t.Fatal(err)
			}
		}
		var id [16]byte
		id[0], id[1] = byte(i), 0xd1
		var err error
		if buf, err = bb.Append(buf, id, origin0+uint64(i)*1000, []byte(m.payload), hdr); err != nil {
			t.Fatal(err)
		}
	}
	buf, err := bb.Finish(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func msgs(tag string, n int) []dmsg {
	out := make([]dmsg, n)
	for i := range out {
		out[i] = dmsg{payload: fmt.Sprintf("%s-%d", tag, i)}
		if i%2 == 1 {
			out[i].headers = map[string]string{"kafka.key": fmt.Sprintf("k%d", i), "h": "v"}
		}
	}
	return out
}

func send(name, topic string, partition uint32, m []dmsg) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		conf, ok, err := d.c.SendMessages(ctx, d.s(), Name(topic), partition, diffBatch(nil, m))
		o.err(err)
		o.set("confirmed", ok)
		if ok {
			o.set("partition", conf.PartitionID)
			o.set("base_offset", conf.BaseOffset)
		}
	}}
}

var diffConsumer = PlainConsumer(ID(7))

func poll(name, topic string, partition *uint32, strategy PollingStrategy, count uint32, autoCommit bool) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		req := &PollRequest{Consumer: diffConsumer, Stream: d.s(), Topic: Name(topic), Partition: partition,
			Strategy: strategy, Count: count, AutoCommit: autoCommit}
		var got []string
		var bad error
		h, err := d.c.PollMessages(ctx, req, func(rec []byte) bool {
			v, err := bridge.ParseIggyBatch(rec)
			if err != nil {
				bad = err
				return false
			}
			it := bridge.NewIggyMessageIter(v)
			for it.Next() {
				m := it.Message()
				got = append(got, fmt.Sprintf("%d:%s%s", m.Offset, m.Payload, headersString(m.UserHeaders)))
			}
			if it.Err() != nil {
				bad = it.Err()
			}
			return true
		})
		if bad != nil {
			err = bad
		}
		o.err(err)
		if err == nil {
			o.set("partition", h.PartitionID)
			o.set("current_offset", h.CurrentOffset)
			o.set("count", h.Count)
			o.set("messages", strings.Join(got, " "))
		}
	}}
}

func headersString(block []byte) string {
	if len(block) == 0 {
		return ""
	}
	var parts []string
	it := bridge.NewUserHeaderIter(block)
	for it.Next() {
		parts = append(parts, fmt.Sprintf("%s=%s", it.Key(), it.Value()))
	}
	if it.Err() != nil {
		return "{unreadable}"
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func offsetRef(d *dctx, topic string, partition *uint32) *OffsetRef {
	return &OffsetRef{Consumer: diffConsumer, Stream: d.s(), Topic: Name(topic), Partition: partition}
}

func storeOffset(name, topic string, partition uint32, offset uint64) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		o.err(d.c.StoreConsumerOffset(ctx, offsetRef(d, topic, &partition), offset))
	}}
}

func getOffset(name, topic string, partition *uint32) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		co, ok, err := d.c.GetConsumerOffset(ctx, offsetRef(d, topic, partition))
		o.err(err)
		o.set("found", ok)
		if ok {
			o.set("partition", co.PartitionID)
			o.set("current_offset", co.CurrentOffset)
			o.set("stored_offset", co.StoredOffset)
		}
	}}
}

func deleteOffset(name, topic string, partition uint32) dstep {
	return dstep{name, func(ctx context.Context, d *dctx, o *obs) {
		o.err(d.c.DeleteConsumerOffset(ctx, offsetRef(d, topic, &partition)))
	}}
}

func ping() dstep {
	return dstep{"ping", func(ctx context.Context, d *dctx, o *obs) { o.err(d.c.Ping(ctx)) }}
}

func u32(v uint32) *uint32 { return &v }

func atOffset(v uint64) PollingStrategy { return PollingStrategy{Kind: PollOffset, Value: v} }

// diffSequences covers every command the gateway's client sends and the
// error cases the gateway maps to Kafka codes.
func diffSequences() []dseq {
	own := func(d *dctx) string { return d.stream }
	fresh := func(d *dctx) string { return d.stream + ".x" }
	freshID := func(d *dctx) Identifier { return Name(d.stream + ".x") }
	return []dseq{
		{"streams", []dstep{
			ping(),
			getStream("get new stream", ownStream),
			createStream("create existing stream", own),
			getStream("get missing stream", otherStream),
			deleteStream("delete missing stream", otherStream),
			createStream("create second stream", fresh),
			createTopicIn("topic in second stream", freshID, "t", 2),
			getStream("get second stream", freshID),
			deleteStream("delete second stream", freshID),
			getStream("get deleted stream", freshID),
			getTopicIn("topic of deleted stream", freshID, "t"),
		}},
		{"topics", []dstep{
			createTopic("create", "orders", 3),
			createTopic("create single", "a", 1),
			getTopic("get", "orders"),
			getTopics("list"),
			getStream("stream with topics", ownStream),
			createTopic("create existing", "orders", 2),
			createTopicIn("create in missing stream", otherStream, "orders", 1),
			createTopic("zero partitions", "zero", 0),
			createTopic("too many partitions", "many", 1001),
			getTopic("get missing", "nope"),
			getTopicIn("get in missing stream", otherStream, "orders"),
			deleteTopic("delete missing", ownStream, "nope"),
			deleteTopic("delete in missing stream", otherStream, "orders"),
			deleteTopic("delete", ownStream, "orders"),
			getTopic("get deleted", "orders"),
			createTopic("recreate", "orders", 1),
			getTopic("get recreated", "orders"),
		}},
		{"bad names", []dstep{
			createStream("stream name not utf-8", func(d *dctx) string { return "\xff\xfe" + d.stream }),
			createTopic("topic name not utf-8", "\xff\xfe", 1),
			createTopic("topic name 255 bytes", strings.Repeat("n", 255), 1),
			createTopic("topic name with spaces", "a b", 1),
			getTopic("get spaced", "a b"),
			createTopic("topic name empty", "", 1),
		}},
		{"topic options", []dstep{
			createTopic("durability", "dur", 1, OptBool(OptEnforceFsync, true), OptUint32(OptMessagesRequiredToSave, 1)),
			getTopic("get durability", "dur"),
			createTopic("every key typed", "all", 2,
				OptString(OptCompression, "gzip"), OptUint64(OptMessageExpiry, 60_000_000),
				OptUint64(OptMaxTopicSize, 8<<30), OptUint64(OptSegmentSize, 16<<20),
				OptBool(OptEnforceFsync, false), OptUint32(OptMessagesRequiredToSave, 10),
				OptUint64(OptSizeRequiredToSave, 1<<20), OptBool(OptPreallocateSegmts, false)),
			getTopic("get every key", "all"),
			createTopic("string values", "str", 1,
				OptString(OptEnforceFsync, "true"), OptString(OptMessagesRequiredToSave, "5"),
				OptString(OptSegmentSize, "32 MiB"), OptString(OptMessageExpiry, "1h"),
				OptString(OptMaxTopicSize, "unlimited")),
			getTopic("get string values", "str"),
			createTopic("server-default sentinels", "zeros", 1,
				OptUint64(OptMessageExpiry, 0), OptUint64(OptMaxTopicSize, 0), OptUint64(OptSegmentSize, 0)),
			createTopic("compression code", "code", 1, TopicOption{OptCompression, bridge.KindUint8, []byte{2}}),
			createTopic("unknown key", "bad1", 1, OptString("retention", "1d")),
			createTopic("messages_required_to_save 0", "bad2", 1, OptUint32(OptMessagesRequiredToSave, 0)),
			createTopic("messages_required_to_save over cap", "bad3", 1, OptUint32(OptMessagesRequiredToSave, 16<<20+1)),
			createTopic("segment_size below floor", "bad4", 1, OptUint64(OptSegmentSize, 4096)),
			createTopic("segment_size not 512-aligned", "bad5", 1, OptUint64(OptSegmentSize, 1<<20+1)),
			createTopic("segment_size over ceiling", "bad6", 1, OptUint64(OptSegmentSize, 2<<30)),
			createTopic("enforce_fsync as uint32", "bad7", 1, OptUint32(OptEnforceFsync, 1)),
			createTopic("enforce_fsync bool 2", "bad8", 1, TopicOption{OptEnforceFsync, bridge.KindBool, []byte{2}}),
			createTopic("compression unknown", "bad9", 1, OptString(OptCompression, "lz4")),
			createTopic("size to save over cap", "bad10", 1, OptUint64(OptSizeRequiredToSave, 1<<30+1)),
			createTopic("max_topic_size below segment", "bad11", 1, OptUint64(OptMaxTopicSize, 1<<20)),
			createTopic("preallocation too large", "bad12", 100, OptBool(OptPreallocateSegmts, true)),
			createTopic("duplicate key", "bad13", 1, OptUint32(OptMessagesRequiredToSave, 2), OptUint32(OptMessagesRequiredToSave, 3)),
			getTopics("list after refusals"),
		}},
		{"update topic", []dstep{
			createTopic("create", "u", 2, OptBool(OptEnforceFsync, true)),
			createTopic("create other", "other", 1),
			updateTopic("rename", "u", "u2"),
			getTopic("old name", "u"),
			getTopic("new name", "u2"),
			updateTopic("set updatable", "u2", "u2", OptString(OptCompression, "gzip"), OptUint64(OptMessageExpiry, 5_000_000),
				OptUint64(OptMaxTopicSize, 4<<30)),
			getTopic("after update", "u2"),
			updateTopic("set as strings", "u2", "u2", OptString(OptMessageExpiry, "2h")),
			getTopic("after string update", "u2"),
			updateTopic("enforce_fsync refused", "u2", "u2", OptBool(OptEnforceFsync, false)),
			updateTopic("segment_size refused", "u2", "u2", OptUint64(OptSegmentSize, 32<<20)),
			updateTopic("unknown key", "u2", "u2", OptString("retention", "1d")),
			updateTopic("bad value", "u2", "u2", OptString(OptCompression, "lz4")),
			updateTopic("max size below segment", "u2", "u2", OptUint64(OptMaxTopicSize, 1<<20)),
			updateTopic("rename onto existing", "u2", "other"),
			updateTopic("missing topic", "nope", "x"),
			getTopic("unchanged", "u2"),
		}},
		{"partitions", []dstep{
			createTopic("create", "p", 2),
			createPartitions("add 3", "p", 3),
			getTopic("after add", "p"),
			send("send to new partition", "p", 4, msgs("new", 2)),
			deletePartitions("delete 2", "p", 2),
			getTopic("after delete", "p"),
			send("send to deleted partition", "p", 4, msgs("gone", 1)),
			createPartitions("add 0", "p", 0),
			createPartitions("add 1001", "p", 1001),
			deletePartitions("delete 0", "p", 0),
			deletePartitions("delete more than exist", "p", 5),
			createPartitions("missing topic", "nope", 1),
			deletePartitions("delete in missing topic", "nope", 1),
			getTopic("unchanged", "p"),
		}},
		{"messages", []dstep{
			createTopic("create", "m", 3),
			send("send 3 to p0", "m", 0, msgs("a", 3)),
			send("send 2 to p0", "m", 0, msgs("b", 2)),
			send("send 1 to p1", "m", 1, msgs("c", 1)),
			getTopic("counts", "m"),
			getStream("stream counts", ownStream),
			poll("all of p0", "m", u32(0), atOffset(0), 100, false),
			poll("middle of p0", "m", u32(0), atOffset(2), 2, false),
			poll("p0 count 0", "m", u32(0), atOffset(0), 0, false),
			poll("last offset", "m", u32(0), atOffset(4), 10, false),
			poll("past the end", "m", u32(0), atOffset(5), 10, false),
			poll("far past the end", "m", u32(0), atOffset(1000), 10, false),
			poll("empty partition", "m", u32(2), atOffset(0), 10, false),
			poll("no partition given", "m", nil, atOffset(0), 10, false),
			poll("by timestamp 0", "m", u32(0), PollingStrategy{Kind: PollTimestamp}, 10, false),
			poll("by future timestamp", "m", u32(0), PollingStrategy{Kind: PollTimestamp, Value: uint64(time.Now().Add(time.Hour).UnixMicro())}, 10, false),
			poll("first", "m", u32(0), PollingStrategy{Kind: PollFirst}, 2, false),
			poll("last 2", "m", u32(0), PollingStrategy{Kind: PollLast}, 2, false),
			poll("next, auto-commit", "m", u32(0), PollingStrategy{Kind: PollNext}, 2, true),
			getOffset("offset after auto-commit", "m", u32(0)),
			poll("next again", "m", u32(0), PollingStrategy{Kind: PollNext}, 10, true),
			poll("next at end", "m", u32(0), PollingStrategy{Kind: PollNext}, 10, true),
			poll("missing partition", "m", u32(9), atOffset(0), 10, false),
			poll("missing topic", "nope", u32(0), atOffset(0), 10, false),
			send("send to missing partition", "m", 9, msgs("x", 1)),
			send("send to missing topic", "nope", 0, msgs("x", 1)),
			getTopic("counts unchanged", "m"),
		}},
		{"consumer offsets", []dstep{
			createTopic("create", "o", 2),
			send("send 3", "o", 0, msgs("o", 3)),
			getOffset("none stored", "o", u32(0)),
			storeOffset("store 1", "o", 0, 1),
			getOffset("get 1", "o", u32(0)),
			storeOffset("store last", "o", 0, 2),
			getOffset("get last", "o", u32(0)),
			storeOffset("store past end", "o", 0, 3),
			storeOffset("store on empty partition", "o", 1, 0),
			getOffset("get unchanged", "o", u32(0)),
			storeOffset("store to missing partition", "o", 9, 0),
			storeOffset("store to missing topic", "nope", 0, 0),
			getOffset("get missing partition", "o", u32(9)),
			getOffset("get missing topic", "nope", u32(0)),
			getOffset("no partition given", "o", nil),
			poll("next after stored offset", "o", u32(0), PollingStrategy{Kind: PollNext}, 10, false),
			deleteOffset("delete", "o", 0),
			getOffset("get deleted", "o", u32(0)),
			deleteOffset("delete again", "o", 0),
			deleteOffset("delete in missing partition", "o", 9),
		}},
	}
}

// diffClient dials addr for one sequence.
func diffClient(t *testing.T, addr string) *Client {
	t.Helper()
	o := testOptions(addr)
	o.PoolSize = 1 // one connection: replies in the order of the steps
	o.CallTimeout = 3 * time.Second
	c, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// runSequence creates the sequence's stream, runs the steps and returns
// one observation per step.
func runSequence(t *testing.T, c *Client, stream string, seq dseq) []obs {
	t.Helper()
	ctx := context.Background()
	d := &dctx{c: c, stream: stream}
	if _, err := c.CreateStream(ctx, stream); err != nil {
		t.Fatalf("%s: create stream: %v", seq.name, err)
	}
	out := make([]obs, len(seq.steps))
	for i, st := range seq.steps {
		st.run(ctx, d, &out[i])
	}
	return out
}

// compareObs lists the differences of two runs of seq.
func compareObs(seq dseq, fake, real []obs) []string {
	var diffs []string
	for i, st := range seq.steps {
		f, r := fake[i], real[i]
		keys := append([]string(nil), r.keys...)
		for _, k := range f.keys {
			if _, ok := r.vals[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			fv, fok := f.vals[k]
			rv, rok := r.vals[k]
			if !fok {
				fv = "(absent)"
			}
			if !rok {
				rv = "(absent)"
			}
			if fv != rv {
				diffs = append(diffs, fmt.Sprintf("%s / step %d %q / %s: iggytest %s, real %s", seq.name, i, st.name, k, fv, rv))
			}
		}
	}
	return diffs
}

// TestDifferential runs every sequence on a fresh iggytest server and on
// the real Iggy server and fails with each field that differs.
func TestDifferential(t *testing.T) {
	t.Parallel()
	realAddr := iggyreal.Shared(t)
	for _, seq := range diffSequences() {
		t.Run(strings.ReplaceAll(seq.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			srv, err := iggytest.Start(newEmbedded(t), iggytest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			fake := runSequence(t, diffClient(t, srv.Addr()), "diff", seq)

			stream := iggyreal.Stream(t)
			rc := diffClient(t, realAddr)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				for _, s := range []string{stream, stream + ".x"} {
					if err := rc.DeleteStream(ctx, Name(s)); err != nil && !errors.Is(err, ErrStreamNotFound) {
						t.Errorf("deleting stream %s: %v", s, err)
					}
				}
			})
			real := runSequence(t, rc, stream, seq)
			for _, d := range compareObs(seq, fake, real) {
				t.Error(d)
			}
			if testing.Verbose() {
				for i, st := range seq.steps {
					var b strings.Builder
					for _, k := range real[i].keys {
						fmt.Fprintf(&b, " %s=%s", k, real[i].vals[k])
					}
					t.Logf("%d %s:%s", i, st.name, b.String())
				}
			}
		})
	}
}
