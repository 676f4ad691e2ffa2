package iggy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
	"github.com/iggy-kafka/gateway/internal/iggyreal"
)

// segment.bytes is the Iggy topic's segment_size: set at creation, read
// back, refused out of Iggy's bounds (no topic left) and refused as a
// change. Both servers.
func TestSegmentBytes(t *testing.T) {
	t.Parallel()
	eachServer(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		s := e.store
		cfg := bridge.TopicConfigs{"segment.bytes": "1048576", "retention.ms": "2000"}
		e.configuredTopic(t, "seg", 1, cfg)
		tp, _, err := s.c.GetTopic(ctx, Name(e.stream), Name("seg"))
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := segmentSize(&tp); !ok || n != 1<<20 {
			t.Fatalf("segment_size %d %v", n, ok)
		}
		if got, err := s.TopicConfigs(ctx, e.stream, "seg"); err != nil || got["segment.bytes"] != "1048576" || got["retention.ms"] != "2000" {
			t.Fatalf("configs %v %v", got, err)
		}
		// The same segment size with another retention is a change Iggy takes.
		if err := s.SetTopicConfigs(ctx, e.stream, "seg", bridge.TopicConfigs{"segment.bytes": "1048576", "retention.ms": "3000"}); err != nil {
			t.Fatal(err)
		}
		var ce *bridge.ConfigError
		for _, next := range []bridge.TopicConfigs{{"segment.bytes": "2097152"}, {"retention.ms": "3000"}} {
			if err := s.SetTopicConfigs(ctx, e.stream, "seg", next); !errors.As(err, &ce) || ce.Name != "segment.bytes" {
				t.Errorf("change to %v: %v", next, err)
			}
		}
		if got, _ := s.TopicConfigs(ctx, e.stream, "seg"); got["retention.ms"] != "3000" || got["segment.bytes"] != "1048576" {
			t.Errorf("after refused changes: %v", got)
		}
		for _, bad := range []string{"1000", "1048577", "2147483136"} {
			_, err := s.CreateTopicWithConfigs(ctx, e.stream, "bad", 1, bridge.TopicConfigs{"segment.bytes": bad})
			if !errors.As(err, &ce) || ce.Name != "segment.bytes" {
				t.Errorf("segment.bytes %s: %v", bad, err)
			}
			if _, err := s.Topic(ctx, e.stream, "bad"); !errors.Is(err, bridge.ErrTopicNotFound) {
				t.Errorf("refused topic exists: %v", err)
			}
		}
		// A topic without it reports none (the server's derived default
		// is not a config the topic set).
		e.topic(t, "plain", 1)
		if got, _ := s.TopicConfigs(ctx, e.stream, "plain"); len(got) != 0 {
			t.Errorf("plain topic: %v", got)
		}
	})
}

// What the real server does with retention.ms (measured, docs/IGGY.md):
// its segment cleaner (every data_maintenance.messages.interval, 1 s
// here, 1 minute by default) deletes whole sealed segments whose newest
// message, by append time, is older than message_expiry; the active
// segment stays. With 1 MiB segments, 3 MiB written are gone within a few
// seconds, and Partition's Earliest follows what Iggy still has. A
// committed consumer offset is a barrier: segments past it stay.
func TestRetentionRealServer(t *testing.T) {
	t.Parallel()
	srv := iggyreal.StartPrivate(t, "IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=1s")
	s, err := Open(context.Background(), testOptions(srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := bridge.TopicConfigs{"segment.bytes": "1048576", "retention.ms": "2000"}
	for _, topic := range []string{"free", "held"} {
		if _, err := s.CreateTopicWithConfigs(ctx, "kafka", topic, 1, cfg); err != nil {
			t.Fatal(err)
		}
		payload := bytes.Repeat([]byte{'x'}, 1000)
		for b := 0; b < 30; b++ { // 3000 messages, about 3 MiB: three sealed segments
			// Origin timestamps of 1970: Iggy goes by append time.
			buf := buildBatch(t, 1, 100, func(i int) testMsg {
				return testMsg{id: [16]byte{byte(i), byte(b), 1}, ts: 1, payload: payload}
			})
			if _, err := s.Append(ctx, "kafka", topic, 0, buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A Kafka group commit at 3 is the Iggy consumer offset 2.
	if err := s.CommitOffset(ctx, "kafka", "g", "held", 0, bridge.CommittedOffset{Offset: 3, LeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	var st bridge.PartitionState
	await.Until(t, 30*time.Second, func() error {
		if st, err = s.Partition(ctx, "kafka", "free", 0); err != nil {
			t.Fatal(err)
		}
		if st.Earliest == 0 {
			return fmt.Errorf("nothing expired: %+v", st)
		}
		return nil
	})
	t.Logf("earliest %d of %d after expiry", st.Earliest, st.Next)
	if st.Next != 3000 {
		t.Fatalf("next %d", st.Next)
	}
	got := pollAll(t, s, "kafka", "free", 0, st.Earliest, 1<<20)
	if len(got.offsets) > 0 && got.offsets[0] != st.Earliest {
		t.Fatalf("first message read %d, earliest %d", got.offsets[0], st.Earliest)
	}
	time.Sleep(3 * time.Second) // three more cleaner passes
	if st, _ := s.Partition(ctx, "kafka", "held", 0); st.Earliest != 0 {
		t.Fatalf("a committed consumer offset did not hold the segments: %+v", st)
	}
}
