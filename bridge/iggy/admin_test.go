package iggy

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/internal/await"
)

// testAdminStore: GrowPartitions adds partitions (never removes), sizes
// are per partition, DeleteRecords raises Earliest durably (a second
// client, a restarted gateway, sees it), refuses past the high watermark,
// and reads below it are not answered by the timestamp lookup.
func testAdminStore(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	e.topic(t, "adm", 1)
	if _, err := s.GrowPartitions(ctx, e.stream, "nope", 3); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("grow missing topic: %v", err)
	}
	info, err := s.GrowPartitions(ctx, e.stream, "adm", 3)
	if err != nil || info.Partitions != 3 {
		t.Fatalf("grow to 3: %+v %v", info, err)
	}
	if info, err := s.GrowPartitions(ctx, e.stream, "adm", 2); err != nil || info.Partitions != 3 {
		t.Fatalf("grow to 2 shrank: %+v %v", info, err)
	}
	for i := range 2 {
		e.put(t, "adm", 2, testBatch(t, "m", 5*i, 5))
	}
	sizes, err := s.PartitionSizes(ctx, e.stream, "adm")
	if err != nil || len(sizes) != 3 || sizes[2] <= 0 || sizes[0] != 0 {
		t.Fatalf("sizes: %v %v", sizes, err)
	}
	if _, err := s.DeleteRecords(ctx, e.stream, "adm", 2, 11); !errors.Is(err, bridge.ErrOffsetOutOfRange) {
		t.Fatalf("past the high watermark: %v", err)
	}
	st, err := s.DeleteRecords(ctx, e.stream, "adm", 2, 7)
	if err != nil || st != (bridge.PartitionState{Earliest: 7, Next: 10}) {
		t.Fatalf("delete to 7: %+v %v", st, err)
	}
	if st, err := s.DeleteRecords(ctx, e.stream, "adm", 2, 3); err != nil || st.Earliest != 7 {
		t.Fatalf("lower start: %+v %v", st, err)
	}
	if st, err := s.Partition(ctx, e.stream, "adm", 2); err != nil || st != (bridge.PartitionState{Earliest: 7, Next: 10}) {
		t.Fatalf("partition after delete: %+v %v", st, err)
	}
	if off, found, err := s.OffsetForTimestamp(ctx, e.stream, "adm", 2, 0); err != nil || !found || off != 7 {
		t.Fatalf("timestamp lookup: %d %v %v", off, found, err)
	}
	if _, err := s.DeleteRecords(ctx, e.stream, "adm", 3, 0); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Fatalf("missing partition: %v", err)
	}

	// Another gateway sees the start at once, and sees this one's later
	// change within the refresh period.
	s2 := e.another(t)
	if st, err := s2.Partition(ctx, e.stream, "adm", 2); err != nil || st.Earliest != 7 {
		t.Fatalf("second client: %+v %v", st, err)
	}
	if _, err := s.DeleteRecords(ctx, e.stream, "adm", 2, 10); err != nil {
		t.Fatal(err)
	}
	await.Until(t, 5*logStartRefresh, func() error {
		st, err := s2.Partition(ctx, e.stream, "adm", 2)
		if err != nil {
			t.Fatal(err)
		}
		if st != (bridge.PartitionState{Earliest: 10, Next: 10}) {
			return fmt.Errorf("second client never saw the new start: %+v", st)
		}
		return nil
	})

	// A topic made again under the same name starts from 0.
	if err := s.DeleteTopic(ctx, e.stream, "adm"); err != nil {
		t.Fatal(err)
	}
	e.topic(t, "adm", 3)
	e.put(t, "adm", 2, testBatch(t, "n", 0, 2))
	if st, err := s.Partition(ctx, e.stream, "adm", 2); err != nil || st != (bridge.PartitionState{Earliest: 0, Next: 2}) {
		t.Fatalf("recreated topic: %+v %v", st, err)
	}
}

func TestParseStart(t *testing.T) {
	t.Parallel()
	k := startKey{stream: "s", topic: "topic", id: 7, partition: 3}
	b := appendStart(nil, k, 42)
	got, start, ok := parseStart(b)
	if !ok || got != k || start != 42 {
		t.Fatalf("round trip: %+v %d %v", got, start, ok)
	}
	for i := range b {
		if _, _, ok := parseStart(b[:i]); ok {
			t.Fatalf("truncated to %d parsed", i)
		}
	}
}

// testTopicState: one TopicState answers what Topic and a Partition per
// partition answer, log starts (DeleteRecords) included, and a missing
// topic is ErrTopicNotFound.
func testTopicState(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	if _, _, err := s.TopicState(ctx, e.stream, "ts-missing"); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("missing topic: %v", err)
	}
	e.topic(t, "ts", 3)
	e.put(t, "ts", 0, testBatch(t, "a", 0, 4))
	e.put(t, "ts", 2, testBatch(t, "c", 0, 9))
	if _, err := s.DeleteRecords(ctx, e.stream, "ts", 2, 5); err != nil {
		t.Fatal(err)
	}
	ti, states, err := s.TopicState(ctx, e.stream, "ts")
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Topic(ctx, e.stream, "ts")
	if err != nil || ti != want {
		t.Fatalf("topic %+v, Topic says %+v (%v)", ti, want, err)
	}
	if len(states) != 3 {
		t.Fatalf("%d states, want 3", len(states))
	}
	for p := range int32(3) {
		st, err := s.Partition(ctx, e.stream, "ts", p)
		if err != nil || states[p] != st {
			t.Fatalf("partition %d: %+v, Partition says %+v (%v)", p, states[p], st, err)
		}
	}
	if states[0] != (bridge.PartitionState{Earliest: 0, Next: 4}) || states[1] != (bridge.PartitionState{}) ||
		states[2] != (bridge.PartitionState{Earliest: 5, Next: 9}) {
		t.Fatalf("states %+v", states)
	}
}

// TestAdminStore runs the admin scenarios above on both servers, each a
// subtest of its own.
func TestAdminStore(t *testing.T) {
	t.Parallel()
	eachScenario(t,
		serverScenario{"PartitionsAndRecords", testAdminStore},
		serverScenario{"TopicState", testTopicState},
	)
}
