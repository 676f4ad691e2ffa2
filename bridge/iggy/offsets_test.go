package iggy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
)

// Kafka's next offset N is Iggy's last consumed N-1 under the consumer
// "kafka.cg.<group>", which a native client reads as such; the group log
// keeps what Iggy cannot (0, metadata, epoch, commit time, the group list).
func testGroupOffsetsKeying(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	e.topic(t, "t", 2)
	e.put(t, "t", 0, testBatch(t, "x", 0, 5))
	if gs, ok, err := s.OffsetGroups(ctx, e.stream); err != nil || !ok || len(gs) != 0 {
		t.Fatalf("groups before any commit: %q %v %v", gs, ok, err)
	}
	want := bridge.CommittedOffset{Offset: 3, LeaderEpoch: 7, Metadata: "kept", CommitTime: 1_700_000_000_123}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, want); err != nil {
		t.Fatal(err)
	}
	p := uint32(0)
	ref := &OffsetRef{Consumer: PlainConsumer(Name("kafka.cg.g")), Stream: Name(e.stream), Topic: Name("t"), Partition: &p}
	native, ok, err := s.Client().GetConsumerOffset(ctx, ref)
	if err != nil || !ok || native.StoredOffset != 2 {
		t.Fatalf("native view: %+v %v %v", native, ok, err)
	}
	if o, ok, err := s.FetchOffset(ctx, e.stream, "g", "t", 0); err != nil || !ok || o != want {
		t.Fatalf("fetch: %+v %v %v, want %+v", o, ok, err, want)
	}
	// A native consumer storing 4 (consumed through 4) moves the group to
	// 5; the record no longer matches, so its metadata goes.
	if err := s.Client().StoreConsumerOffset(ctx, ref, 4); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := s.FetchOffset(ctx, e.stream, "g", "t", 0); o != (bridge.CommittedOffset{Offset: 5, LeaderEpoch: -1}) {
		t.Fatalf("after a native store: %+v", o)
	}
	// Past the last message, and anything on an empty partition: refused,
	// and nothing logged.
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, bridge.CommittedOffset{Offset: 7}); !errors.Is(err, bridge.ErrOffsetNotStorable) {
		t.Fatalf("past the end: %v", err)
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 1, bridge.CommittedOffset{Offset: 1}); !errors.Is(err, bridge.ErrOffsetNotStorable) {
		t.Fatalf("empty partition: %v", err)
	}
	if o, _, _ := s.FetchOffset(ctx, e.stream, "g", "t", 0); o.Offset != 5 {
		t.Fatalf("after refused commits: %+v", o)
	}
	// 0 deletes the native offset and reads back as 0, with its metadata,
	// on an empty partition too.
	zero := bridge.CommittedOffset{Offset: 0, LeaderEpoch: -1, Metadata: "from the start", CommitTime: 5}
	for range 2 {
		if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, zero); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 1, zero); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Client().GetConsumerOffset(ctx, ref); err != nil || ok {
		t.Fatalf("native offset after commit 0: %v %v", ok, err)
	}
	for _, part := range []int32{0, 1} {
		if o, ok, err := s.FetchOffset(ctx, e.stream, "g", "t", part); err != nil || !ok || o != zero {
			t.Fatalf("partition %d after commit 0: %+v %v %v", part, o, ok, err)
		}
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "nope", 0, bridge.CommittedOffset{Offset: 1}); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "nope", 0, zero); !errors.Is(err, bridge.ErrTopicNotFound) {
		t.Fatalf("unknown topic, commit 0: %v", err)
	}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 2, zero); !errors.Is(err, bridge.ErrPartitionNotFound) {
		t.Fatalf("unknown partition, commit 0: %v", err)
	}
	// Listing and deleting a group's offsets.
	two := bridge.CommittedOffset{Offset: 2, LeaderEpoch: 1, Metadata: "m2", CommitTime: 9}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, two); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOffset(ctx, e.stream, "other", "t", 0, two); err != nil {
		t.Fatal(err)
	}
	all, err := s.GroupOffsets(ctx, e.stream, "g")
	wantAll := []bridge.GroupOffset{{Topic: "t", Partition: 0, CommittedOffset: two}, {Topic: "t", Partition: 1, CommittedOffset: zero}}
	if err != nil || !slices.Equal(all, wantAll) {
		t.Fatalf("group offsets: %+v %v, want %+v", all, err, wantAll)
	}
	if gs, ok, err := s.OffsetGroups(ctx, e.stream); err != nil || !ok || !slices.Equal(gs, []string{"g", "other"}) {
		t.Fatalf("groups: %q %v %v", gs, ok, err)
	}
	if gs, _, _ := s.OffsetGroups(ctx, "elsewhere"); len(gs) != 0 {
		t.Fatalf("groups of another stream: %q", gs)
	}
	// OffsetDelete of one partition.
	if err := s.DeleteOffset(ctx, e.stream, "g", "t", 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.FetchOffset(ctx, e.stream, "g", "t", 1); ok {
		t.Fatal("deleted offset of a commit 0 still read")
	}
	if err := s.DeleteGroupOffsets(ctx, e.stream, "g"); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.GroupOffsets(ctx, e.stream, "g"); len(all) != 0 {
		t.Fatalf("after delete: %+v", all)
	}
	if _, ok, err := s.Client().GetConsumerOffset(ctx, ref); err != nil || ok {
		t.Fatalf("native offset after delete: %v %v", ok, err)
	}
	if gs, _, _ := s.OffsetGroups(ctx, e.stream); !slices.Equal(gs, []string{"other"}) {
		t.Fatalf("groups after delete: %q", gs)
	}
}

