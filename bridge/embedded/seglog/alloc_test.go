package seglog

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
)

// TestSteadyStateAllocs: on OS files, an Append (pwritev of a stamped
// header copy and the caller's frames), a WaitSynced of a lone writer and
// a Read of 64 KiB (one pread into a pooled buffer) allocate nothing once
// warm.
func TestSteadyStateAllocs(t *testing.T) {
	// Not parallel: it counts allocations (AllocsPerRun).
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	l, err := Open(Config{FS: vfs.Default, Dir: t.TempDir() + "/p", Direct: true, VisibleOnSync: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := makeBatch(t, "x", 10, 1, 100)
	v, err := bridge.VerifyIggyBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	add := func() {
		if _, end, err = l.Append(ctx, b, v, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2000; i++ {
		add()
	}
	if err := l.WaitSynced(ctx, end); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(500, add); a != 0 {
		t.Errorf("Append: %v allocs", a)
	}
	if a := testing.AllocsPerRun(20, func() {
		add()
		if err := l.WaitSynced(ctx, end); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Append+WaitSynced: %v allocs", a)
	}
	n, i := 0, uint64(0)
	fn := func(b []byte) bool { n += len(b); return true }
	read := func() {
		i += 7919
		if err := l.Read(i%l.Next(), 64<<10, fn); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 10; k++ {
		read()
	}
	if a := testing.AllocsPerRun(500, read); a != 0 {
		t.Errorf("Read: %v allocs", a)
	}
}
