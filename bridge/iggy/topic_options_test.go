package iggy

import (
	"bytes"
	"context"
	"testing"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// TestTopicDurabilityOnRealServer: the Store creates topics with the
// storage settings of its --fsync policy, the real server keeps them, and
// WeakTopics names exactly the topics that cannot keep a stricter one.
func TestTopicDurabilityOnRealServer(t *testing.T) {
	t.Parallel()
	e := newRealEnv(t)
	ctx := context.Background()
	for _, pol := range []string{"always", "interval", "never"} {
		want, err := DurabilityFor(pol)
		if err != nil {
			t.Fatal(err)
		}
		e.store.c.opts.Durability = &want
		if _, err := e.store.CreateTopic(ctx, e.stream, pol, 2); err != nil {
			t.Fatal(err)
		}
		tp, ok, err := e.store.c.GetTopic(ctx, Name(e.stream), Name(pol))
		if err != nil || !ok {
			t.Fatalf("get topic %s: %v %v", pol, ok, err)
		}
		got, ok := tp.Durability()
		if !ok || got != want {
			t.Fatalf("%s: topic has %v (known %v), want %v", pol, got, ok, want)
		}
	}
	// A topic made without options (another client, an older gateway)
	// gets the server's defaults.
	if _, err := e.store.c.CreateTopic(ctx, Name(e.stream), "native", 1, nil); err != nil {
		t.Fatal(err)
	}
	always, _ := DurabilityFor("always")
	weak, err := e.store.WeakTopics(ctx, always, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Durability{}
	for _, w := range weak {
		if !w.Known {
			t.Fatalf("settings of %s not read", w.Topic)
		}
		names[w.Topic] = w.Has
	}
	if len(names) != 3 || names["never"] != (Durability{false, 1024}) || names["native"] != (Durability{false, 1024}) ||
		names["interval"] != (Durability{false, 1}) {
		t.Fatalf("weak topics for always: %+v", weak)
	}
	interval, _ := DurabilityFor("interval")
	if weak, _ := e.store.WeakTopics(ctx, interval, e.stream); len(weak) != 2 {
		t.Fatalf("weak topics for interval: %+v", weak)
	}
	never, _ := DurabilityFor("never")
	if weak, _ := e.store.WeakTopics(ctx, never, e.stream); len(weak) != 0 {
		t.Fatalf("weak topics for never: %+v", weak)
	}
}

func TestDurabilityKeeps(t *testing.T) {
	t.Parallel()
	always, _ := DurabilityFor("always")
	interval, _ := DurabilityFor("interval")
	never, _ := DurabilityFor("never")
	for _, c := range []struct {
		has, want Durability
		keeps     bool
	}{
		{always, always, true}, {always, never, true}, {interval, always, false}, {interval, interval, true},
		{never, interval, false}, {Durability{true, 1024}, always, false}, {Durability{true, 0}, never, false},
	} {
		if got := c.has.Keeps(c.want); got != c.keeps {
			t.Errorf("%v keeps %v = %v, want %v", c.has, c.want, got, c.keeps)
		}
	}
	if _, err := DurabilityFor("sometimes"); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

// TestTopicDurabilityDecoding reads option blocks in the shapes a server
// may send: explicit before derived, string values, garbage.
func TestTopicDurabilityDecoding(t *testing.T) {
	t.Parallel()
	explicit := appendDurability(nil, Durability{EnforceFsync: true, MessagesRequiredToSave: 7})
	derived := appendDurability(nil, Durability{EnforceFsync: false, MessagesRequiredToSave: 1024})
	tp := Topic{Options: explicit, DerivedOptions: derived}
	if d, ok := tp.Durability(); !ok || d != (Durability{true, 7}) {
		t.Fatalf("explicit first: %v %v", d, ok)
	}
	tp = Topic{DerivedOptions: derived}
	if d, ok := tp.Durability(); !ok || d != (Durability{false, 1024}) {
		t.Fatalf("derived only: %v %v", d, ok)
	}
	str := appendOption(nil, OptEnforceFsync, 2, []byte("true"))
	str = appendOption(str, OptMessagesRequiredToSave, 2, []byte("1"))
	tp = Topic{Options: str}
	if d, ok := tp.Durability(); !ok || d != (Durability{true, 1}) {
		t.Fatalf("string values: %v %v", d, ok)
	}
	if _, ok := (&Topic{Options: []byte{0, 1, 2}}).Durability(); ok {
		t.Fatal("garbage block read as known")
	}
	if _, ok := (&Topic{}).Durability(); ok {
		t.Fatal("no blocks read as known")
	}
}

// TestTopicOptionsRoundTrip: every constructor's entry encodes in the
// server's TLV layout (the bytes of fixture 16) and parses back, and a
// malformed block is an error, not a panic.
func TestTopicOptionsRoundTrip(t *testing.T) {
	t.Parallel()
	opts := []TopicOption{OptBool(OptEnforceFsync, true), OptUint32(OptMessagesRequiredToSave, 1)}
	block, err := AppendTopicOptions(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	fixture := readHexFixture(t, "testdata/requests/16_create_topic_options.hex")
	if !bytes.HasSuffix(fixture, block) {
		t.Fatalf("block %x is not the tail of fixture 16", block)
	}
	all := append(opts, OptString(OptCompression, "gzip"), OptUint64(OptMessageExpiry, 5))
	block, err = AppendTopicOptions(nil, all)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseTopicOptions(block)
	if err != nil || len(got) != len(all) {
		t.Fatalf("parse: %v %v", got, err)
	}
	for i := range all {
		if got[i].Key != all[i].Key || got[i].Kind != all[i].Kind || !bytes.Equal(got[i].Value, all[i].Value) {
			t.Fatalf("entry %d: got %v want %v", i, got[i], all[i])
		}
	}
	if s := got[0].String() + " " + got[1].String() + " " + got[2].String(); s != `enforce_fsync=true messages_required_to_save=1(kind 11) compression_algorithm="gzip"` {
		t.Fatalf("String: %s", s)
	}
	if _, err := ParseTopicOptions(block[:len(block)-1]); err == nil {
		t.Fatal("truncated block parsed")
	}
	if _, err := AppendTopicOptions(nil, []TopicOption{OptString("", "x")}); err == nil {
		t.Fatal("empty key encoded")
	}
}

// FuzzTopicOptions: ParseTopicOptions never panics, and what it accepts
// and the encoder also accepts (the reader is more lenient than the
// writer, e.g. about value widths) encodes back to the same bytes.
func FuzzTopicOptions(f *testing.F) {
	for _, path := range []string{"testdata/requests/16_create_topic_options.hex", "testdata/requests/17_update_topic.hex"} {
		f.Add(readHexFixture(f, path)[wire.HeaderSize:])
	}
	f.Fuzz(func(t *testing.T, block []byte) {
		opts, err := ParseTopicOptions(block)
		if err != nil {
			return
		}
		again, err := AppendTopicOptions(nil, opts)
		if err == nil && !bytes.Equal(again, block) {
			t.Fatalf("round trip: %x -> %x", block, again)
		}
	})
}