// A Store opened fresh on the same server (a restarted gateway) lists every
// group and reads every offset exactly as committed; two Stores see each
// other's commits and deletions.
func testGroupLogSharedAndReplayed(t *testing.T, e *env) {
	ctx := context.Background()
	a := e.store
	e.topic(t, "t", 3)
	for p := range int32(3) {
		e.put(t, "t", p, testBatch(t, "x", 0, 10))
	}
	commits := map[string][]bridge.GroupOffset{}
	for i, g := range []string{"g1", "g2", "g3"} {
		for p := range int32(3) {
			o := bridge.CommittedOffset{Offset: int64(i+int(p)) % 4, LeaderEpoch: int32(p), Metadata: g + "-meta", CommitTime: int64(1000 + i)}
			if err := a.CommitOffset(ctx, e.stream, g, "t", p, o); err != nil {
				t.Fatal(err)
			}
			commits[g] = append(commits[g], bridge.GroupOffset{Topic: "t", Partition: p, CommittedOffset: o})
		}
	}
	// Overwritten values: only the last counts.
	last := bridge.CommittedOffset{Offset: 9, LeaderEpoch: 3, Metadata: "last", CommitTime: 2000}
	if err := a.CommitOffset(ctx, e.stream, "g1", "t", 2, bridge.CommittedOffset{Offset: 4, Metadata: "overwritten"}); err != nil {
		t.Fatal(err)
	}
	if err := a.CommitOffset(ctx, e.stream, "g1", "t", 2, last); err != nil {
		t.Fatal(err)
	}
	commits["g1"][2].CommittedOffset = last

	b := e.another(t)
	check := func(s *Store, who string, groups []string) {
		t.Helper()
		gs, ok, err := s.OffsetGroups(ctx, e.stream)
		if err != nil || !ok || !slices.Equal(gs, groups) {
			t.Fatalf("%s: groups %q %v %v, want %q", who, gs, ok, err, groups)
		}
		for _, g := range groups {
			got, err := s.GroupOffsets(ctx, e.stream, g)
			if err != nil || !slices.Equal(got, commits[g]) {
				t.Fatalf("%s: %s offsets %+v %v, want %+v", who, g, got, err, commits[g])
			}
			for _, w := range commits[g] {
				if o, ok, err := s.FetchOffset(ctx, e.stream, g, w.Topic, w.Partition); err != nil || !ok || o != w.CommittedOffset {
					t.Fatalf("%s: fetch %s %d: %+v %v %v, want %+v", who, g, w.Partition, o, ok, err, w.CommittedOffset)
				}
			}
		}
	}
	check(b, "fresh store", []string{"g1", "g2", "g3"})
	// b's changes reach a, which has applied its own records already.
	o := bridge.CommittedOffset{Offset: 0, LeaderEpoch: -1, Metadata: "from b"}
	if err := b.CommitOffset(ctx, e.stream, "g4", "t", 1, o); err != nil {
		t.Fatal(err)
	}
	commits["g4"] = []bridge.GroupOffset{{Topic: "t", Partition: 1, CommittedOffset: o}}
	if err := b.DeleteGroupOffsets(ctx, e.stream, "g2"); err != nil {
		t.Fatal(err)
	}
	check(a, "first store", []string{"g1", "g3", "g4"})
	// And a's back to b.
	if err := a.CommitOffset(ctx, e.stream, "g3", "t", 0, last); err != nil {
		t.Fatal(err)
	}
	commits["g3"][0].CommittedOffset = last
	check(b, "second store", []string{"g1", "g3", "g4"})
}

