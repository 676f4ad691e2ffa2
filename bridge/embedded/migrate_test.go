package embedded

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/iggy-kafka/gateway/bridge"
)

// oldBatch is a batch as the store kept it before the segment logs: one
// pebble value under a 'd' key, stamped.
type oldBatch struct {
	part  uint32
	base  uint64
	batch []byte
}

// writeOldData writes batches under 'd' keys (and log starts under 'l'
// keys) straight into the store's pebble, the layout of versions before
// the segment logs. The store must be closed.
func writeOldData(t *testing.T, dir string, id uint32, batches []oldBatch, starts map[uint32]uint64) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{l: quietLogger(), h: newHealthState(quietLogger())}})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	for _, ob := range batches {
		_ = b.Set(dataKey(id, ob.part, ob.base), ob.batch, nil)
	}
	for part, start := range starts {
		_ = b.Set(logStartKey(id, part), be.AppendUint64(nil, start), nil)
	}
	if err := db.Apply(b, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// oldBatches stamps n batches of 3 messages for a partition, tagged
// "<tag><i>", from offset 0.
func oldBatches(t *testing.T, part uint32, tag string, n int) []oldBatch {
	var out []oldBatch
	for i := 0; i < n; i++ {
		b := makeBatch(t, fmt.Sprint(tag, i), 3, 1000+uint64(i))
		bridge.StampIggyBatch(b, uint64(part), uint64(3*i), 5_000_000+uint64(i))
		out = append(out, oldBatch{part, uint64(3 * i), b})
	}
	return out
}

// countDataKeys counts the 'd' keys left in pebble.
func countDataKeys(t *testing.T, s *Store) int {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixData}, UpperBound: []byte{prefixData + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

// TestMigrateFromPebble: a data directory whose batches are in pebble
// ('d' keys) is upgraded at Open: every batch moves into its partition's
// segment log as it was (offsets, stamps, bytes), below-start batches
// stay gone, the keys are deleted, appends continue the offsets; an Open
// that finds both (a crash before the keys were deleted) moves nothing
// twice.
func TestMigrateFromPebble(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, dir, SyncAlways)
	info, err := s.CreateTopicWithConfigs(ctx, "kafka", "t", 3, bridge.TopicConfigs{"segment.bytes": "2000"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	old := append(oldBatches(t, 0, "a", 20), oldBatches(t, 1, "b", 5)...)
	// Partition 1's start is 7: [0,3) and [3,6) are gone, [6,9) straddles.
	writeOldData(t, dir, info.ID, old, map[uint32]uint64{1: 7})

	check := func(s *Store) {
		t.Helper()
		wantState(t, s, "t", 0, bridge.PartitionState{Earliest: 0, Next: 60})
		wantState(t, s, "t", 1, bridge.PartitionState{Earliest: 7, Next: 15})
		wantState(t, s, "t", 2, bridge.PartitionState{})
		if n := countDataKeys(t, s); n != 0 {
			t.Fatalf("%d 'd' keys left after the upgrade", n)
		}
		var got [][]byte
		for _, p := range []int32{0, 1} {
			if err := s.Poll(ctx, "kafka", "t", p, 0, 1<<30, func(b []byte) bool {
				got = append(got, append([]byte(nil), b...))
				return true
			}); err != nil {
				t.Fatal(err)
			}
		}
		want := append(append([]oldBatch(nil), old[:20]...), old[22:]...)
		if len(got) != len(want) {
			t.Fatalf("%d batches after the upgrade, want %d", len(got), len(want))
		}
		for i := range got {
			if string(got[i]) != string(want[i].batch) {
				t.Fatalf("batch %d differs after the upgrade", i)
			}
		}
		if m := pollAll(t, s, "t", 1, 7); m[0].offset != 7 || m[0].payload != "b2-1" {
			t.Fatalf("partition 1 from its start: %v", m[0])
		}
	}
	s = openStore(t, dir, SyncAlways)
	check(s)
	if n := len(segmentFiles(t, dir, info.ID, 0)); n < 5 {
		t.Fatalf("%d segments at 2000 bytes each", n)
	}
	if base, err := s.Append(ctx, "kafka", "t", 1, makeBatch(t, "new", 1, 1)); err != nil || base != 15 {
		t.Fatalf("append after the upgrade: %d %v", base, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash after the logs were synced but before the keys went.
	writeOldData(t, dir, info.ID, old, nil)
	s = openStore(t, dir, SyncAlways)
	defer s.Close()
	wantState(t, s, "t", 1, bridge.PartitionState{Earliest: 7, Next: 16})
	if n := countDataKeys(t, s); n != 0 {
		t.Fatalf("%d 'd' keys left after the second upgrade", n)
	}
	if got := pollAll(t, s, "t", 0, 0); len(got) != 60 {
		t.Fatalf("partition 0 holds %d messages after a repeated upgrade", len(got))
	}
}

// untar extracts a testdata tarball into a fresh directory.
func untar(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(out, filepath.Clean(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrateOldDataDir opens data directories written by the store
// before the segment logs (testdata/pebble-v0-gen.go.txt made them: one
// closed cleanly, one copied as a kill -9 leaves it, its batches only in
// pebble's WAL): every batch, log start and committed offset is there
// after the upgrade, a deleted topic stays deleted, and a second Open
// finds nothing left to move.
func TestMigrateOldDataDir(t *testing.T) {
	t.Parallel()
	root := untar(t, "pebble-v0.tar.gz")
	for _, name := range []string{"clean", "killed"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			for open := 0; open < 2; open++ {
				s := openStore(t, dir, SyncAlways)
				var want []polled
				next := uint64(0)
				for i := 0; i < 30; i++ {
					for j := 0; j < 1+i%4; j++ {
						want = append(want, polled{next, fmt.Sprintf("a%d-%d", i, j)})
						next++
					}
				}
				if got := pollAll(t, s, "old", 0, 0); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("open %d: partition 0 holds %v", open, got)
				}
				wantState(t, s, "old", 1, bridge.PartitionState{Earliest: 7, Next: 18})
				if got := pollAll(t, s, "old", 1, 7); len(got) != 11 || got[0].payload != "b2-1" {
					t.Fatalf("open %d: partition 1 from its start: %v", open, got)
				}
				if _, err := s.Topic(ctx, "kafka", "gone"); err == nil {
					t.Fatal("a deleted topic came back")
				}
				if o, ok, err := s.FetchOffset(ctx, "kafka", "g", "old", 0); err != nil || !ok || o.Offset != 42 {
					t.Fatalf("committed offset: %+v %v %v", o, ok, err)
				}
				if n := countDataKeys(t, s); n != 0 {
					t.Fatalf("%d 'd' keys left", n)
				}
				if open == 1 {
					if base, err := s.Append(ctx, "kafka", "old", 0, makeBatch(t, "new", 1, 1)); err != nil || base != next {
						t.Fatalf("append after the upgrade: %d %v", base, err)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
