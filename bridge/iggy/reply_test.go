package iggy

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// payloadOf decodes a whole reply frame down to its payload, as the reply
// to a request whose operation the reply echoes.
func payloadOf(t *testing.T, frame []byte) ([]byte, error) {
	t.Helper()
	return payloadAs(t, frame, echoedOp(frame))
}

// mustPayloadOf is payloadOf for a reply that must decode.
func mustPayloadOf(t *testing.T, frame []byte) []byte {
	t.Helper()
	p, err := payloadOf(t, frame)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantFound fails t unless a decoder answered got, found (ok), without an
// error, and got is want.
func wantFound[T comparable](t *testing.T, got T, ok bool, err error, want T) {
	t.Helper()
	if err != nil || !ok || got != want {
		t.Fatalf("got %+v %v %v, want %+v", got, ok, err, want)
	}
}

// pollMessages decodes a Poll reply with the messages of its records.
func pollMessages(t *testing.T, p []byte) (PollHead, []bridge.IggyMessage, error) {
	t.Helper()
	var msgs []bridge.IggyMessage
	h, err := decodePoll(p, func(rec []byte) bool {
		msgs = append(msgs, messagesOf(t, rec)...)
		return true
	})
	return h, msgs, err
}

// echoedOp is the operation byte of a reply frame (0 when too short).
func echoedOp(frame []byte) uint8 {
	if len(frame) < wire.HeaderSize {
		return 0
	}
	return frame[wire.RepOperation]
}

// payloadAs decodes a reply frame as the answer to a request sent with
// operation sent.
func payloadAs(t *testing.T, frame []byte, sent uint8) ([]byte, error) {
	t.Helper()
	r, err := decodeFrame(frame, sent)
	if err != nil {
		return nil, err
	}
	return r.payload()
}

func TestReplyFixtures(t *testing.T) {
	t.Parallel()
	fixture := func(t *testing.T, name string) []byte {
		t.Helper()
		return readHexFixture(t, "testdata/replies/"+name+".hex")
	}
	get := func(name string) ([]byte, error) { return payloadOf(t, fixture(t, name)) }
	// payload is get for a reply that must decode.
	payload := func(t *testing.T, name string) []byte {
		t.Helper()
		return mustPayloadOf(t, fixture(t, name))
	}
	t.Run("login", func(t *testing.T) {
		p := payload(t, "01_login")
		l, err := decodeLogin(p)
		want := LoginReply{UserID: 0, Session: 7, ServerProtocolVersion: 0x2c00, ServerVersion: "0.9.0-edge.5"}
		if err != nil || l != want {
			t.Fatalf("got %+v, %v", l, err)
		}
	})
	t.Run("committed rejection", func(t *testing.T) {
		_, err := get("02_create_topic_exists")
		var e *Error
		if !errors.As(err, &e) || e.Code != 2013 || !e.Committed {
			t.Fatalf("got %v", err)
		}
		if !errors.Is(err, ErrTopicExists) || !errors.Is(err, bridge.ErrTopicExists) {
			t.Fatal("2013 must match ErrTopicExists and bridge.ErrTopicExists")
		}
	})
	t.Run("status denial", func(t *testing.T) {
		_, err := get("03_deny_partition_not_found")
		if !errors.Is(err, ErrPartitionNotFound) || !errors.Is(err, bridge.ErrPartitionNotFound) || !errors.Is(err, ErrNotFound) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("get topic", func(t *testing.T) {
		p := payload(t, "04_get_topic")
		tp, err := decodeTopic(p)
		if err != nil {
			t.Fatal(err)
		}
		if tp.ID != 4 || tp.Name != "orders" || tp.PartitionsCount != 2 || tp.MessagesCount != 3 || len(tp.Partitions) != 2 {
			t.Fatalf("got %+v", tp)
		}
		if st := tp.Partitions[0].State(); st != (bridge.PartitionState{}) {
			t.Errorf("empty partition: %+v", st)
		}
		if st := tp.Partitions[1].State(); st != (bridge.PartitionState{Earliest: 2, Next: 5}) {
			t.Errorf("partition 1: %+v", st)
		}
	})
	t.Run("send", func(t *testing.T) {
		c, ok, err := decodeFirstConfirmation(payload(t, "05_send"))
		wantFound(t, c, ok, err, SendConfirmation{TopicID: 4, PartitionID: 2, BaseOffset: 5})
	})
	t.Run("poll", func(t *testing.T) {
		h, msgs, err := pollMessages(t, payload(t, "06_poll"))
		if err != nil || h != (PollHead{PartitionID: 2, CurrentOffset: 5, Count: 1}) {
			t.Fatalf("got %+v %v", h, err)
		}
		if len(msgs) != 1 || msgs[0].Offset != 5 || string(msgs[0].Payload) != "hello" || msgs[0].Timestamp != 1700000000500000 {
			t.Fatalf("got %+v", msgs)
		}
	})
	t.Run("consumer offset", func(t *testing.T) {
		o, ok, err := decodeConsumerOffset(payload(t, "07_consumer_offset"))
		wantFound(t, o, ok, err, ConsumerOffset{PartitionID: 2, CurrentOffset: 9, StoredOffset: 9})
	})
	t.Run("eviction", func(t *testing.T) {
		_, err := get("08_eviction_credentials")
		var ev *EvictionError
		if !errors.As(err, &ev) || ev.Reason != 9 || !errors.Is(err, ErrInvalidCredentials) || !errors.Is(err, bridge.ErrUnavailable) {
			t.Fatalf("got %v", err)
		}
	})
}

// messagesOf reads a stored record's messages (checksums verified too).
func messagesOf(t *testing.T, rec []byte) []bridge.IggyMessage {
	t.Helper()
	v, err := bridge.ParseIggyBatch(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out []bridge.IggyMessage
	it := bridge.NewIggyMessageIter(v)
	for it.Next() {
		m := *it.Message()
		m.Payload = append([]byte(nil), m.Payload...)
		m.UserHeaders = append([]byte(nil), m.UserHeaders...)
		out = append(out, m)
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return out
}

// TestReplyVectors decodes the official SDK's reply vectors and compares
// with what the SDK's own decoders returned.
func TestReplyVectors(t *testing.T) {
	t.Parallel()
	vs := loadVectors(t)
	pay := func(name string) ([]byte, error) { return payloadOf(t, mustHex(t, vs[name].Hex)) }

	t.Run("login", func(t *testing.T) {
		var want LoginReply
		p := vectorReply(t, vs, "reply_login_register", &want)
		if got, err := decodeLogin(p); err != nil || got != want {
			t.Fatalf("got %+v %v, want %+v", got, err, want)
		}
	})
	t.Run("ping", func(t *testing.T) {
		if p, err := pay("reply_ping"); err != nil || len(p) != 0 {
			t.Fatalf("got %x %v", p, err)
		}
	})
	t.Run("create stream", func(t *testing.T) {
		var want struct {
			ID        uint32 `json:"id"`
			Name      string `json:"name"`
			CreatedAt uint64 `json:"createdAt"`
		}
		s, err := decodeStream(vectorReply(t, vs, "reply_create_stream", &want))
		if err != nil || s.ID != want.ID || s.Name != want.Name || s.CreatedAt != want.CreatedAt {
			t.Fatalf("got %+v %v, want %+v", s, err, want)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for name, want := range map[string]error{
			"reply_create_stream_name_exists":        ErrStreamExists,
			"reply_deny_status_1009":                 bridge.ErrTopicNotFound,
			"reply_register_transient_not_committed": ErrTransient,
			"eviction_invalid_credentials":           ErrInvalidCredentials,
			"eviction_incompatible_protocol":         ErrIncompatibleProtocol,
			"eviction_malformed_login":               ErrInvalidRequest,
		} {
			if _, err := pay(name); !errors.Is(err, want) {
				t.Errorf("%s: got %v, want %v", name, err, want)
			}
		}
	})
	t.Run("get topic", func(t *testing.T) { checkTopicVector(t, vs, "reply_get_topic") })
	t.Run("get topics", func(t *testing.T) {
		ts, err := decodeTopics(vectorReply(t, vs, "reply_get_topics", nil))
		if err != nil || len(ts) != 1 || ts[0].Name != "events" || ts[0].PartitionsCount != 3 || ts[0].MessagesCount != 3 {
			t.Fatalf("got %+v %v", ts, err)
		}
	})
	t.Run("send", func(t *testing.T) {
		cs, err := decodeSendReply(vectorReply(t, vs, "reply_send_messages", nil))
		if err != nil || !reflect.DeepEqual(cs, []SendConfirmation{{}}) {
			t.Fatalf("got %+v %v", cs, err)
		}
	})
	for _, name := range []string{"reply_poll_messages", "reply_poll_rust_parity"} {
		t.Run(name, func(t *testing.T) { checkPollVector(t, vs, name) })
	}
	t.Run("resync sentinel", func(t *testing.T) {
		h, err := decodePoll(vectorReply(t, vs, "reply_poll_resync_sentinel", nil), nil)
		if err != nil || h.PartitionID != ResyncSentinel || h.Count != 0 {
			t.Fatalf("got %+v %v", h, err)
		}
	})
	t.Run("consumer offset", func(t *testing.T) {
		o, ok, err := decodeConsumerOffset(vectorReply(t, vs, "reply_get_consumer_offset", nil))
		wantFound(t, o, ok, err, ConsumerOffset{PartitionID: 1, CurrentOffset: 2, StoredOffset: 1})
	})
	t.Run("store consumer offset", func(t *testing.T) {
		if p, err := pay("reply_store_consumer_offset"); err != nil || len(p) != 0 {
			t.Fatalf("got %x %v", p, err)
		}
	})
}

// vectorReply is the payload of vector name's reply, which must decode;
// with want non-nil, the SDK's decoded answer is read into it.
func vectorReply(t *testing.T, vs map[string]vector, name string, want any) []byte {
	t.Helper()
	if want != nil {
		if err := json.Unmarshal(vs[name].Decoded, want); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return mustPayloadOf(t, mustHex(t, vs[name].Hex))
}

func checkTopicVector(t *testing.T, vs map[string]vector, name string) {
	var want struct {
		ID            uint32 `json:"id"`
		Name          string `json:"name"`
		Size          uint64 `json:"size"`
		MessageExpiry uint64 `json:"messageExpiry"`
		MaxTopicSize  uint64 `json:"maxTopicSize"`
		Partitions    []struct {
			ID            uint32 `json:"id"`
			MessagesCount uint64 `json:"messagesCount"`
			CurrentOffset uint64 `json:"currentOffset"`
			SizeBytes     uint64 `json:"sizeBytes"`
			SegmentsCount uint32 `json:"segmentsCount"`
		} `json:"partitions"`
	}
	tp, err := decodeTopic(vectorReply(t, vs, name, &want))
	if err != nil {
		t.Fatal(err)
	}
	if tp.ID != want.ID || tp.Name != want.Name || tp.SizeBytes != want.Size || tp.MessageExpiry != want.MessageExpiry ||
		tp.MaxTopicSize != want.MaxTopicSize || len(tp.Partitions) != len(want.Partitions) || len(tp.DerivedOptions) == 0 {
		t.Fatalf("got %+v, want %+v", tp, want)
	}
	for i, wp := range want.Partitions {
		gp := tp.Partitions[i]
		if gp.ID != wp.ID || gp.MessagesCount != wp.MessagesCount || gp.CurrentOffset != wp.CurrentOffset ||
			gp.SizeBytes != wp.SizeBytes || gp.SegmentsCount != wp.SegmentsCount {
			t.Errorf("partition %d: got %+v, want %+v", i, gp, wp)
		}
	}
	if st := tp.Partitions[1].State(); st != (bridge.PartitionState{Earliest: 0, Next: 3}) {
		t.Errorf("partition 1 state %+v", st)
	}
}

func checkPollVector(t *testing.T, vs map[string]vector, name string) {
	var want struct {
		Count         uint32 `json:"count"`
		CurrentOffset uint64 `json:"current_offset"`
		PartitionID   uint32 `json:"partition_id"`
		Messages      []struct {
			Offset, Timestamp, OriginTimestamp, Checksum uint64
			Payload                                      string
		} `json:"messages"`
	}
	h, got, err := pollMessages(t, vectorReply(t, vs, name, &want))
	if err != nil || h.Count != want.Count || h.CurrentOffset != want.CurrentOffset || h.PartitionID != want.PartitionID {
		t.Fatalf("head %+v %v, want %+v", h, err, want)
	}
	if len(got) != len(want.Messages) {
		t.Fatalf("%d messages, want %d", len(got), len(want.Messages))
	}
	for i, w := range want.Messages {
		g := got[i]
		if g.Offset != w.Offset || g.Timestamp != w.Timestamp || g.OriginTimestamp != w.OriginTimestamp ||
			g.Checksum != w.Checksum || string(g.Payload) != w.Payload {
			t.Errorf("message %d: got %+v, want %+v", i, g, w)
		}
	}
}