// A commit of 0 does not outlive its topic: the record names the topic's
// id, and a topic made again under the same name has another.
func testGroupLogTopicRecreated(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	e.topic(t, "t", 1)
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, bridge.CommittedOffset{Offset: 0, LeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.FetchOffset(ctx, e.stream, "g", "t", 0); !ok {
		t.Fatal("commit 0 not read back")
	}
	e.topic(t, "u", 1)
	e.put(t, "u", 0, testBatch(t, "x", 0, 3))
	if err := s.CommitOffset(ctx, e.stream, "h", "u", 0, bridge.CommittedOffset{Offset: 2, LeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	if gs, _, err := s.OffsetGroups(ctx, e.stream); err != nil || !slices.Equal(gs, []string{"g", "h"}) {
		t.Fatalf("groups: %q %v", gs, err)
	}
	if err := s.DeleteTopic(ctx, e.stream, "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic(ctx, e.stream, "u"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.FetchOffset(ctx, e.stream, "g", "t", 0); ok || err != nil {
		t.Fatalf("offset of a deleted topic: %v %v", ok, err)
	}
	// Groups whose every record is on a deleted topic are not listed (as
	// DescribeGroups and DeleteGroups would not find them).
	if gs, _, err := s.OffsetGroups(ctx, e.stream); err != nil || len(gs) != 0 {
		t.Fatalf("groups of deleted topics: %q %v", gs, err)
	}
	e.topic(t, "t", 1)
	if _, ok, err := s.FetchOffset(ctx, e.stream, "g", "t", 0); ok || err != nil {
		t.Fatalf("offset on the topic made again: %v %v", ok, err)
	}
	if all, err := s.GroupOffsets(ctx, e.stream, "g"); len(all) != 0 || err != nil {
		t.Fatalf("group offsets on the topic made again: %+v %v", all, err)
	}
	if gs, _, err := s.OffsetGroups(ctx, e.stream); err != nil || len(gs) != 0 {
		t.Fatalf("groups on the topic made again: %q %v", gs, err)
	}
}

// Records the Store does not understand (a newer version, damage) are
// skipped; the ones after them still apply.
func testGroupLogSkipsUnknownRecords(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	e.topic(t, "t", 1)
	if _, err := s.CreateTopic(ctx, s.c.opts.StateStream, GroupOffsetTopic, 1); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{{2, 1, 'x'}, {1, 9}, {}} {
		buf := buildBatch(t, 1, 1, func(int) testMsg { return testMsg{id: [16]byte{1}, ts: 1, payload: p} })
		if _, err := s.Append(ctx, s.c.opts.StateStream, GroupOffsetTopic, 0, buf); err != nil {
			t.Fatal(err)
		}
	}
	want := bridge.CommittedOffset{Offset: 0, LeaderEpoch: -1, Metadata: "after junk"}
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, want); err != nil {
		t.Fatal(err)
	}
	fresh := e.another(t)
	if o, ok, err := fresh.FetchOffset(ctx, e.stream, "g", "t", 0); err != nil || !ok || o != want {
		t.Fatalf("after skipped records: %+v %v %v", o, ok, err)
	}
}

// CommitOffsets: one answer per entry, in order; the stored ones go to the
// log in one send and read back as committed from a fresh Store.
func testGroupOffsetsBatch(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store
	e.topic(t, "t", 2)
	e.put(t, "t", 0, testBatch(t, "x", 0, 5))
	// The log exists from an earlier commit, so its length can be read.
	if err := s.CommitOffset(ctx, e.stream, "g", "t", 0, bridge.CommittedOffset{Offset: 1, LeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Partition(ctx, s.c.opts.StateStream, GroupOffsetTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.srv == nil {
		// The real server keeps topic options: the log was made with the
		// Store's durability, so a commit's record is synced before the ack.
		tp, ok, err := s.c.GetTopic(ctx, Name(s.c.opts.StateStream), Name(GroupOffsetTopic))
		if err != nil || !ok {
			t.Fatalf("state topic: %v %v", ok, err)
		}
		if d, ok := tp.Durability(); !ok || d != *s.c.opts.Durability {
			t.Fatalf("state topic durability %+v (known %v), want %+v", d, ok, *s.c.opts.Durability)
		}
	}
	offs := []bridge.GroupOffset{
		{Topic: "t", Partition: 0, CommittedOffset: bridge.CommittedOffset{Offset: 4, LeaderEpoch: 2, Metadata: "a", CommitTime: 1}},
		{Topic: "t", Partition: 0, CommittedOffset: bridge.CommittedOffset{Offset: 9}}, // past the end
		{Topic: "nope", Partition: 0, CommittedOffset: bridge.CommittedOffset{Offset: 1}},
		{Topic: "t", Partition: 1, CommittedOffset: bridge.CommittedOffset{Offset: 0, LeaderEpoch: -1, Metadata: "b", CommitTime: 2}},
		{Topic: "t", Partition: 5, CommittedOffset: bridge.CommittedOffset{Offset: 0}},
	}
	errs := s.CommitOffsets(ctx, e.stream, "g", offs)
	wantErrs := []error{nil, bridge.ErrOffsetNotStorable, bridge.ErrTopicNotFound, nil, bridge.ErrPartitionNotFound}
	for i, w := range wantErrs {
		if (w == nil) != (errs[i] == nil) || w != nil && !errors.Is(errs[i], w) {
			t.Errorf("entry %d: %v, want %v", i, errs[i], w)
		}
	}
	after, err := s.Partition(ctx, s.c.opts.StateStream, GroupOffsetTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.Next != before.Next+2 {
		t.Errorf("log grew from %d to %d, want 2 records", before.Next, after.Next)
	}
	fresh := e.another(t)
	got, err := fresh.GroupOffsets(ctx, e.stream, "g")
	want := []bridge.GroupOffset{offs[0], offs[3]}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("read back %+v %v, want %+v", got, err, want)
	}
}

// Concurrent readers share catch-ups; each still sees every commit made
// before it asked, here another Store's.
func testGroupLogConcurrentReaders(t *testing.T, e *env) {
	ctx := context.Background()
	a := e.store
	e.topic(t, "t", 1)
	b := e.another(t)
	for round := range 5 {
		want := bridge.CommittedOffset{Offset: 0, LeaderEpoch: int32(round), Metadata: fmt.Sprint("round ", round)}
		if err := b.CommitOffset(ctx, e.stream, "g", "t", 0, want); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, ok, err := a.FetchOffset(ctx, e.stream, "g", "t", 0)
				if err != nil || !ok || o != want {
					errs <- fmt.Errorf("round %d: %+v %v %v, want %+v", round, o, ok, err, want)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// TestGroupOffsets runs the group offset scenarios above on both servers,
// each a subtest of its own.
func TestGroupOffsets(t *testing.T) {
	t.Parallel()
	eachScenario(t,
		serverScenario{"Keying", testGroupOffsetsKeying},
		serverScenario{"LogSharedAndReplayed", testGroupLogSharedAndReplayed},
		serverScenario{"LogTopicRecreated", testGroupLogTopicRecreated},
		serverScenario{"LogSkipsUnknownRecords", testGroupLogSkipsUnknownRecords},
		serverScenario{"Batch", testGroupOffsetsBatch},
		serverScenario{"LogConcurrentReaders", testGroupLogConcurrentReaders},
	)
}
