package iggy

import (
	"context"
	"errors"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// Kafka's next offset N is Iggy's last consumed N-1 under the consumer
// "kafka.cg.<group>", which a native client reads as such.
func TestGroupOffsetsKeying(t *testing.T) { eachServer(t, testGroupOffsetsKeying) }

func testGroupOffsetsKeying(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	if _, err := s.CreateTopic(ctx, e.stream, "t", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, e.stream, "t", 0, testBatch(t, "x", 0, 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, bridge.CommittedOffset{Offset: 3, Metadata: "dropped"}); err != nil {
		t.Fatal(err)
	}
	p := uint32(0)
	ref := &OffsetRef{Consumer: PlainConsumer(Name("kafka.cg.g")), Stream: Name(e.stream), Topic: Name("t"), Partition: &p}
	native, ok, err := s.Client().GetConsumerOffset(ctx, ref)
	if err != nil || !ok || native.StoredOffset != 2 {
		t.Fatalf("native view: %+v %v %v", native, ok, err)
	}
	o, ok, err := s.FetchOffset(ctx, e.stream, "g", "t", 0)
	if err != nil || !ok || o.Offset != 3 || o.Metadata != "" || o.LeaderEpoch != -1 {
		t.Fatalf("fetch: %+v %v %v", o, ok, err)
	}
	// A native consumer storing 4 (consumed through 4) moves the group to 5.
	if err := s.Client().StoreConsumerOffset(ctx, ref, 4); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := s.FetchOffset(ctx, e.stream, "g", "t", 0); o.Offset != 5 {
		t.Fatalf("after a native store: %+v", o)
	}
	// Past the last message, and anything on an empty partition: refused.
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, bridge.CommittedOffset{Offset: 7}); !errors.Is(err, bridge.ErrOffsetNotStorable) {
		t.Fatalf("past the end: %v", err)
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 1, bridge.CommittedOffset{Offset: 1}); !errors.Is(err, bridge.ErrOffsetNotStorable) {
		t.Fatalf("empty partition: %v", err)
	}
	// 0 deletes: reads back as none (and deleting nothing is fine).
	for range 2 {
		if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, bridge.CommittedOffset{Offset: 0}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s.FetchOffset(ctx, e.stream, "g", "t", 0); ok {
		t.Fatal("commit 0 left an offset")
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "nope", 0, bridge.CommittedOffset{Offset: 1}); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
	// Listing and deleting a group's offsets.
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, bridge.CommittedOffset{Offset: 2}); err != nil {
		t.Fatal(err)
	}
	all, err := s.GroupOffsets(ctx, e.stream, "g")
	if err != nil || len(all) != 1 || all[0].Topic != "t" || all[0].Offset != 2 {
		t.Fatalf("group offsets: %+v %v", all, err)
	}
	if _, ok, _ := s.OffsetGroups(ctx, e.stream); ok {
		t.Fatal("Iggy cannot list consumers")
	}
	if err := s.DeleteGroupOffsets(ctx, e.stream, "g"); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.GroupOffsets(ctx, e.stream, "g"); len(all) != 0 {
		t.Fatalf("after delete: %+v", all)
	}
}
