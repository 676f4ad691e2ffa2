package embedded

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

func TestGroupOffsets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, reopen := reopenableStore(t, SyncAlways)
	if _, err := s.CreateTopic(ctx, "kafka", "t", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "u", 1); err != nil {
		t.Fatal(err)
	}
	commit := func(group, topic string, p int32, off int64) {
		t.Helper()
		o := bridge.CommittedOffset{Offset: off, LeaderEpoch: 3, Metadata: "m" + fmt.Sprint(off), CommitTime: 42}
		if err := s.CommitOffset(ctx, "kafka", group, topic, p, o); err != nil {
			t.Fatal(err)
		}
	}
	commit("a", "t", 1, 7)
	commit("a", "t", 0, 0) // Kafka's 0 is kept as is
	commit("a", "u", 0, 9)
	commit("ab", "t", 0, 5) // a longer group with the same prefix
	if err := s.CommitOffset(ctx, "kafka", "a", "nope", 0, bridge.CommittedOffset{}); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
	if err := s.CommitOffset(ctx, "kafka", "a", "t", 2, bridge.CommittedOffset{}); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Fatalf("unknown partition: %v", err)
	}

	o, ok, err := s.FetchOffset(ctx, "kafka", "a", "t", 1)
	if err != nil || !ok || o != (bridge.CommittedOffset{Offset: 7, LeaderEpoch: 3, Metadata: "m7", CommitTime: 42}) {
		t.Fatalf("fetch: %+v %v %v", o, ok, err)
	}
	if _, ok, _ := s.FetchOffset(ctx, "kafka", "b", "t", 1); ok {
		t.Fatal("offset of another group")
	}
	all, err := s.GroupOffsets(ctx, "kafka", "a")
	if err != nil || len(all) != 3 || all[0].Topic != "t" || all[0].Partition != 0 || all[0].Offset != 0 ||
		all[1].Partition != 1 || all[2].Topic != "u" {
		t.Fatalf("group offsets: %+v %v", all, err)
	}
	groups, ok, err := s.OffsetGroups(ctx, "kafka")
	if err != nil || !ok || fmt.Sprint(groups) != "[a ab]" {
		t.Fatalf("groups: %v %v %v", groups, ok, err)
	}

	// Survives a reopen.
	s = reopen()
	if o, ok, _ := s.FetchOffset(ctx, "kafka", "a", "u", 0); !ok || o.Offset != 9 {
		t.Fatalf("after reopen: %+v %v", o, ok)
	}

	// A topic made again does not inherit offsets.
	if err := s.DeleteTopic(ctx, "kafka", "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, "kafka", "u", 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.FetchOffset(ctx, "kafka", "a", "u", 0); ok {
		t.Fatal("recreated topic inherited an offset")
	}

	// Deletes.
	if err := s.DeleteOffset(ctx, "kafka", "a", "t", 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.FetchOffset(ctx, "kafka", "a", "t", 1); ok {
		t.Fatal("deleted offset still there")
	}
	if err := s.DeleteGroupOffsets(ctx, "kafka", "a"); err != nil {
		t.Fatal(err)
	}
	groups, _, _ = s.OffsetGroups(ctx, "kafka")
	if fmt.Sprint(groups) != "[ab]" {
		t.Fatalf("groups after delete: %v", groups)
	}
	if o, ok, _ := s.FetchOffset(ctx, "kafka", "ab", "t", 0); !ok || o.Offset != 5 {
		t.Fatalf("other group touched: %+v %v", o, ok)
	}
}
